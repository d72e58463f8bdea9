"""Per-step metrics of the native loop, in verl's metric names: to the console under a progress bar (rank 0),
to ``<run_dir>/metrics.jsonl`` and to TensorBoard (``<run_dir>/tensorboard``), as ``fsdpcfg.metrics`` selects.

``metrics.jsonl`` holds one row per step: a run that starts at step S (resumed from ``global_step_S``, or S=0)
first moves the rows of later steps, written by a run killed before it could save them, to
``metrics.discarded.jsonl`` (:func:`truncate_after`)."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

#: the metrics shown on the progress bar, in order, with short labels.
BAR_KEYS = {"critic/rewards/mean": "reward", "actor/pg_loss": "pg", "actor/kl_loss": "kl",
            "actor/grad_norm": "gnorm", "response_length/mean": "len", "timing_s/step": "s/step"}
#: the metrics printed on each step's console line (all of them go to the JSONL file and TensorBoard).
LINE_KEYS = ("critic/rewards/mean", "critic/rewards/max", "actor/pg_loss", "actor/kl_loss", "actor/pg_clipfrac",
             "actor/grad_norm", "actor/lr", "response_length/mean", "perf/throughput", "timing_s/step")


def mean_over(values: list[dict[str, float]]) -> dict[str, float]:
    """Average a list of metric dicts key by key (keys missing from some dicts average over the others)."""
    sums: dict[str, list[float]] = {}
    for d in values:
        for k, v in d.items():
            sums.setdefault(k, []).append(float(v))
    return {k: sum(v) / len(v) for k, v in sums.items()}


METRICS_FILE = "metrics.jsonl"
DISCARDED_FILE = "metrics.discarded.jsonl"


def truncate_after(run_dir: str | Path, step: int) -> int:
    """Keep in ``<run_dir>/metrics.jsonl`` the rows of steps ``<= step`` (the last of each step's rows) and
    move the others, and any line that is not a JSON row, to ``metrics.discarded.jsonl``; return how many rows
    were moved. Source: issue 14 item 8 (rows of steps 2, 2 after resuming from a save killed at step 2).

    Raises:
        WriteFault: the run folder cannot be written.
    """
    from fsdpcfg.runinfo.faults import write_file_in, writing

    from fsdpcfg.paths import within

    path = within(run_dir, METRICS_FILE)
    if not path.is_file():
        return 0
    kept: dict[int, str] = {}
    moved = []
    for line in path.read_text(errors="replace").splitlines():
        try:
            row_step = json.loads(line)["step"]
            ok = isinstance(row_step, int) and row_step <= step
        except (ValueError, KeyError, TypeError):
            ok, row_step = False, None
        if ok:
            if row_step in kept:
                moved.append(kept[row_step])
            kept[row_step] = line
        elif line.strip():
            moved.append(line)
    if moved:
        discarded = within(run_dir, DISCARDED_FILE)
        with writing(discarded, "fsdpcfg.run_dir"), open(discarded, "a") as fh:
            fh.write("".join(m + "\n" for m in moved))
        write_file_in(run_dir, METRICS_FILE, "".join(kept[k] + "\n" for k in sorted(kept)), "fsdpcfg.run_dir")
    return len(moved)


class MetricsLogger:
    """Writes each step's metrics; only rank 0 creates one (``enabled=False`` elsewhere does nothing).

    Args:
        run_dir: the run folder (``fsdpcfg.run_dir``).
        total_steps: for the progress bar; start_step: the step already done (resume).
        jsonl, tensorboard: the ``fsdpcfg.metrics`` switches.
        desc, bar_keys, line_keys: the progress bar's label, its metrics ({key: label}) and the metrics of each
            step's console line (default: GRPO's :data:`BAR_KEYS` and :data:`LINE_KEYS`).
    """

    def __init__(self, run_dir: str | Path, total_steps: int, start_step: int = 0, *, jsonl: bool = True,
                 tensorboard: bool = True, enabled: bool = True, desc: str = "GRPO",
                 bar_keys: dict[str, str] | None = None, line_keys: tuple[str, ...] | None = None) -> None:
        self.enabled = enabled
        self.bar_keys = BAR_KEYS if bar_keys is None else bar_keys
        self.line_keys = LINE_KEYS if line_keys is None else line_keys
        self._jsonl = self._tb = self._bar = None
        if not enabled:
            return
        from fsdpcfg.paths import within
        from fsdpcfg.runinfo.faults import writing

        run_dir = Path(run_dir)
        self._jsonl_path = within(run_dir, METRICS_FILE)
        with writing(self._jsonl_path, "fsdpcfg.run_dir"):
            run_dir.mkdir(parents=True, exist_ok=True)
        if jsonl:
            moved = truncate_after(run_dir, start_step)
            if moved:
                print(f"fsdpcfg: moved {moved} metrics row(s) past step {start_step} (not in the checkpoint this run "
                      f"starts from) to {run_dir / DISCARDED_FILE}", file=sys.stderr, flush=True)
            with writing(self._jsonl_path, "fsdpcfg.run_dir"):
                self._jsonl = open(self._jsonl_path, "a", buffering=1)
        if tensorboard:
            from torch.utils.tensorboard import SummaryWriter

            self._tb = SummaryWriter(log_dir=str(run_dir / "tensorboard"))
        from tqdm import tqdm

        self._bar = tqdm(total=total_steps, initial=start_step, desc=desc, unit="step", dynamic_ncols=True,
                         file=sys.stderr, leave=True)

    def log(self, step: int, metrics: dict[str, Any]) -> None:
        """Record ``metrics`` of training step ``step`` (1-based) everywhere that is switched on."""
        if not self.enabled:
            return
        clean = {k: (float(v) if isinstance(v, (int, float)) else v) for k, v in metrics.items()}
        if self._jsonl is not None:
            from fsdpcfg.runinfo.faults import writing

            with writing(self._jsonl_path, "fsdpcfg.run_dir"):
                self._jsonl.write(json.dumps({"step": step, **clean}) + "\n")
        if self._tb is not None:
            for k, v in clean.items():
                if isinstance(v, float) and math.isfinite(v):
                    self._tb.add_scalar(k, v, step)
            self._tb.flush()
        if self._bar is not None:
            shown = {label: f"{clean[k]:.4g}" for k, label in self.bar_keys.items() if k in clean}
            self._bar.set_postfix(shown, refresh=False)
            self._bar.update(1)
            self._bar.write(f"step {step}: " + " ".join(f"{k}={clean[k]:.4g}" for k in self.line_keys if k in clean))

    def message(self, text: str) -> None:
        """Print one line above the progress bar (rank 0 only)."""
        if self._bar is not None:
            self._bar.write(text)

    def close(self) -> None:
        """Flush and close the sinks."""
        if self._bar is not None:
            self._bar.close()
        if self._jsonl is not None:
            try:
                self._jsonl.close()
            except OSError:  # a full disk: the write that failed already raised its WriteFault
                pass
        if self._tb is not None:
            self._tb.close()
