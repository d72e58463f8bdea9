"""Weight synchronisation into the rollout replica: the engine's bucketed per-tensor stream
(``fsdpcfg.train.engine.fsdp.bucketed(iter_full_params(...))`` into ``HFRollout.update_weights``) against gathering
a full state dict first (every ``full_tensor()`` at once, then one load), on the ~100M Qwen2 asset.

    python benchmarks/weight_sync.py [--model qwen2-100m] [--bucket-mb 64] [--repeats 3] [--write]

Both run in the same 2-rank torchrun job (FSDP2 over gloo, fp32), each rank measuring its own extra memory: the
peak RSS during a sync (``VmHWM`` after resetting it through
``/proc/self/clear_refs``) minus the RSS just before it. Each mode runs in a fresh child
process per repeat, so one mode's high-water mark cannot hide the other's. Goal: the stream's extra memory is at
most one bucket plus the largest tensor. ``--write`` records the table in benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from fsdpcfg.launch.torchrun import torchrun_argv  # noqa: E402 (the repository root is put on sys.path above)

MIB = 2**20


def worker(model_path: str, mode: str, bucket_mb: float, out: str) -> None:
    """One rank: shard the model, build the replica, run one sync in ``mode``; rank 0 writes the record."""
    import gc

    import torch
    import torch.distributed as dist

    from fsdpcfg.train.engine.fsdp import Precision, bucketed, iter_full_params, shard_model
    from fsdpcfg.train.model import load_model
    from fsdpcfg.train.rollout.hf import HFRollout

    dist.init_process_group("gloo")
    from fsdpcfg.schema.model import ModelSection

    mcfg = ModelSection(path=model_path)
    actor = shard_model(
        load_model(mcfg, torch.float32),
        "fsdp2",
        Precision(torch.float32, torch.float32, torch.float32),
        device=torch.device("cpu"),
    )
    rollout = HFRollout(load_model(mcfg, torch.float32, weights=False), torch.float32, [0], 0)
    sizes = [p.numel() * 4 for p in rollout.model.parameters()]
    gc.collect()
    dist.barrier()

    def rss() -> int:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    def hwm() -> int:
        """Peak RSS since the last reset (``VmHWM``), bytes."""
        with open("/proc/self/status") as fh:
            return next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmHWM:"))

    # the build's transients set a high-water mark above the current RSS: reset it (Linux >= 4.0: writing 5 to
    # clear_refs sets VmHWM to the current RSS), so that the mark after the sync is the sync's own peak
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")
    before, hw0 = rss(), hwm()
    t = time.perf_counter()
    if mode == "stream":
        n = rollout.update_weights(bucketed(iter_full_params(actor), bucket_mb))
    else:
        full = dict(iter_full_params(actor))  # the whole state dict gathered first
        n = rollout.update_weights([list(full.items())])
        del full
    dt = time.perf_counter() - t
    rec = {
        "mode": mode,
        "seconds": dt,
        "extra": max(0, hwm() - before),
        "tensors": n,
        "before": before,
        "hw0": hw0,
        "largest": max(sizes),
        "total": sum(sizes),
    }
    if dist.get_rank() == 0:
        Path(out).write_text(json.dumps(rec))
    dist.barrier()
    dist.destroy_process_group()


def run_mode(model_path: str, mode: str, bucket_mb: float) -> dict:
    """One torchrun job of 2 ranks syncing once in ``mode``; rank 0's record."""
    with tempfile.TemporaryDirectory(prefix="fsdpcfg-sync-") as tmp:
        out = Path(tmp) / "rec.json"
        cmd = torchrun_argv([__file__, "--worker", model_path, mode, str(bucket_mb), str(out)], nproc_per_node=2)
        p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env={**os.environ, "OMP_NUM_THREADS": "1"})
        if p.returncode:
            raise SystemExit(f"{mode} failed ({p.returncode}):\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
        return json.loads(out.read_text())


def main(argv: list[str] | None = None) -> int:
    """Measure both modes and print (``--write``: record) the table; exit 1 when the stream misses its bound."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="qwen2-100m")
    ap.add_argument("--bucket-mb", type=float, default=64.0)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        worker(args.worker[0], args.worker[1], float(args.worker[2]), args.worker[3])
        return 0
    from fsdpcfg import assets

    path = str(assets.ensure(args.model))
    load0 = os.getloadavg()[0]
    res = {m: [run_mode(path, m, args.bucket_mb) for _ in range(args.repeats)] for m in ("stream", "full")}
    r0 = res["stream"][0]
    bound = args.bucket_mb * MIB + r0["largest"]
    rows = [
        "| sync (rank 0 of 2, FSDP2 fp32) | peak extra MiB (median) | seconds (median) | runs: extra MiB / s |",
        "|---|---|---|---|",
    ]
    med = {}
    for mode, label in (
        ("stream", f"bucketed per-tensor stream, {args.bucket_mb:g} MiB buckets"),
        ("full", "full state dict gathered first"),
    ):
        xs = res[mode]
        med[mode] = (statistics.median(r["extra"] for r in xs), statistics.median(r["seconds"] for r in xs))
        rows.append(
            f"| {label} | {med[mode][0] / MIB:.0f} | {med[mode][1]:.2f} | "
            + ", ".join(f"{r['extra'] / MIB:.0f} / {r['seconds']:.2f}" for r in xs)
            + " |"
        )
    ok = med["stream"][0] <= bound
    text = "\n".join(rows) + (
        f"\n\nModel {args.model}: {r0['total'] / MIB:.0f} MiB of fp32 weights in {r0['tensors']} tensors, the "
        f"largest {r0['largest'] / MIB:.0f} MiB (the tied embedding). Bound for the stream: one bucket + the "
        f"largest tensor = {bound / MIB:.0f} MiB: {'met' if ok else 'MISSED'}. The stream needs "
        f"{med['stream'][0] / max(med['full'][0], 1):.2f}x the full gather's extra memory and "
        f"{med['stream'][1] / med['full'][1]:.2f}x its time. Extra = peak RSS (VmHWM, reset before) during the sync "
        f"minus the RSS before it; {args.repeats} fresh 2-rank jobs per mode. Load average {load0:.1f} on "
        f"{os.cpu_count()} CPUs, {time.strftime('%Y-%m-%d %H:%M')}. Reproduce: "
        f"`python benchmarks/weight_sync.py --write`."
    )
    print(text)
    if args.write:
        from check_latency import _write_section

        _write_section(ROOT / "benchmarks" / "RESULTS.md", "weight synchronisation", text)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
