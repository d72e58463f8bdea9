"""The closing summary a native run prints when torchrun exits: what was written where, how the run went, and
how to continue it.

    run finished: 5 steps (GRPO) in runs/fsdpcfg/qwen_grpo
      checkpoint   checkpoints/fsdpcfg/qwen_grpo/global_step_5   (AutoModelForCausalLM.from_pretrained loads it)
      metrics      runs/fsdpcfg/qwen_grpo/metrics.jsonl
      tensorboard  tensorboard --logdir runs/fsdpcfg/qwen_grpo/tensorboard
      curves       fsdpcfg plot runs/fsdpcfg/qwen_grpo   (a PNG of the metrics)
      reward       critic/rewards/mean 0.000 -> 0.250 (first -> last step)
      stalled      every advantage is 0 (...): steps 3-5      (fsdpcfg.runinfo.learning, when a sign held 3 steps)
      validation   val-core/openai/gsm8k/reward/mean@1 0.000 (step 0) -> 0.125 (step 5)
      speed        median 9.1 s/step, 95 tokens/s per rank (perf/throughput)
      resume       python -m fsdpcfg +recipe=qwen_grpo trainer.total_training_steps=10

Everything is read from the files the run wrote (``metrics.jsonl``, the checkpoint folder's
``latest_checkpointed_iteration.txt``), so the summary says what is on disk, not what the loop believed.
"""

from __future__ import annotations

import json
import shlex
import statistics
from pathlib import Path
from typing import Any

from fsdpcfg import keypath
from fsdpcfg.runinfo.learning import stalled_spans, why_zero_reward

#: the metric that says how training went, by kind (the first one present is shown).
PROGRESS_KEYS = ("critic/rewards/mean", "train/loss")


def read_metrics(path: Path) -> list[dict[str, Any]]:
    """The rows of a ``metrics.jsonl`` (the last row of a step wins; unreadable lines are skipped)."""
    rows: dict[int, dict[str, Any]] = {}
    if not path.is_file():
        return []
    for line in path.read_text(errors="replace").splitlines():
        try:
            row = json.loads(line)
        except (ValueError, RecursionError):  # not JSON, a number Python will not read, nesting past the stack
            continue
        if isinstance(row, dict) and isinstance(row.get("step"), int):
            rows[row["step"]] = row
    return [rows[k] for k in sorted(rows)]


def _shown(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _resume_command(argv: list[str], steps_done: int, total: int | None) -> str:
    from fsdpcfg.runinfo import redact_overrides

    args = [a for a in redact_overrides(argv) if not a.startswith("trainer.total_training_steps=")]
    more = max(steps_done, total or 0) * 2 or 10
    return shlex.join(["python", "-m", "fsdpcfg", *args, f"trainer.total_training_steps={more}"])


def closing_summary(cfg: dict[str, Any], argv: list[str]) -> str:
    """The summary of the finished run of resolved config ``cfg`` started with command-line arguments ``argv``.

    Shows the latest complete checkpoint (``trainer.default_local_dir``), the metrics file, the TensorBoard
    command, the progress metric and every ``val-core/*`` metric first -> last, the median step time and
    throughput, and the command that continues the run (``trainer.resume_mode=auto`` resumes from the
    checkpoint; the step count is doubled as an example).
    """
    run_dir = Path(cfg["fsdpcfg"]["run_dir"])
    ckpt_dir = Path(cfg["trainer"]["default_local_dir"])
    rows = read_metrics(run_dir / "metrics.jsonl")
    train = [r for r in rows if "timing_s/step" in r]
    lines = [f"run finished: {len(train)} step(s) in {_shown(run_dir)}"]
    latest = ckpt_dir / "latest_checkpointed_iteration.txt"
    if latest.is_file():
        folder = ckpt_dir / f"global_step_{latest.read_text().strip()}"
        lines.append(f"  checkpoint   {_shown(folder)}   (AutoModelForCausalLM.from_pretrained loads it)")
    else:
        lines.append("  checkpoint   none written (trainer.save_freq and the last step decide)")
    if rows:
        lines.append(f"  metrics      {_shown(run_dir / 'metrics.jsonl')}")
    if (run_dir / "tensorboard").is_dir():
        lines.append(f"  tensorboard  tensorboard --logdir {_shown(run_dir / 'tensorboard')}")
    if rows:
        lines.append(f"  curves       fsdpcfg plot {shlex.quote(_shown(run_dir))}   (a PNG of the metrics)")
    key = next((k for k in PROGRESS_KEYS if train and k in train[0]), None)
    if key is not None:
        lines.append(
            f"  {'reward' if key.startswith('critic') else 'loss':<12} {key} {train[0][key]:.4g} -> "
            f"{train[-1][key]:.4g} (step {train[0]['step']} -> {train[-1]['step']})"
        )
    stalled = stalled_spans(rows)
    for line in stalled:
        lines.append(f"  stalled      {line}")
    if stalled and train and all((r.get("critic/rewards/max") or 0) == 0 for r in train):
        why = why_zero_reward(str(keypath.get(cfg, "actor_rollout_ref.model.path", "")))
        if why:
            lines.append(f"  why          {why}")
    val = [r for r in rows if any(k.startswith("val-core/") for k in r)]
    for vkey in sorted({k for r in val for k in r if k.startswith("val-core/") and "/std" not in k}):
        have = [r for r in val if vkey in r]
        first, last = have[0], have[-1]
        lines.append(
            f"  validation   {vkey} {first[vkey]:.4g} (step {first['step']}) -> {last[vkey]:.4g} (step {last['step']})"
        )
    if train:
        step_s = statistics.median(r["timing_s/step"] for r in train)
        speed = f"  speed        median {step_s:.3g} s/step"
        if all("perf/throughput" in r for r in train):
            speed += f", {statistics.median(r['perf/throughput'] for r in train):.4g} tokens/s per rank"
        lines.append(speed)
    total = cfg["trainer"].get("total_training_steps")
    done = train[-1]["step"] if train else 0
    lines.append(f"  resume       {_resume_command(argv, done, total if isinstance(total, int) else None)}")
    return "\n".join(lines)
