"""Learning curves of one or more runs, read from their ``metrics.jsonl`` and drawn with matplotlib into one PNG.

    curves = read_curves([Path("runs/fsdpcfg/arith_grpo"), Path("runs/fsdpcfg/arith_grpo_lr3")])
    fig, drawn = draw(curves)                 # one panel per metric any run has, one line per run
    write_png(fig, Path("curves.png"))        # written whole or not at all

The panels are the curves a verl user reads first (verl's metric names, the same the console line and
TensorBoard show): the training reward (``critic/rewards/mean``; ``train/loss`` for SFT), every ``val-core/*``
mean (validation reward; SFT ``val/loss``), the mean response length, the policy entropy, the gradient norm and
the step time. A panel is left out when no run has its metric (:data:`PANELS`); the steps of each line are the
steps the run logged (a resumed run's rows are one line: ``metrics.jsonl`` keeps one row per step).
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fsdpcfg.errors import ConfigError, UsageError
from fsdpcfg.runinfo.summary import read_metrics

#: (panel title, metric names: the first one a run has is drawn for it; a name ending in ``*`` is a prefix and
#: draws every matching metric of the run, standard deviations aside)
PANELS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("training reward", ("critic/rewards/mean",)),
    ("training loss (SFT)", ("train/loss",)),
    ("validation", ("val-core/*", "val/loss")),
    ("response length (tokens)", ("response_length/mean",)),
    ("entropy", ("actor/entropy",)),
    ("grad norm", ("actor/grad_norm", "train/grad_norm")),
    ("step time (s)", ("timing_s/step",)),
)
METRICS_FILE = "metrics.jsonl"
#: values past this magnitude (a diverged run's 1e308) are left out of a line: matplotlib cannot lay out an axis
#: from -1e308 to 1e308
OFF_SCALE = 1e100


@dataclass
class Curves:
    """The rows of one run's ``metrics.jsonl`` (one per step, oldest first) and the label its lines carry."""

    label: str
    rows: list[dict[str, Any]] = field(default_factory=list)

    def series(self, metric: str) -> tuple[list[int], list[float]]:
        """``(steps, values)`` of ``metric``: the steps whose row holds a finite number for it."""
        steps, values = [], []
        for row in self.rows:
            v = row.get(metric)
            if not isinstance(v, (int, float)) or isinstance(v, bool):
                continue
            try:
                x = float(v)
            except OverflowError:  # an integer past a float's range (a diverged or corrupt row): off the scale
                continue
            if math.isfinite(x) and abs(x) <= OFF_SCALE:
                steps.append(int(row["step"]))
                values.append(x)
        return steps, values

    def metrics(self, names: tuple[str, ...]) -> list[str]:
        """The metrics of ``names`` this run has (see :data:`PANELS`): the first exact name present, or every
        metric matching a ``prefix*`` name (``/std`` ones aside), sorted."""
        have = {k for row in self.rows for k in row if k != "step"}
        for name in names:
            if name.endswith("*"):
                found = sorted(k for k in have if k.startswith(name[:-1]) and "/std" not in k)
                if found:
                    return found
            elif name in have:
                return [name]
        return []


def read_curves(run_dirs: list[Path]) -> list[Curves]:
    """Read each run folder's ``metrics.jsonl`` (:func:`fsdpcfg.runinfo.summary.read_metrics`); each run is labelled
    by its folder's name, with as many parent folders as tell two runs apart.

    Raises:
        UsageError: a folder is missing or holds no ``metrics.jsonl``, or the file has no row of a step (the
            message names the folder and the fix).
    """
    out = []
    for d in run_dirs:
        f = d / METRICS_FILE
        if not d.is_dir():
            raise UsageError(f"{d}: no such folder", fix="give a run folder (the fsdpcfg.run_dir of a run)")
        if not f.is_file():
            raise UsageError(
                f"{d} holds no {METRICS_FILE}: not a run folder of the native launcher (or the run wrote no step)",
                fix="give the fsdpcfg.run_dir of a run (`ls runs/fsdpcfg/`); a verl run's metrics are in its "
                "trainer.logger sinks (TensorBoard, wandb)",
            )
        rows = read_metrics(f)
        if not rows:
            raise UsageError(f"{f} has no row of a step yet", fix="plot it once the run has logged a step")
        out.append(Curves(label=str(d), rows=rows))
    _short_labels(out, run_dirs)
    return out


