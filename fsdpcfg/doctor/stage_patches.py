"""Stage 2, ``patches``: each patch the config selects, applied to a fresh copy of the model and compared with the
unpatched model on one padded probe batch (:func:`fsdpcfg.doctor.compare.compare_patched`: forward log-probs and
backward gradients, fp32); with several patches, all of them together as well."""

from __future__ import annotations

import time

from fsdpcfg.doctor.boundaries import MODEL, Failure, failure_from_exception
from fsdpcfg.doctor.report import FAIL, PASS, SKIP, StageResult


def run_patches(cfg: dict, names: list[str] | None = None) -> StageResult:
    """Compare the patches ``names`` (default: those ``cfg`` selects, :func:`fsdpcfg.train.patches.selected`).

    Returns:
        ``skip`` when none is selected; ``pass`` with the numbers per selection; ``FAIL`` (boundary
        ``model construction``) when a patch cannot be applied or changes the numbers beyond the tolerance.
    """
    import torch

    from fsdpcfg.doctor.compare import compare_patched, probe_batch
    from fsdpcfg.train import patches
    from fsdpcfg.train.model import load_model

    t = time.perf_counter()
    names = patches.selected(cfg) if names is None else list(names)
    if not names:
        return StageResult(2, "", SKIP, time.perf_counter() - t, "no patch selected (patches=none)")
    from fsdpcfg.schema import parse_run_config

    typed = parse_run_config(cfg)
    mcfg = typed.actor_rollout_ref.model
    device = typed.trainer.device
    selections = [[n] for n in names] + ([names] if len(names) > 1 else [])
    data: dict = {}
    parts = []
    try:
        plain = load_model(mcfg, torch.float32)
        ids, mask, resp = probe_batch(plain.config.vocab_size)
        for sel in selections:
            label = "+".join(sel)
            patched = load_model(mcfg, torch.float32)
            patches.apply_patches(patched, sel, device="cpu" if device == "cpu" else device)
            cmp = compare_patched(plain, patched, ids, mask, resp)
            data[label] = {
                "max_logp_diff": cmp.max_logp_diff,
                "max_rel_grad_diff": cmp.max_rel_grad_diff,
                "missing_grads": cmp.missing_grads,
                "ok": cmp.ok,
            }
            parts.append(f"{label}: {cmp.describe()}")
            if not cmp.ok:
                failure = Failure(
                    MODEL,
                    f"patch {label} changes the model: {cmp.describe()}",
                    f"turn it off ({', '.join(patches.REGISTRY[n].config_key for n in sel)}=false) "
                    "and report the model_type; the plain model is unaffected",
                )
                return StageResult(2, "", FAIL, time.perf_counter() - t, "; ".join(parts), failure=failure, data=data)
            del patched
    except Exception as e:
        return StageResult(
            2, "", FAIL, time.perf_counter() - t, "; ".join(parts), failure=failure_from_exception(e, MODEL), data=data
        )
    return StageResult(2, "", PASS, time.perf_counter() - t, "; ".join(parts), data=data)
