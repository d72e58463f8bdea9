"""The table at the end of a sweep: one row per point (launched or not), printed and saved as JSON and CSV.

<sweep dir>/sweep_summary.json   {"points": [...], "launcher": ..., "total_wall_s": ...}
<sweep dir>/sweep_summary.csv    point,status,final_reward,val_reward,rank,steps,wall_s,run_dir,overrides,error

The points that finished are ranked by their last validation reward (``val-core/*/reward/mean@N``), or by their
last training reward when no point validated (:func:`rank_points`); ``fsdpcfg plot SWEEP_DIR`` draws them.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

COLUMNS = (
    "point",
    "status",
    "final_reward",
    "val_reward",
    "rank",
    "steps",
    "wall_s",
    "run_dir",
    "overrides",
    "error",
)
JSON_FILE = "sweep_summary.json"
CSV_FILE = "sweep_summary.csv"
#: the key that chose the sweep folder (named when it holds files fsdpcfg did not write: fsdpcfg.paths.owned).
SWEEP_DIR_KEY = "hydra.sweep.dir"


def _cell(row: dict[str, Any], col: str) -> str:
    v = row.get(col)
    if v is None:
        return "-"
    if col == "overrides":
        return " ".join(v)
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def format_table(rows: list[dict[str, Any]]) -> str:
    """A fixed-width table of point, status, final reward, steps, wall time (s) and the overrides that differ
    between the points (those shared by all are printed once, above the table)."""
    cols = ("point", "status", "final_reward", "val_reward", "rank", "steps", "wall_s", "overrides")
    shared = set.intersection(*(set(r.get("overrides") or []) for r in rows)) if len(rows) > 1 else set()
    rows = [dict(r, overrides=[o for o in r.get("overrides") or [] if o not in shared]) for r in rows]
    cells = [[_cell(r, c) for c in cols] for r in rows]
    widths = [max(len(c), *(len(x[i]) for x in cells)) if cells else len(c) for i, c in enumerate(cols)]
    lines = [f"every point: {' '.join(sorted(shared))}"] if shared else []
    lines.append("  ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True)).rstrip())
    lines += ["  ".join(x.ljust(w) for x, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    return "\n".join(lines)


def rank_points(rows: list[dict[str, Any]]) -> str | None:
    """Set each row's ``rank`` (1 = best) among the points with a number for the ranking metric: ``val_reward``
    when any point has one, else ``final_reward``; higher is better, ties share the better rank; the others get
    ``None``. Returns the metric ranked by (``None`` when no point has either)."""

    def number(v: Any) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool) and v == v

    metric = next((m for m in ("val_reward", "final_reward") if any(number(r.get(m)) for r in rows)), None)
    values = sorted((r[metric] for r in rows if metric and number(r.get(metric))), reverse=True)
    for r in rows:
        r["rank"] = values.index(r[metric]) + 1 if metric and number(r.get(metric)) else None
    return metric


def _atomic(sweep_dir: Path, name: str, text: str) -> Path:
    from fsdpcfg.paths import owned
    from fsdpcfg.redact import write_private

    return write_private(owned(sweep_dir, name, key=SWEEP_DIR_KEY), text)


def write_summary(sweep_dir: str | Path, rows: list[dict[str, Any]], **meta: Any) -> tuple[Path, Path]:
    """Write ``sweep_summary.json`` (rows plus ``meta``) and ``sweep_summary.csv`` into ``sweep_dir``; return
    both paths."""
    d = Path(sweep_dir)
    _atomic(d, JSON_FILE, json.dumps({**meta, "points": rows}, indent=2, default=str) + "\n")
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(COLUMNS)
    for r in rows:
        w.writerow(["" if r.get(c) is None else (" ".join(r[c]) if c == "overrides" else r[c]) for c in COLUMNS])
    _atomic(d, CSV_FILE, buf.getvalue())
    return d / JSON_FILE, d / CSV_FILE
