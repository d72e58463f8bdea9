"""The torchrun worker of the GPU check's GRPO parts (benchmarks/gpu_check.py): one rank builds the native
trainer from a resolved config, runs its steps recording ``torch.cuda.max_memory_allocated`` per phase, and compares
actor and rollout-replica log-probs after the first two weight synchronisations.

    python -m torch.distributed.run --standalone --nproc_per_node 1 benchmarks/gpu_check_worker.py CONFIG OUT.json
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path


class _NoCudaMemory:
    """``torch.cuda``'s memory calls on the CPU smoke run: nothing to measure (0 bytes)."""

    def reset_peak_memory_stats(self) -> None:
        return None

    def synchronize(self) -> None:
        return None

    def max_memory_allocated(self) -> int:
        return 0


def worker(config_path: str, out_path: str) -> None:
    """One rank: build the trainer, run its steps recording CUDA memory per phase, probe log-probs after the first
    two weight synchronisations."""
    import torch
    import yaml

    import fsdpcfg.train.loop as loop
    from fsdpcfg.train.engine.forward import response_log_probs
    from fsdpcfg.train.rollout.hf import GenerationSettings

    cfg = yaml.safe_load(Path(config_path).read_text())
    cuda = torch.cuda.is_available() and cfg["trainer"]["device"] == "cuda"
    mem = torch.cuda if cuda else _NoCudaMemory()
    mem.reset_peak_memory_stats()
    from fsdpcfg.schema import parse_config

    trainer = loop.Trainer(parse_config(cfg))
    peaks = {"build": mem.max_memory_allocated()}
    overall = peaks["build"]
    probes: list[dict] = []
    probe_batch = trainer.dataset.batch(list(range(4)))
    greedy = GenerationSettings(
        n=1, response_length=32, temperature=1.0, top_p=1.0, top_k=-1, do_sample=False, ignore_eos=False
    )

    def measured(fn, label):
        def inner(*a, **k):
            nonlocal overall
            mem.synchronize()
            mem.reset_peak_memory_stats()
            out = fn(*a, **k)
            mem.synchronize()
            peak = mem.max_memory_allocated()
            peaks[label] = max(peaks.get(label, 0), peak)
            overall = max(overall, peak)
            return out

        return inner

    sync = measured(trainer.sync_weights, "weight_sync")

    def sync_and_probe():
        n = sync()
        if len(probes) < 2:  # after the first and the second synchronisation
            t = time.perf_counter()
            o = trainer.rollout.generate(probe_batch.input_ids, probe_batch.attention_mask, greedy)
            ids, mask = o.input_ids.to(trainer.device), o.attention_mask.to(trainer.device)
            R = o.responses.shape[1]
            actor_lp = loop.batched_log_probs(trainer.actor, ids, mask, R, 4).float().cpu()
            with torch.no_grad():
                replica_lp, _ = response_log_probs(trainer.rollout.model, ids, mask, R)
            m = o.response_mask.bool()
            d = (actor_lp - replica_lp.float().cpu())[m].abs()
            # how far the actor moved since the previous probe, on the same sequences when greedy decoding gave
            # the same ones: the second probe then shows the optimizer step was synchronised, not a stale replica
            prev = probes[-1] if probes else None
            moved = (
                float((actor_lp - prev["_lp"])[m].abs().max())
                if prev is not None and torch.equal(prev["_ids"], o.input_ids)
                else None
            )
            probes.append(
                {
                    "sync": len(probes) + 1,
                    "tokens": int(m.sum()),
                    "max_abs_diff": float(d.max()),
                    "mean_abs_diff": float(d.mean()),
                    "max_abs_logprob": float(actor_lp[m].abs().max()),
                    "moved_since_previous": moved,
                    "seconds": round(time.perf_counter() - t, 3),
                    "_lp": actor_lp,
                    "_ids": o.input_ids,
                }
            )
        return n

    trainer.sync_weights = sync_and_probe
    trainer.rollout.generate = measured(trainer.rollout.generate, "generate")
    loop.batched_log_probs = measured(loop.batched_log_probs, "log_probs")
    loop.update_actor = measured(loop.update_actor, "update")
    steps = []
    for step in range(1, trainer.total_steps + 1):
        steps.append(trainer.step(step))
    for pr in probes:
        del pr["_lp"], pr["_ids"]
    rec = {
        "device": torch.cuda.get_device_name(0) if cuda else "cpu",
        "steps": steps,
        "phase_peaks": peaks,
        "max_allocated": overall,
        "probes": probes,
        "use_reference": trainer.ref is not None,
        "strategy": trainer.plan.strategy,
        "param_dtype": str(next(trainer.rollout.model.parameters()).dtype),
    }
    Path(out_path).write_text(json.dumps(rec, default=float))
    import torch.distributed as dist

    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    worker(sys.argv[1], sys.argv[2])
