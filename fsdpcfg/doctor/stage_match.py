"""Stage 5, ``match``: after the GRPO steps, (a) synchronise once more and compare the actor's token log-probs
with the rollout replica's on freshly generated responses; (b) save a checkpoint, reload its Hugging Face folder
with ``from_pretrained`` (no missing or unexpected keys allowed) and compare its log-probs with the actor's, and
restore the optimizer and scheduler state from it (the optimizer state must come back unchanged).

Tolerances: :func:`fsdpcfg.doctor.compare.logp_tolerance` of the dtypes involved (fp32 everywhere: 5e-5 nats).
"""

from __future__ import annotations

import time
from pathlib import Path

from fsdpcfg.doctor.boundaries import ROLLOUT, STATE, failure_from_exception
from fsdpcfg.doctor.report import FAIL, PASS, StageResult


def _all_max(x: float) -> float:
    import torch
    import torch.distributed as dist

    from fsdpcfg.train.loop import collective_device

    t = torch.tensor([x], dtype=torch.float64, device=collective_device())
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return float(t)


def _optimizer_sums(optimizer) -> list[float]:
    """This rank's optimizer state as one fp64 sum per state tensor, in a fixed order."""
    from torch.distributed.tensor import DTensor

    out = []
    for group in optimizer.param_groups:
        for p in group["params"]:
            for _k, v in sorted(optimizer.state.get(p, {}).items()):
                if hasattr(v, "double"):
                    v = v.to_local() if isinstance(v, DTensor) else v
                    out.append(float(v.double().sum()))
    return out


def _reload(folder: Path, model_cfg: dict, dtype):
    """``from_pretrained`` of a checkpoint folder with the run's remote-code settings; returns (model, loading info)."""
    from fsdpcfg.train.model import auto_class_for, load_hf_config

    trust = bool(model_cfg["trust_remote_code"])
    config = load_hf_config(str(folder), trust)
    model, info = auto_class_for(config).from_pretrained(
        str(folder), config=config, trust_remote_code=trust, dtype=dtype, output_loading_info=True
    )
    model.config.use_cache = False
    return model.eval(), info


def run_match(trainer, cfg: dict, variant: str, step: int = 2) -> StageResult:
    """Compare actor and rollout log-probs after a synchronisation, then save/reload/compare a checkpoint
    (collective). ``trainer`` is the :class:`fsdpcfg.train.loop.Trainer` stage 4 left after ``step`` steps."""
    import torch
    import torch.distributed as dist

    from fsdpcfg.doctor.compare import logp_tolerance, max_masked_diff
    from fsdpcfg.train import checkpoint as ckpt
    from fsdpcfg.train.engine.forward import batched_log_probs, response_log_probs
    from fsdpcfg.train.engine.fsdp import Precision

    t = time.perf_counter()
    data: dict = {}
    phase = ROLLOUT
    try:
        trainer.sync_weights()
        rank, world = dist.get_rank(), dist.get_world_size()
        n = len(trainer.dataset)
        prompts = trainer.dataset.batch([(2 * rank) % n, (2 * rank + 1) % n])
        gen = trainer.gen
        out = trainer.rollout.generate(prompts.input_ids, prompts.attention_mask, gen, generator_seed=1000 + rank)
        ids, amask = out.input_ids.to(trainer.device), out.attention_mask.to(trainer.device)
        R = out.responses.shape[1]
        actor_lp = batched_log_probs(trainer.actor, ids, amask, R, 2, temperature=gen.temperature).cpu()
        with torch.no_grad():
            rollout_lp, _ = response_log_probs(trainer.rollout.model, ids, amask, R, temperature=gen.temperature)
        actor_dtype = Precision.from_fsdp_config(trainer.actor_cfg.fsdp_config).param
        tol = logp_tolerance(actor_dtype, trainer.rollout.dtype)
        diff = _all_max(max_masked_diff(actor_lp, rollout_lp.cpu(), out.response_mask))
        data.update(rollout_max_abs_diff=diff, tolerance=tol, response_tokens=int(out.response_mask.sum()))
        if diff > tol:
            return StageResult.failed(
                5,
                variant,
                time.perf_counter() - t,
                f"actor vs rollout log-prob diff {diff:.2e}",
                ROLLOUT,
                f"after synchronisation the rollout's token log-probs differ from the "
                f"actor's by {diff:.3g} nats (tolerance {tol:.0e}) on the same tokens",
                "the weights arrived but the replica computes differently: check its "
                "post-processing (tied embeddings, rotary buffers), actor_rollout_ref.rollout.dtype "
                "and the patches (the replica runs unpatched)",
                data,
            )
        phase = STATE
        opt_before = _optimizer_sums(trainer.optimizer)
        trainer.save(step)
        folder = Path(cfg["trainer"]["default_local_dir"]) / f"global_step_{step}"
        dist.barrier()
        master = next(iter(trainer.actor.parameters())).dtype
        reloaded, info = _reload(folder, cfg["actor_rollout_ref"]["model"], master)
        bad_keys = {k: sorted(v)[:5] for k, v in info.items() if k in ("missing_keys", "unexpected_keys") and v}
        with torch.no_grad():
            re_lp, _ = response_log_probs(reloaded, ids.cpu(), amask.cpu(), R, temperature=gen.temperature)
        ck_tol = logp_tolerance(actor_dtype, master)
        ck_diff = _all_max(max_masked_diff(actor_lp, re_lp, out.response_mask))
        ckpt.load_checkpoint(folder, trainer.actor, trainer.optimizer, trainer.scheduler)
        opt_after = _optimizer_sums(trainer.optimizer)
        opt_same = len(opt_before) == len(opt_after) and all(a == b for a, b in zip(opt_before, opt_after, strict=True))
        opt_same = _all_max(0.0 if opt_same else 1.0) == 0.0
        data.update(
            checkpoint=str(folder),
            checkpoint_max_abs_diff=ck_diff,
            checkpoint_tolerance=ck_tol,
            bad_keys=bad_keys,
            optimizer_state_restored=opt_same,
            world=world,
        )
    except Exception as e:
        return StageResult(
            5, variant, FAIL, time.perf_counter() - t, "", failure=failure_from_exception(e, phase), data=data
        )
    seconds = time.perf_counter() - t
    detail = (
        f"actor vs rollout {data['rollout_max_abs_diff']:.1e} (tol {data['tolerance']:.0e}); checkpoint "
        f"reload {ck_diff:.1e}, keys {'ok' if not bad_keys else bad_keys}, optimizer state "
        f"{'restored' if opt_same else 'differs'}"
    )
    if bad_keys or ck_diff > ck_tol or not opt_same:
        what = (
            f"the checkpoint's weights do not match the model's names: {bad_keys}"
            if bad_keys
            else f"the reloaded checkpoint's log-probs differ from the actor's by {ck_diff:.3g}"
            if ck_diff > ck_tol
            else "the optimizer state read back from the checkpoint differs from the one saved"
        )
        return StageResult.failed(
            5,
            variant,
            seconds,
            detail,
            STATE,
            what,
            "compare the checkpoint's model.safetensors keys with a fresh model's state_dict(); "
            "wrapper prefixes (_fsdp_wrapped_module., base_model.model.) and tied weights are the usual "
            "suspects",
            data,
        )
    return StageResult(5, variant, PASS, seconds, detail, data=data)
