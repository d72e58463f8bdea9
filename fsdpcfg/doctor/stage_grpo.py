"""Stage 4, ``grpo``: online GRPO optimizer steps with the recipe's rollout adapter, inside the torchrun worker.

The native loop's :class:`fsdpcfg.train.loop.Trainer` is built from the smoke config
(:func:`fsdpcfg.doctor.smoke.grpo_config`) and runs its steps; each step starts with a weight synchronisation,
so step 2 is the second synchronisation: the replica reloads weights after its post-processing of the first.
The doctor wraps ``sync_weights`` to fingerprint the replica after each synchronisation.
"""

from __future__ import annotations

import math
import time
from unittest import mock

from fsdpcfg.doctor.boundaries import STATE, TRANSFER, failure_from_exception
from fsdpcfg.doctor.report import FAIL, PASS, StageResult


def fingerprint(model) -> float:
    """sum |p| over the rollout replica's parameters (fp64): differs when a synchronisation changed a weight."""
    import torch

    with torch.no_grad():
        return float(sum(p.double().abs().sum() for p in model.parameters()))


def run_grpo(cfg: dict, variant: str, steps: int = 2):
    """Build the GRPO trainer of ``cfg`` and run ``steps`` steps (collective).

    Returns:
        ``(result, trainer)``; ``trainer`` is ``None`` when the stage failed (stage 5 then does not run).
    """
    from fsdpcfg.schema import parse_run_config
    from fsdpcfg.train.loop import Trainer

    t = time.perf_counter()
    data: dict = {"steps": [], "replica_fingerprints": []}
    try:
        trainer = Trainer(parse_run_config(cfg))
        sync = trainer.sync_weights

        def fingerprinted_sync() -> int:
            n = sync()
            data["replica_fingerprints"].append(fingerprint(trainer.rollout.model))
            data.setdefault("tensors_per_sync", []).append(n)
            return n

        with mock.patch.object(trainer, "sync_weights", fingerprinted_sync):  # restored on the way out
            for step in range(1, steps + 1):
                m = trainer.step(step)
                data["steps"].append(
                    {
                        k: m[k]
                        for k in ("critic/score/mean", "actor/pg_loss", "actor/grad_norm", "response_length/mean")
                        if k in m
                    }
                )
    except Exception as e:
        return StageResult(
            4, variant, FAIL, time.perf_counter() - t, "", failure=failure_from_exception(e, STATE), data=data
        ), None
    seconds = time.perf_counter() - t
    fps = data["replica_fingerprints"]
    data["replica_moved"] = len(fps) > 1 and fps[-1] != fps[0]
    norms = [s.get("actor/grad_norm", 0.0) for s in data["steps"]]
    detail = (
        f"{steps} optimizer steps, {len(fps)} syncs ({data['tensors_per_sync'][-1]} tensors), score "
        f"{', '.join(format(s.get('critic/score/mean', 0.0), '.2f') for s in data['steps'])}, grad norm "
        f"{', '.join(f'{g:.3g}' for g in norms)}, replica "
        + ("changed between syncs" if data["replica_moved"] else "unchanged between syncs")
    )
    if not all(math.isfinite(g) for g in norms) or not any(g > 0 for g in norms):
        return StageResult.failed(
            4,
            variant,
            seconds,
            detail,
            STATE,
            f"the GRPO steps gave {'no' if all(math.isfinite(g) for g in norms) else 'a non-finite'} "
            f"gradient: {detail}",
            "check actor_rollout_ref.actor.fsdp_config dtypes, the learning rate and "
            "that the trainable parameters are the sharded ones",
            data,
        ), None
    if norms[0] > 0 and not data["replica_moved"]:
        return StageResult.failed(
            4,
            variant,
            seconds,
            detail,
            TRANSFER,
            "the second synchronisation left the rollout replica unchanged although the actor took an "
            "optimizer step with a non-zero gradient",
            "the replica must reload weights after its post-processing: check that update_weights copies into the "
            "tensors generate() reads (not into stale copies)",
            data,
        ), None
    return StageResult(4, variant, PASS, seconds, detail, data=data), trainer