def _short_labels(curves: list[Curves], run_dirs: list[Path]) -> None:
    """Label each run by the last parts of its folder's path, as few as tell them apart, and at least two when a
    folder is named by a number alone (a sweep's job folder: ``multirun-.../3``)."""
    parts = [Path(d).resolve().parts for d in run_dirs]
    start = 2 if any(p and p[-1].isdigit() for p in parts) else 1
    for n in range(start, max((len(p) for p in parts), default=1) + 1):
        labels = ["/".join(p[-n:]) for p in parts]
        if len(set(labels)) == len(labels):
            for c, label in zip(curves, labels, strict=True):
                c.label = label
            return


def draw(curves: list[Curves], panels: tuple[tuple[str, tuple[str, ...]], ...] = PANELS) -> tuple[Any, list[str]]:
    """A matplotlib figure with one panel per entry of ``panels`` that some run has (in a grid of two columns),
    one line per run and metric, x = step; and the panel titles drawn. Uses the ``Agg`` backend (no display).

    Raises:
        ConfigError: no run has any metric of ``panels``.
        UsageError: matplotlib is not installed (names the extra that installs it).
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise UsageError(
            "plotting needs matplotlib, which is not installed", fix="pip install 'fsdpcfg[train]' (or matplotlib)"
        ) from None
    shown = [(title, names) for title, names in panels if any(c.metrics(names) for c in curves)]
    if not shown:
        wanted = ", ".join(n for _, names in panels for n in names)
        raise ConfigError(f"none of the runs has a metric to plot ({wanted})", fix="plot a run that logged a step")
    cols = 2 if len(shown) > 1 else 1
    rows = math.ceil(len(shown) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(6.0 * cols, 3.2 * rows), squeeze=False)
    for ax, (title, names) in zip(axes.flat, shown, strict=False):
        for c in curves:
            for metric in c.metrics(names):
                steps, values = c.series(metric)
                label = c.label if len(c.metrics(names)) == 1 else f"{c.label}: {metric}"
                ax.plot(steps, values, marker="o" if len(steps) < 30 else None, markersize=3, label=label)
        ax.set_title(title if not any(n.endswith("*") for n in names) else f"{title} ({_common(curves, names)})")
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
        if len(curves) > 1 or any(len(c.metrics(names)) > 1 for c in curves):
            ax.legend(fontsize="small")
    for ax in list(axes.flat)[len(shown) :]:
        ax.set_visible(False)
    fig.tight_layout()
    return fig, [title for title, _ in shown]


def _common(curves: list[Curves], names: tuple[str, ...]) -> str:
    found = sorted({m for c in curves for m in c.metrics(names)})
    return found[0] if len(found) == 1 else f"{len(found)} metrics"


def write_png(fig: Any, path: Path) -> Path:
    """Render ``fig`` as PNG bytes in memory, then write them to ``path`` through a temporary file renamed over
    it (:func:`fsdpcfg.paths.atomic_write_bytes`): a reader never sees half a picture, a failed write leaves none.

    Raises:
        OSError: ``path``'s folder cannot be written (nothing is left behind).
    """
    import matplotlib.pyplot as plt

    from fsdpcfg.paths import atomic_write_bytes

    buf = io.BytesIO()
    try:
        fig.savefig(buf, format="png", dpi=100)
    finally:
        plt.close(fig)
    return atomic_write_bytes(path, buf.getvalue())
