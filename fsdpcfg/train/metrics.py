"""Per-step metrics of the native loop, in verl's metric names: always to ``<run_dir>/metrics.jsonl``, and to the
sinks ``trainer.logger`` selects (console progress bar, TensorBoard, verl's file layout, wandb, MLflow:
:mod:`fsdpcfg.train.trackers`); plus the step's timing, entropy and memory helpers.

``metrics.jsonl`` holds one row per step: a run that starts at step S (resumed from ``global_step_S``, or S=0)
first moves the rows of later steps, written by a run killed before it could save them, to
``metrics.discarded.jsonl`` (:func:`truncate_after`)."""

from __future__ import annotations

import json
import resource
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from fsdpcfg.redact import scrub_text

if TYPE_CHECKING:
    from fsdpcfg.runinfo.ckpt_identity import AnyRunConfig

#: the metrics shown on the progress bar, in order, with short labels.
BAR_KEYS = {
    "critic/rewards/mean": "reward",
    "actor/pg_loss": "pg",
    "actor/kl_loss": "kl",
    "actor/grad_norm": "gnorm",
    "response_length/mean": "len",
    "timing_s/step": "s/step",
}
#: the metrics printed on each step's console line (all of them go to the JSONL file and TensorBoard).
LINE_KEYS = (
    "critic/rewards/mean",
    "critic/rewards/max",
    "actor/pg_loss",
    "actor/kl_loss",
    "actor/pg_clipfrac",
    "actor/grad_norm",
    "actor/lr",
    "response_length/mean",
    "perf/throughput",
    "timing_s/step",
)


def mean_over(values: list[dict[str, float]]) -> dict[str, float]:
    """Average a list of metric dicts key by key (keys missing from some dicts average over the others)."""
    sums: dict[str, list[float]] = {}
    for d in values:
        for k, v in d.items():
            sums.setdefault(k, []).append(float(v))
    return {k: sum(v) / len(v) for k, v in sums.items()}


@contextmanager
def timed(name: str, timing: dict[str, float]) -> Iterator[None]:
    """Add the wall time of the ``with`` body, in seconds, to ``timing[name]`` (verl's ``marked_timer``)."""
    t0 = time.perf_counter()
    try:
        yield
    finally:
        timing[name] = timing.get(name, 0.0) + time.perf_counter() - t0


def masked_aggregate(values: torch.Tensor, mask: torch.Tensor, loss_agg_mode: str, device: torch.device) -> float:
    """A ``[b, R]`` per-token quantity (entropy) of this rank aggregated over every rank's tokens with
    ``loss_agg_mode``, as verl aggregates ``actor/entropy`` over the whole batch (collective).

    Raises:
        ValueError: an unknown ``loss_agg_mode`` (from :func:`fsdpcfg.train.algorithm.losses.agg_loss`).
    """
    import torch.distributed as dist

    from fsdpcfg.train.algorithm.losses import agg_loss

    world = dist.get_world_size()
    totals = torch.tensor([float(mask.sum()), float((mask.sum(-1) > 0).sum())], dtype=torch.float64, device=device)
    dist.all_reduce(totals)
    part = agg_loss(
        values.float(),
        mask.float(),
        loss_agg_mode,
        dp_size=world,
        batch_num_tokens=float(totals[0]),
        global_batch_size=float(totals[1]),
    )
    t = torch.tensor([float(part)], dtype=torch.float64, device=device)
    dist.all_reduce(t)
    return float(t.item()) / world


