"""Stage 3, ``sft``: the FSDP/FSDP2 SFT smoke path, inside the doctor's torchrun worker.

It runs the native SFT trainer (:class:`fsdpcfg.train.sft.trainer.SFTTrainer`, verl's sft_trainer_engine loss
and masking) on the config from :func:`fsdpcfg.doctor.smoke.sft_config`: build (load, shard), then a couple of
optimizer steps. It passes when every step's loss and gradient norm are finite, the gradient is not zero and the
sharded parameters moved.
"""

from __future__ import annotations

import math
import time

from fsdpcfg.doctor.boundaries import STATE, failure_from_exception
from fsdpcfg.doctor.report import FAIL, PASS, StageResult

SFT_PATH = "fsdpcfg.train.sft.SFTTrainer (native SFT trainer: verl sft_trainer_engine loss and masking)"


def _local_norm(module) -> float:
    """Sum over this rank's parameter shards of |p| (fp64): changes when an optimizer step changed anything."""
    import torch
    from torch.distributed.tensor import DTensor

    with torch.no_grad():
        return float(
            sum((p.to_local() if isinstance(p, DTensor) else p).double().abs().sum() for p in module.parameters())
        )


def run_sft(cfg: dict, variant: str, steps: int = 2) -> StageResult:
    """Build the SFT trainer of ``cfg`` and run ``steps`` optimizer steps (collective: every rank calls it).

    Returns:
        ``pass`` with the losses; ``FAIL`` owned by the boundary the error's traceback points at (default
        ``training-state names``), or a non-finite / zero-gradient step.
    """
    import torch
    import torch.distributed as dist

    from fsdpcfg.schema import parse_sft_config
    from fsdpcfg.train.loop import collective_device
    from fsdpcfg.train.sft.trainer import SFTTrainer

    t = time.perf_counter()
    data: dict = {"losses": [], "grad_norms": []}
    try:
        trainer = SFTTrainer(parse_sft_config(cfg))
        before = _local_norm(trainer.model)
        for step in range(1, steps + 1):
            m = trainer.step(step)
            data["losses"].append(m["train/loss"])
            data["grad_norms"].append(m["train/grad_norm"])
        moved = torch.tensor(
            [abs(_local_norm(trainer.model) - before)], dtype=torch.float64, device=collective_device()
        )
        dist.all_reduce(moved)
        data["param_change"] = float(moved)
        del trainer
    except Exception as e:
        return StageResult(
            3, variant, FAIL, time.perf_counter() - t, "", failure=failure_from_exception(e, STATE), data=data
        )
    seconds = time.perf_counter() - t
    detail = (
        f"{steps} steps, loss {' -> '.join(f'{x:.3f}' for x in data['losses'])}, grad norm "
        f"{' -> '.join(f'{x:.3g}' for x in data['grad_norms'])}"
    )
    bad = [x for x in data["losses"] + data["grad_norms"] if not math.isfinite(x)]
    if bad or not any(g > 0 for g in data["grad_norms"]) or data["param_change"] == 0.0:
        why = (
            "non-finite loss or gradient norm"
            if bad
            else "zero gradient"
            if not any(data["grad_norms"])
            else "the parameters did not change"
        )
        return StageResult.failed(
            3,
            variant,
            seconds,
            detail,
            STATE,
            f"SFT steps ran but {why}: {detail}",
            "check the model's dtype settings (engine dtype/model_dtype) and that the trainable parameters are "
            "the sharded ones (LoRA target_modules)",
            data,
        )
    return StageResult(3, variant, PASS, seconds, detail, data=data)
