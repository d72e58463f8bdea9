"""torchrun worker of test_fsdp_parity.py and tests/train/patches/test_patches_fsdp2.py: one optimizer step of the same
loss on the same data under several engine settings, each compared with the same step taken by the plain
unsharded model in this process. Writes a JSON report (rank 0).

    torchrun --nproc_per_node 2 tests/train/engine/_parity_worker.py MODEL_DIR CASES.json OUT.json

CASES.json: a list of ``{"name", "strategy", "fsdp_size", "mixed_precision", "forward_prefetch", "wrap",
"min_num_params", "patches"}``.
Each case reports its FSDP units (the cleaned names of the modules FSDP1 wrapped or FSDP2 sharded; the root is
``""``); an FSDP1 case with ``min_num_params`` also reports ``torch_units``, the units of the same model wrapped by
torch's own ``size_based_auto_wrap_policy`` with that threshold. ``tied_diff``: on a model with tied embeddings, the
largest difference between the trained ``lm_head.weight`` and ``model.embed_tokens.weight`` when they come out as
two tensors (``None``: still one). The global
batch (8 sequences, left-padded prompts + right-padded responses) is split over the ranks; the loss is the
token-mean over the whole batch of ``-advantage x log-prob`` (the shape of verl's PPO loss at ratio 1);
gradients are clipped to ``MAX_NORM`` (small, so clipping acts) before one AdamW step.
"""

import copy
import json
import sys

import torch
import torch.distributed as dist

MAX_NORM = 0.05
LR = 1e-3
P, R, B = 7, 6, 8


def batch(vocab: int):
    g = torch.Generator().manual_seed(1234)
    ids = torch.randint(3, min(vocab, 2000), (B, P + R), generator=g)
    mask = torch.ones(B, P + R, dtype=torch.long)
    for i in range(B):
        mask[i, : i % 4] = 0  # left padding of the prompt
        k = (i * 3) % 5
        if k:
            mask[i, -k:] = 0  # right padding of the response
    adv = torch.randn(B, R, generator=g)
    return ids, mask, adv


def loss_of(module, ids, mask, adv, n_tokens):
    from fsdpcfg.train.engine.forward import response_log_probs

    lp, _ = response_log_probs(module, ids, mask, R)
    rmask = mask[:, -R:].float()
    return -(lp * adv * rmask).sum() / n_tokens