def memory_metrics(device: torch.device) -> dict[str, float]:
    """Peak memory over the ranks, in GiB (collective): on a GPU verl's ``perf/max_memory_allocated_gb`` and
    ``perf/max_memory_reserved_gb`` (``torch.cuda``); everywhere the process's peak resident set
    ``perf/max_rss_gb`` (``getrusage``) and verl's ``perf/cpu_memory_used_gb`` (the machine's used memory)."""
    import torch.distributed as dist

    gib = 1024**3
    vals = {"perf/max_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / gib}
    if device.type == "cuda":
        vals["perf/max_memory_allocated_gb"] = torch.cuda.max_memory_allocated(device) / gib
        vals["perf/max_memory_reserved_gb"] = torch.cuda.max_memory_reserved(device) / gib
    keys = sorted(vals)
    t = torch.tensor([vals[k] for k in keys], dtype=torch.float64, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    out = dict(zip(keys, t.tolist(), strict=True))
    out["perf/cpu_memory_used_gb"] = _used_memory_gib()
    return out


def _used_memory_gib() -> float:
    """The machine's used memory (``MemTotal - MemAvailable`` of ``/proc/meminfo``), as psutil reports it."""
    try:
        info = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines() if ":" in line)
        kib = int(info["MemTotal"].split()[0]) - int(info["MemAvailable"].split()[0])
        return kib / 1024**2
    except (OSError, KeyError, ValueError):
        return float("nan")


METRICS_FILE = "metrics.jsonl"
DISCARDED_FILE = "metrics.discarded.jsonl"


def truncate_after(run_dir: str | Path, step: int) -> int:
    """Keep in ``<run_dir>/metrics.jsonl`` the rows of steps ``<= step`` (the last of each step's rows) and
    move the others, and any line that is not a JSON row, to ``metrics.discarded.jsonl``; return how many rows
    were moved. Source: issue 14 item 8 (rows of steps 2, 2 after resuming from a save killed at step 2).

    Raises:
        WriteFault: the run folder cannot be written.
    """
    from fsdpcfg.paths import owned
    from fsdpcfg.runinfo.faults import write_file_in, writing

    path = owned(run_dir, METRICS_FILE, key="fsdpcfg.run_dir")
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
        discarded = owned(run_dir, DISCARDED_FILE, key="fsdpcfg.run_dir")
        with writing(discarded, "fsdpcfg.run_dir"), open(discarded, "a") as fh:
            fh.write("".join(m + "\n" for m in moved))
        write_file_in(run_dir, METRICS_FILE, "".join(kept[k] + "\n" for k in sorted(kept)), "fsdpcfg.run_dir")
    return len(moved)


class MetricsLogger:
    """Writes each step's metrics; only rank 0 creates one (``enabled=False`` elsewhere does nothing).

    ``<run_dir>/metrics.jsonl`` (``{"step": N, metric: value, ...}`` per line) is always written; the sinks of
    ``loggers`` (``trainer.logger``: console, tensorboard, file, wandb, mlflow) as
    :mod:`fsdpcfg.train.trackers` describes.

    Args:
        run_dir: the run folder (``fsdpcfg.run_dir``).
        total_steps: for the progress bar; start_step: the step already done (resume).
        loggers: ``trainer.logger``; project, experiment: ``trainer.project_name`` / ``experiment_name``;
            config: the resolved config (wandb's config, MLflow's params).
        desc, bar_keys, line_keys: the progress bar's label, its metrics ({key: label}) and the metrics of each
            step's console line (default: GRPO's :data:`BAR_KEYS` and :data:`LINE_KEYS`).
    """

    def __init__(
        self,
        run_dir: str | Path,
        total_steps: int,
        start_step: int = 0,
        *,
        loggers: list[str] | tuple[str, ...] = ("console",),
        project: str = "fsdpcfg",
        experiment: str = "run",
        config: dict[str, Any] | None = None,
        enabled: bool = True,
        desc: str = "GRPO",
        bar_keys: dict[str, str] | None = None,
        line_keys: tuple[str, ...] | None = None,
    ) -> None:
        from fsdpcfg.train.trackers import open_sinks

        self.enabled = enabled
        self.bar_keys = BAR_KEYS if bar_keys is None else bar_keys
        self.line_keys = LINE_KEYS if line_keys is None else line_keys
        self._jsonl = self._bar = None
        self.sinks: list[Any] = []
        if not enabled:
            return
        from fsdpcfg.paths import owned
        from fsdpcfg.runinfo.faults import writing

        run_dir = Path(run_dir)
        with writing(run_dir / METRICS_FILE, "fsdpcfg.run_dir"):
            self._jsonl_path = owned(run_dir, METRICS_FILE, key="fsdpcfg.run_dir")  # creates the folder
        moved = truncate_after(run_dir, start_step)
        if moved:
            print(
                f"fsdpcfg: moved {moved} metrics row(s) past step {start_step} (not in the checkpoint this run "
                f"starts from) to {run_dir / DISCARDED_FILE}",
                file=sys.stderr,
                flush=True,
            )
        with writing(self._jsonl_path, "fsdpcfg.run_dir"):
            self._jsonl = open(self._jsonl_path, "a", buffering=1)
        self.sinks = open_sinks(list(loggers), run_dir, project, experiment, config or {})
        if "console" in loggers:
            from tqdm import tqdm

            self._bar = tqdm(
                total=total_steps,
                initial=start_step,
                desc=desc,
                unit="step",
                dynamic_ncols=True,
                file=sys.stderr,
                leave=True,
            )

    @classmethod
    def for_run(
        cls,
        cfg: AnyRunConfig,
        total_steps: int,
        start_step: int,
        *,
        enabled: bool,
        tracked: dict[str, Any] | None = None,
        **display: Any,
    ) -> MetricsLogger:
        """The logger a run's typed config asks for (``trainer.logger``, names, run folder); ``display``: the
        progress bar's ``desc``, ``bar_keys``, ``line_keys``. wandb's config and MLflow's params are ``tracked``:
        the resolved config the run was started from (every key, verl's included, as verl logs its whole config),
        else the typed config's fields (``model_dump``)."""
        tr = cfg.trainer
        loggers = tr.logger if isinstance(tr.logger, list) else [tr.logger]
        return cls(
            cfg.fsdpcfg.run_dir,
            total_steps,
            start_step,
            loggers=list(loggers),
            project=tr.project_name,
            experiment=tr.experiment_name,
            config=tracked if tracked is not None else cfg.model_dump(mode="json"),
            enabled=enabled,
            **display,
        )

    def log(self, step: int, metrics: dict[str, Any], *, advance: bool = True) -> None:
        """Record ``metrics`` of training step ``step`` (1-based; 0 for a validation before training) everywhere
        that is switched on; ``advance=False`` leaves the progress bar where it is (no step was trained)."""
        from fsdpcfg.train.trackers import finite

        if not self.enabled:
            return
        clean = {k: (float(v) if isinstance(v, (int, float)) else v) for k, v in metrics.items()}
        if self._jsonl is not None:
            from fsdpcfg.runinfo.faults import writing

            with writing(self._jsonl_path, "fsdpcfg.run_dir"):
                self._jsonl.write(scrub_text(json.dumps({"step": step, **clean})) + "\n")
        plot = finite(clean)
        for sink in self.sinks:
            sink.log(step, plot)
        if self._bar is not None:
            shown = {label: f"{clean[k]:.4g}" for k, label in self.bar_keys.items() if k in clean}
            self._bar.set_postfix(shown, refresh=False)
            if advance:
                self._bar.update(1)
            line = [f"{k}={clean[k]:.4g}" for k in self.line_keys if k in clean]
            line += [f"{k}={v:.4g}" for k, v in clean.items() if k.startswith("val-core/") and isinstance(v, float)]
            self._bar.write(f"step {step}: " + " ".join(line))

    def message(self, text: str) -> None:
        """Print one line above the progress bar (rank 0 only; printed plainly without ``console``)."""
        if self._bar is not None:
            self._bar.write(text)
        elif self.enabled:
            print(text, file=sys.stderr, flush=True)

    def close(self) -> None:
        """Flush and close the sinks."""
        if self._bar is not None:
            self._bar.close()
        if self._jsonl is not None:
            try:
                self._jsonl.close()
            except OSError:  # a full disk: the write that failed already raised its WriteFault
                pass
        for sink in self.sinks:
            sink.close()
