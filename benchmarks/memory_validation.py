"""The plan stage's memory estimate (``fsdpcfg.estimate.memory``) against the measured peak memory of the native
engine on this CPU machine, per rank.

    python benchmarks/memory_validation.py [--models tiny-qwen2,qwen2-100m] [--steps 2] [--write]

For each model, ``+recipe=qwen_grpo`` with that model runs ``--steps`` training steps under ``torchrun
--nproc_per_node=2`` (this script is also the worker). Each rank records its resident set size after importing
torch, transformers and the engine (the baseline), and its RSS high-water mark (``getrusage(RUSAGE_SELF).ru_maxrss``)
after each phase: build (models loaded and sharded), then per step the weight sync, generation, old and
reference log-probs and the actor update. Measured peak = high-water mark - baseline, the largest over ranks.
The prediction is :func:`fsdpcfg.estimate.memory.estimate_memory` on the same resolved config (per-rank peak of the
host memory the run allocates). ``--write`` records the table in benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from fsdpcfg.launch.torchrun import torchrun_argv  # noqa: E402 (the repository root is put on sys.path above)

GIB = 2**30


def _rss_bytes() -> int:
    """Current resident set size of this process, bytes (``/proc/self/statm``)."""
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _maxrss_bytes() -> int:
    """RSS high-water mark of this process so far, bytes (Linux reports KiB)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def resolved_config(model: str, steps: int, run_dir: Path, extra: list[str] | None = None) -> dict:
    """``+recipe=qwen_grpo`` on asset ``model`` as the native loop reads it (resolved, absolute paths)."""
    from fsdpcfg import assets
    from fsdpcfg.compose import compose
    from fsdpcfg.launch.preflight import absolutise

    path = assets.ensure(model)
    ovs = [
        "+recipe=qwen_grpo",
        f"actor_rollout_ref.model.path={path}",
        f"trainer.total_training_steps={steps}",
        "trainer.save_freq=-1",
        f"fsdpcfg.run_dir={run_dir}",
        "trainer.logger=[console]",
        f"trainer.default_local_dir={run_dir}/ckpt",
        *(extra or []),
    ]
    return absolutise(compose(ovs).to_container())


def worker(config_path: str, out_dir: str) -> None:
    """One torchrun rank: build the trainer and run its steps, recording the RSS high-water mark per phase."""
    import gc

    import torch  # noqa: F401  (the baseline includes the imports)
    import transformers  # noqa: F401
    import yaml

    import fsdpcfg.train.loop as loop
    from fsdpcfg.train.engine import forward

    gc.collect()
    baseline = _rss_bytes()
    phases: list[tuple[str, int]] = [("imports", _maxrss_bytes())]
    cfg = yaml.safe_load(Path(config_path).read_text())
    from fsdpcfg.schema import parse_config

    trainer = loop.Trainer(parse_config(cfg))
    phases.append(("build", _maxrss_bytes()))

    def wrap(obj, name, label):
        fn = getattr(obj, name)

        def inner(*a, **k):
            out = fn(*a, **k)
            phases.append((label, _maxrss_bytes()))
            return out

        setattr(obj, name, inner)

    wrap(trainer, "sync_weights", "weight_sync")
    wrap(trainer.rollout, "generate", "generate")
    wrap(loop, "batched_log_probs", "log_probs")
    wrap(loop, "update_actor", "update")
    del forward
    times = []
    for step in range(1, trainer.total_steps + 1):
        t = time.perf_counter()
        trainer.step(step)
        times.append(time.perf_counter() - t)
    rec = {"rank": trainer.rank, "baseline": baseline, "peak": _maxrss_bytes(), "phases": phases, "step_s": times}
    Path(out_dir, f"rank{trainer.rank}.json").write_text(json.dumps(rec))
    import torch.distributed as dist

    dist.barrier()
    dist.destroy_process_group()


def measure(model: str, steps: int, extra: list[str] | None = None) -> dict:
    """Run the engine on ``model`` under torchrun and return the prediction and the per-rank measurements."""
    import yaml

    from fsdpcfg.estimate.memory import estimate_memory

    with tempfile.TemporaryDirectory(prefix="fsdpcfg-mem-") as tmp:
        cfg = resolved_config(model, steps, Path(tmp) / "run", extra)
        cfg_path = Path(tmp) / "config.yaml"
        cfg_path.write_text(yaml.safe_dump(cfg, sort_keys=False))
        cmd = torchrun_argv(
            [__file__, "--worker", str(cfg_path), tmp], nproc_per_node=int(cfg["trainer"]["n_gpus_per_node"])
        )
        p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env={**os.environ, "OMP_NUM_THREADS": "1"})
        if p.returncode:
            raise SystemExit(f"torchrun failed ({p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
        ranks = [json.loads(f.read_text()) for f in sorted(Path(tmp).glob("rank*.json"))]
    est = estimate_memory(cfg)
    measured = max(r["peak"] - r["baseline"] for r in ranks)
    return {
        "model": model,
        "predicted": est.peak_bytes,
        "peak_phase": est.peak_phase,
        "measured": measured,
        "ranks": ranks,
        "estimate": est,
    }


def _phase_table(ranks: list[dict]) -> str:
    r = ranks[0]
    prev, parts = r["baseline"], []
    for name, hw in r["phases"][1:]:
        if hw > prev:
            parts.append(f"{name} {(hw - r['baseline']) / 2**20:.0f}")
            prev = hw
    return ", ".join(parts)


def main(argv: list[str] | None = None) -> int:
    """Measure each model and print (``--write``: record) predicted against measured."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="tiny-qwen2,qwen2-100m")
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--override", action="append", default=[], help="extra Hydra override (repeatable)")
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--worker", nargs=2, metavar=("CONFIG", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        worker(*args.worker)
        return 0
    rows = [
        "| model (qwen_grpo, 2 CPU ranks) | params | predicted peak MiB | measured peak MiB | error | "
        "measured high-water by phase (rank 0, MiB above baseline) |",
        "|---|---|---|---|---|---|",
    ]
    worst = 0.0
    for model in args.models.split(","):
        r = measure(model, args.steps, args.override)
        err = (r["predicted"] - r["measured"]) / r["measured"]
        worst = max(worst, abs(err))
        rows.append(
            f"| {model} | {r['estimate'].params.total / 1e6:.1f}M | {r['predicted'] / 2**20:.0f} "
            f"({r['peak_phase']}) | {r['measured'] / 2**20:.0f} | {err:+.1%} | {_phase_table(r['ranks'])} |"
        )
        print(r["estimate"].describe())
    load = os.getloadavg()
    text = "\n".join(rows) + (
        f"\n\nMeasured = per-rank RSS high-water mark (`getrusage`) minus the RSS after importing torch, "
        f"transformers and the engine, largest over the 2 ranks, {args.steps} training steps. Predicted = "
        f"`fsdpcfg.estimate.memory.estimate_memory` on the same resolved config. Largest error {worst:.1%} "
        f"(goal: within 20%). Load average {load[0]:.1f} on {os.cpu_count()} CPUs, {time.strftime('%Y-%m-%d')}. "
        f"Reproduce: `python benchmarks/memory_validation.py --write`."
    )
    print(text)
    if args.write:
        from check_latency import _write_section

        _write_section(ROOT / "benchmarks" / "RESULTS.md", "memory estimate validation (CPU)", text)
    return 0 if worst <= 0.2 else 1


if __name__ == "__main__":
    raise SystemExit(main())
