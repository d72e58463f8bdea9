"""The doctor's torchrun worker: stages 3-5 for every engine variant, in one launch (torchrun's start-up is paid
once).

    python -m torch.distributed.run --standalone --nproc_per_node 2 -m fsdpcfg.doctor.worker SPEC.json

``SPEC.json`` (written by :mod:`fsdpcfg.doctor.runner`): ``{"device", "backend", "out", "sft": [{"variant",
"cfg"}], "grpo": [{"variant", "cfg"}]}``. Order: stage 3 for every SFT variant, then stage 4 and stage 5 for each
GRPO variant (stage 5 needs stage 4's trainer). Each rank appends JSON lines to ``<out>/rank<r>.jsonl``: a
``start`` event before a stage and a ``result`` event after it, so the runner knows which stage a crash or a
timeout interrupted. The first failure ends the process with exit code 3 right after it is written (torchrun then
stops the other ranks, which may be waiting in a collective).
"""

from __future__ import annotations

import gc
import json
import os
import sys
from pathlib import Path

EXIT_STAGE_FAILED = 3


class _Log:
    def __init__(self, out: Path, rank: int) -> None:
        self.path = out / f"rank{rank}.jsonl"

    def write(self, event: dict) -> None:
        with self.path.open("a") as f:
            f.write(json.dumps(event) + "\n")
            f.flush()
            os.fsync(f.fileno())


def _finish(log: _Log, result) -> None:
    log.write({"event": "result", **result.to_json()})
    if result.status == "FAIL":
        from fsdpcfg.train.entry import exit_rank

        exit_rank(EXIT_STAGE_FAILED)


def main(spec_path: str) -> int:
    """Run the stages of ``spec_path`` on this rank; return 0 when every stage passed."""
    from fsdpcfg.launch.signals import die_with_parent

    die_with_parent()  # the doctor's torchrun starts ranks in sessions of their own
    import torch.distributed as dist
    from transformers.utils import logging as hf_logging

    from fsdpcfg.doctor.stage_grpo import run_grpo
    from fsdpcfg.doctor.stage_match import run_match
    from fsdpcfg.doctor.stage_sft import run_sft
    from fsdpcfg.train.base import init_distributed

    hf_logging.set_verbosity_error()
    spec = json.loads(Path(spec_path).read_text())
    init_distributed(spec["device"], spec["backend"])
    log = _Log(Path(spec["out"]), dist.get_rank())
    for item in spec["sft"]:
        log.write({"event": "start", "stage": 3, "variant": item["variant"]})
        _finish(log, run_sft(item["cfg"], item["variant"]))
        gc.collect()
    for item in spec["grpo"]:
        log.write({"event": "start", "stage": 4, "variant": item["variant"]})
        result, trainer = run_grpo(item["cfg"], item["variant"])
        _finish(log, result)
        log.write({"event": "start", "stage": 5, "variant": item["variant"]})
        _finish(log, run_match(trainer, item["cfg"], item["variant"]))
        del trainer
        gc.collect()
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    from fsdpcfg.train.entry import exit_rank

    exit_rank(main(sys.argv[1]))
