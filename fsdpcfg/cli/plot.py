"""``fsdpcfg plot RUN_DIR [RUN_DIR ...] [-o FILE.png]``: the learning curves of native runs in one PNG.

One run: ``RUN_DIR/curves.png`` unless ``-o`` names another file. Several runs (a sweep's points, two seeds, a
before and an after) are drawn on the same panels, one line each, into ``-o`` (default ``curves.png`` in the
current folder). A sweep folder stands for its points' run folders (those of ``sweep_summary.json``). Which
panels and from which metrics: :mod:`fsdpcfg.runinfo.plot`.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from fsdpcfg.errors import UsageError

DEFAULT_NAME = "curves.png"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register ``plot``'s arguments."""
    parser.add_argument(
        "run_dirs",
        nargs="+",
        metavar="RUN_DIR",
        type=Path,
        help="run folders (fsdpcfg.run_dir: they hold metrics.jsonl) or a sweep folder (its points)",
    )
    parser.add_argument(
        "-o",
        "--output",
        type=Path,
        default=None,
        help=f"the PNG to write (default: RUN_DIR/{DEFAULT_NAME} for one run, ./{DEFAULT_NAME} for several)",
    )


def expand_sweeps(run_dirs: list[Path]) -> list[Path]:
    """Each folder as given, or for a sweep folder (one holding ``sweep_summary.json``) the run folders of its
    points that logged a step, in the order of the summary.

    Raises:
        UsageError: a sweep folder none of whose points has a run folder with metrics.
    """
    from fsdpcfg.sweep.summary import JSON_FILE

    out: list[Path] = []
    for d in run_dirs:
        summary = d / JSON_FILE
        if not summary.is_file() or (d / "metrics.jsonl").is_file():
            out.append(d)
            continue
        try:
            points = json.loads(summary.read_text()).get("points") or []
        except (OSError, ValueError, AttributeError):
            points = []
        found = [Path(p["run_dir"]) for p in points if isinstance(p, dict) and isinstance(p.get("run_dir"), str)]
        found = [p if p.is_absolute() else d / p for p in found]
        found = [p for p in found if (p / "metrics.jsonl").is_file()]
        if not found:
            raise UsageError(
                f"{d} is a sweep folder, but none of its points has a run folder with metrics.jsonl",
                fix="plot it once a point has logged a step, or give the points' run folders",
            )
        out.extend(found)
    return out


def run(args: argparse.Namespace) -> int:
    """Read the runs' metrics, draw the panels, write the PNG; print where it is and what it shows."""
    from fsdpcfg.runinfo.plot import draw, read_curves, write_png

    run_dirs = expand_sweeps(list(args.run_dirs))
    curves = read_curves(run_dirs)
    out = args.output
    if out is None:
        from fsdpcfg.paths import OWNED_MARK, foreign_entries

        if len(run_dirs) == 1 and foreign_entries(run_dirs[0]):
            raise UsageError(  # a folder fsdpcfg did not make: its files are not ours to add to or replace
                f"{run_dirs[0]} holds files fsdpcfg did not write, so the picture is not written into it",
                fix=f"name the file: -o {DEFAULT_NAME}",
            )
        out = run_dirs[0] / DEFAULT_NAME if len(run_dirs) == 1 else Path(DEFAULT_NAME)
        # a picture fsdpcfg drew in a run folder it made is redrawn; any other file of that name is the user's
        ours = len(run_dirs) == 1 and (run_dirs[0] / OWNED_MARK).is_file()
        if (out.exists() or out.is_symlink()) and not ours:
            raise UsageError(f"{out} exists and is not replaced", fix=f"name another file: -o {out.stem}_2.png")
    if out.is_dir():
        raise UsageError(f"-o {out} is a folder", fix=f"name a file in it (e.g. -o {out / DEFAULT_NAME})")
    if out.suffix.lower() != ".png":
        raise UsageError(f"-o {out}: the picture is a PNG", fix=f"name a .png file (e.g. -o {out.with_suffix('.png')})")
    fig, titles = draw(curves)
    write_png(fig, out)
    steps = ", ".join(f"{c.label} (to step {max(r['step'] for r in c.rows)})" for c in curves)  # step 0: validation
    print(f"wrote {out}: {', '.join(titles)}\n  runs: {steps}")
    return 0
