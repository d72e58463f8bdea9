"""Cold latency of ``fsdpcfg check +recipe=qwen_grpo`` beside verl 0.9.1 composing its own ``ppo_trainer``
config and running ``verl.utils.config.validate_config`` on the same settings. Both run in fresh processes.

    python benchmarks/check_latency.py [--runs 5] [--write]

The verl side gets, as Hydra overrides on its own config, every verl key whose value in the composed
``+recipe=qwen_grpo`` differs from verl's default (rollout.name=hf becomes vllm: verl has no hf backend).
``--write`` puts the table into benchmarks/RESULTS.md, section "check latency" (other sections are kept).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RECIPE = ["+recipe=qwen_grpo"]

VERL_SIDE = r"""
import json, os, sys, time
t0 = time.perf_counter()
import verl
from hydra import compose, initialize_config_dir
from verl.utils.config import validate_config
cfg_dir = os.path.join(os.path.dirname(verl.__file__), "trainer", "config")
with initialize_config_dir(config_dir=cfg_dir, version_base=None):
    cfg = compose(config_name="ppo_trainer", overrides=json.loads(sys.argv[1]))
use_ref = bool(cfg.actor_rollout_ref.actor.use_kl_loss or cfg.algorithm.use_kl_in_reward)
validate_config(cfg, use_reference_policy=use_ref, use_critic=False)
print("VERL_OK", time.perf_counter() - t0)
"""


def verl_overrides() -> list[str]:
    """The recipe's settings as overrides of verl's own config (keys verl knows, values off its default)."""
    sys.path.insert(0, str(ROOT))
    from fsdpcfg import verlref
    from fsdpcfg.check.sources import hydra_value
    from fsdpcfg.compose import compose

    cfg = verlref.flatten(compose(RECIPE).to_container())
    raw = verlref.defaults(resolved=False)
    out = []
    for key, value in cfg.items():
        if key not in verlref.keys() or (isinstance(raw.get(key), str) and "${" in raw[key]):
            continue
        if key == "actor_rollout_ref.rollout.name":
            value = "vllm"
        if value != verlref.defaults().get(key):
            out.append(f"{key}={hydra_value(value)}")
    return out


def _time(cmd: list[str], runs: int, ok: str | None = None) -> tuple[list[float], list[float]]:
    """Return (wall seconds, CPU seconds user+system) of ``runs`` cold runs of ``cmd``."""
    times, cpu = [], []
    for _ in range(runs):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        times.append(time.perf_counter() - t)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime)
        if p.returncode not in (0,) or (ok and ok not in p.stdout):
            raise SystemExit(f"{' '.join(cmd[:4])} ... failed ({p.returncode}):\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
    return times, cpu


def main() -> None:
    """Measure both sides and print (and with --write, record) the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--write", action="store_true", help="write the table into benchmarks/RESULTS.md")
    args = ap.parse_args()
    # bytecode as an installed package has it (pip compiles at install; this sandbox sets PYTHONDONTWRITEBYTECODE)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "fsdpcfg")], check=False)
    load = os.getloadavg()[0]
    ours, ours_cpu = _time([sys.executable, "-m", "fsdpcfg", "check", "--no-plan", *RECIPE], args.runs)
    ovs = verl_overrides()
    verl, verl_cpu = _time([sys.executable, "-c", VERL_SIDE, json.dumps(ovs)], args.runs, ok="VERL_OK")
    med = statistics.median
    rows = [
        ("fsdpcfg check +recipe=qwen_grpo (compose, schema, all rules)", ours, ours_cpu),
        ("verl 0.9.1: import, compose ppo_trainer, validate_config", verl, verl_cpu),
    ]
    table = ["| command (cold process) | median wall s | median CPU s | wall s of each run |", "|---|---|---|---|"]
    table += [
        f"| {name} | {med(ts):.2f} | {med(cs):.2f} | {', '.join(f'{t:.2f}' for t in ts)} |" for name, ts, cs in rows
    ]
    text = "\n".join(table) + (
        f"\n\nfsdpcfg is {med(verl) / med(ours):.0f}x faster (wall); verl was given {len(ovs)} overrides (the "
        f"recipe's values that differ from verl's defaults). Machine: {os.cpu_count()} CPUs, 1-minute load "
        f"average {load:.1f} when the runs started (other work shared the cores; CPU seconds, user + system of "
        f"the process, are the load-independent number), fsdpcfg byte-compiled as pip does at install, "
        f"Python {platform.python_version()}, "
        f"{time.strftime('%Y-%m-%d %H:%M')}. Reproduce: `python benchmarks/check_latency.py --write`."
    )
    print(text)
    if args.write:
        _write_section(ROOT / "benchmarks" / "RESULTS.md", "check latency", text)


def _write_section(path: Path, title: str, body: str) -> None:
    head = f"## {title}"
    lines = path.read_text().splitlines() if path.exists() else ["# Benchmark results", ""]
    if head in lines:
        i = lines.index(head)
        j = next((k for k in range(i + 1, len(lines)) if lines[k].startswith("## ")), len(lines))
        lines[i:j] = [head, "", body, ""]
    else:
        lines += ["", head, "", body, ""] if lines and lines[-1] else [head, "", body, ""]
    path.write_text("\n".join(lines).rstrip() + "\n")


if __name__ == "__main__":
    main()