def main(model_dir: str, cases_path: str, out: str) -> None:
    from fsdpcfg.train import patches
    from fsdpcfg.train.engine.fsdp import clip_grad_norm, iter_full_params, shard_from_config
    from fsdpcfg.train.model import load_model

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    from fsdpcfg.schema.actor import FSDPConfig, WrapPolicy
    from fsdpcfg.schema.model import ModelSection

    mcfg = ModelSection(path=model_dir)
    base = load_model(mcfg, torch.float32)
    ids, mask, adv = batch(base.config.vocab_size)
    n_tokens = float(mask[:, -R:].sum())
    per = B // world
    mine = slice(rank * per, (rank + 1) * per)

    ref = copy.deepcopy(base)  # the plain unsharded step on the whole batch
    ref.train()
    ref_opt = torch.optim.AdamW(ref.parameters(), lr=LR)
    ref_loss = loss_of(ref, ids, mask, adv, n_tokens)
    ref_loss.backward()
    ref_norm = float(torch.nn.utils.clip_grad_norm_(ref.parameters(), MAX_NORM))
    ref_opt.step()
    ref_after = {k: v.detach().clone() for k, v in ref.named_parameters()}
    report = {"reference": {"loss": float(ref_loss), "grad_norm": ref_norm}, "cases": {}}
    weights = {}
    for case in json.loads(open(cases_path).read()):
        model = copy.deepcopy(base)
        applied = patches.apply_patches(model, case.get("patches", []), device="cpu")
        fsdp_cfg = FSDPConfig(
            fsdp_size=case.get("fsdp_size", -1),
            model_dtype="fp32",
            dtype="float32",
            mixed_precision=case.get("mixed_precision"),
            forward_prefetch=case.get("forward_prefetch", False),
            wrap_policy=WrapPolicy(
                transformer_layer_cls_to_wrap=case.get("wrap"), min_num_params=case.get("min_num_params", 0)
            ),
        )
        module = shard_from_config(
            model, case["strategy"], fsdp_cfg, "actor_rollout_ref.actor", device=torch.device("cpu")
        )
        module.train()
        opt = torch.optim.AdamW(module.parameters(), lr=LR)
        local = loss_of(module, ids[mine], mask[mine], adv[mine], n_tokens)
        (local * world).backward()  # FSDP averages gradients over ranks: x world gives the global sum
        norm = clip_grad_norm(module, MAX_NORM)
        opt.step()
        loss = local.detach().clone()
        dist.all_reduce(loss)
        after = dict(iter_full_params(module))
        weights[case["name"]] = after
        diff = max(float((after[k].float() - v).abs().max()) for k, v in ref_after.items() if k in after)
        report["cases"][case["name"]] = {
            "loss": float(loss),
            "grad_norm": norm,
            "max_weight_diff_vs_reference": diff,
            "params_compared": sum(k in after for k in ref_after),
            "patches": applied,
            "sharding": _sharding(module),
            "units": _units(module),
            "prefetch": _prefetch(module),
            # a tied embedding streamed under two names: FSDP1 units split the tie, the copies trained apart
            "tied_diff": float((after["lm_head.weight"] - after["model.embed_tokens.weight"]).abs().max())
            if base.config.tie_word_embeddings and "lm_head.weight" in after
            else None,
        }
        if case["strategy"] == "fsdp" and case.get("min_num_params"):
            report["cases"][case["name"]]["torch_units"] = _units(_torch_size_wrapped(base, case["min_num_params"]))
    names = list(weights)
    for a in names:  # pairwise: FSDP1 vs FSDP2 under the same settings
        for b in names:
            if a < b:
                report.setdefault("pairs", {})[f"{a}|{b}"] = max(
                    float((weights[a][k].float() - weights[b][k].float()).abs().max()) for k in weights[a]
                )
    if rank == 0:
        with open(out, "w") as fh:
            json.dump(report, fh, indent=1)
    dist.barrier()
    dist.destroy_process_group()


def _prefetch(module) -> bool | dict[str, list[str]]:
    """FSDP1: the wrapper's ``forward_prefetch``; FSDP2: unit -> the units its forward prefetches (cleaned names)."""
    from torch.distributed.fsdp import FSDPModule
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

    from fsdpcfg.train.engine.fsdp import clean_name

    if isinstance(module, FSDP):
        return bool(module.forward_prefetch)
    names = {
        id(m._get_fsdp_state()): clean_name(n + ".").rstrip(".")
        for n, m in module.named_modules()
        if isinstance(m, FSDPModule)
    }
    out = {}
    for n, m in module.named_modules():
        if isinstance(m, FSDPModule):
            nxt = [names[id(s)] for s in m._get_fsdp_state()._states_to_forward_prefetch]
            if nxt:
                out[clean_name(n + ".").rstrip(".")] = nxt
    return out


def _units(module) -> list[str]:
    """The cleaned names of the FSDP units of ``module`` (FSDP1 wrappers, FSDP2 ``FSDPModule``s), sorted."""
    from torch.distributed.fsdp import FSDPModule
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

    from fsdpcfg.train.engine.fsdp import clean_name

    units = (n for n, m in module.named_modules() if isinstance(m, (FSDP, FSDPModule)))
    return sorted(clean_name(n + ".").rstrip(".") for n in units)


def _torch_size_wrapped(base, min_num_params: int):
    """A copy of ``base`` wrapped by FSDP1 with torch's ``size_based_auto_wrap_policy`` alone (the expectation)."""
    import functools

    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    from torch.distributed.fsdp.wrap import size_based_auto_wrap_policy

    policy = functools.partial(size_based_auto_wrap_policy, min_num_params=min_num_params)
    return FSDP(copy.deepcopy(base), auto_wrap_policy=policy, device_id=torch.device("cpu"), use_orig_params=False)


def _sharding(module) -> str:
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

    if isinstance(module, FSDP):
        return str(module.sharding_strategy).split(".")[-1]
    from torch.distributed.tensor import DTensor

    p = next(module.parameters())
    if not isinstance(p, DTensor):
        return "none"
    return f"mesh {tuple(p.device_mesh.shape)} " + ",".join(str(pl) for pl in p.placements)


if __name__ == "__main__":
    main(*sys.argv[1:4])
