"""``python -m fsdpcfg -m OVERRIDES...``: expand, check every point, launch the valid ones through Hydra, summarise.

    python -m fsdpcfg -m +recipe=qwen_grpo actor_rollout_ref.actor.optim.lr=1e-6,3e-6 actor_rollout_ref.rollout.n=4,8
    python -m fsdpcfg -m ... hydra/launcher=joblib hydra.launcher.n_jobs=2     # two points at a time
    python -m fsdpcfg -m ... hydra/launcher=fsdpcfg_slurm                       # one Slurm job per point

Nothing starts unless every point passes (``--only-valid`` launches the passing ones and lists the others as
not started). The sweep folder is ``hydra.sweep.dir`` (default ``<fsdpcfg.run_dir>/multirun-<date-time>``), with
one run folder per launched point (``<sweep dir>/<job number>``) and the summary next to them.
"""

from __future__ import annotations

import functools
import json
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fsdpcfg.errors import ConfigError, Interrupted
from fsdpcfg.sweep.expand import expand
from fsdpcfg.sweep.preflight import PointCheck, preflight, report_failures
from fsdpcfg.sweep.summary import format_table, rank_points, write_summary

#: the status of a point a sweep interrupted before it started.
NOT_STARTED = "not started (sweep interrupted)"


def _sweep_dir_override(hydra_overrides: list[str], first: PointCheck) -> list[str]:
    if any(o.lstrip("+").startswith("hydra.sweep.dir=") for o in hydra_overrides):
        return list(hydra_overrides)
    assert first.cfg is not None  # a runnable point (ok) has its resolved config
    base = Path(first.cfg["fsdpcfg"]["run_dir"]).expanduser().absolute()
    return [*hydra_overrides, f"hydra.sweep.dir='{base / time.strftime('multirun-%Y%m%d-%H%M%S')}'"]


def _row(c: PointCheck, status: str, error: str | None = None) -> dict[str, Any]:
    return {
        "point": c.index,
        "status": status,
        "final_reward": None,
        "val_reward": None,
        "steps": None,
        "wall_s": None,
        "run_dir": None,
        "overrides": c.overrides,
        "error": error,
        "job": None,
    }


def _saved_row(c: PointCheck, job_dir: Path, since: float) -> dict[str, Any]:
    """The outcome a point's task saved in ``<job_dir>/result.json`` after ``since`` (seconds since the epoch:
    an earlier sweep's file in a reused ``hydra.sweep.dir`` does not count); :data:`NOT_STARTED` otherwise."""
    from fsdpcfg.sweep.task import RESULT_FILE

    try:
        saved = json.loads((job_dir / RESULT_FILE).read_text())
    except (OSError, ValueError):
        return _row(c, NOT_STARTED)
    ok = isinstance(saved, dict) and isinstance(saved.get("started"), (int, float)) and saved["started"] >= since
    return saved if ok else _row(c, NOT_STARTED)


def _job_row(c: PointCheck, ret: Any) -> dict[str, Any]:
    try:
        value = ret.return_value
    except Exception as e:  # Hydra's run_job itself failed (the task function never raises)
        return _row(c, "failed", f"{type(e).__name__}: {e}")
    return value if isinstance(value, dict) else _row(c, "failed", f"unexpected job result {value!r}")


def _dry_run(hl: Any, task: Any, runnable: list[PointCheck], echo: Callable[[str], None]) -> int:
    """Instantiate the launcher (the plugin imports and accepts its settings; no callback is built) and write each
    point's job folder as its job would (config.yaml, overrides.yaml, run_info.json); start nothing. A sweep
    folder that holds files fsdpcfg did not write is left as it is (the real sweep refuses it, FC731)."""
    from fsdpcfg.launch.folders import DRY_RUN_KEY, dry_run_folder
    from fsdpcfg.launch.native import write_run_config
    from fsdpcfg.launch.torchrun import format_command, torchrun_command
    from fsdpcfg.runinfo import write_run_info
    from fsdpcfg.sweep.summary import SWEEP_DIR_KEY
    from fsdpcfg.sweep.task import point_config

    hl.instantiate(task)
    base = dry_run_folder(Path(hl.sweep_dir).absolute(), echo, key=SWEEP_DIR_KEY)
    for job, c in enumerate(runnable):
        run_dir = Path(hl.sweep_dir).absolute() / str(job)
        echo(f"  job {job} (point {c.index}): {' '.join(c.overrides)} -> {run_dir}")
        if c.plan is None:  # launcher=verl: verl plans its own run
            continue
        assert c.cfg is not None  # a runnable point (ok) has its resolved config
        cfg, plan = point_config(c.cfg, run_dir, job, Path(hl.sweep_dir).name)
        folder = dry_run_folder(base / str(job), echo, key=SWEEP_DIR_KEY)  # never into a job folder holding a run
        write_run_info(folder, c.composed, plan=plan, extra={"sweep": hl.sweep_dir, DRY_RUN_KEY: True})
        echo("    " + format_command(torchrun_command(plan, str(write_run_config(cfg, folder)))))
    echo("dry run: nothing was started")
    return 0


def run_sweep(
    overrides: list[str], *, only_valid: bool = False, dry_run: bool = False, echo: Callable[[str], None] = print
) -> int:
    """Run the sweep ``overrides``; return 0 when every launched point succeeded, else 1 (with ``only_valid``,
    the points left out for failing the checks do not count). A signal (Ctrl-C, SIGTERM, SIGHUP) stops the
    running point's torchrun and the sweep: no further point starts, the summary says ``interrupted`` and the
    code is ``128 + signal``.

    Raises:
        ConfigError: a point fails the checks (each failing point and its findings printed first; nothing was
            started) unless ``only_valid``; no point passes; the launcher config cannot be composed.
        UsageError: an override that does not parse or expand.
    """
    t0 = time.perf_counter()
    exp = expand(overrides)
    n_all = len(exp.points) + len(exp.duplicates)
    echo(f"sweep: {n_all} points, {len(exp.duplicates)} duplicate(s) removed: {len(exp.points)} to check")
    for dup, idx in exp.duplicates:
        echo(f"  dropped (repeats point {idx}): {' '.join(dup)}")
    checks = preflight(exp.points, echo=echo)
    failing = report_failures(checks)
    runnable = [c for c in checks if c.ok and c.duplicate_of is None]
    if failing and not only_valid:
        raise ConfigError(
            f"{failing} of {len(checks)} sweep points fail the checks; nothing was started",
            fix=f"fix the points above, or pass --only-valid to launch the {len(runnable)} that pass",
        )
    if not runnable:
        raise ConfigError(f"none of the {len(checks)} sweep points passes the checks; nothing was started")
    hl_overrides = _sweep_dir_override(exp.hydra_overrides, runnable[0])
    from fsdpcfg.sweep._hydra import HydraLaunch
    from fsdpcfg.sweep.task import run_point

    hl = HydraLaunch(exp.kind, hl_overrides, runnable[0].overrides)
    expected = {
        " ".join(c.overrides): {"index": c.index, "overrides": c.overrides, "digest": c.digest, "sweep": hl.sweep_dir}
        for c in runnable
    }
    task = functools.partial(run_point, expected=expected, ckpt_group=Path(hl.sweep_dir).name)
    echo(
        f"checked {len(checks)} points in {time.perf_counter() - t0:.1f} s; launching {len(runnable)} with "
        f"{hl.launcher_target} into {hl.sweep_dir}"
    )
    if dry_run:
        return _dry_run(hl, task, runnable, echo)
    from fsdpcfg.paths import check_folder
    from fsdpcfg.runinfo.lock import RunLock
    from fsdpcfg.sweep.summary import SWEEP_DIR_KEY

    # one sweep per sweep folder: a second one into it would number its points 0, 1, ... over this one's
    check_folder(hl.sweep_dir, SWEEP_DIR_KEY)  # FC731 before the lock file is made there
    sweep_lock = RunLock([(SWEEP_DIR_KEY, hl.sweep_dir)], echo=echo).acquire()
    try:
        return _launch_and_summarise(hl, task, runnable, checks, overrides, t0, echo)
    finally:
        sweep_lock.release()


def _launch_and_summarise(
    hl: Any,
    task: Any,
    runnable: list[PointCheck],
    checks: list[PointCheck],
    overrides: list[str],
    t0: float,
    echo: Callable[[str], None],
) -> int:
    """Launch the ``runnable`` points with ``hl`` (holding the sweep folder), write the summary, return the exit
    code (1 when a point failed, ``128 + signal`` when interrupted)."""
    stop: Interrupted | None = None
    launched_at = time.time()
    try:
        returns = hl.launch([c.overrides for c in runnable], task)
        rows = [_job_row(c, r) for c, r in zip(runnable, returns, strict=True)]
    except (Interrupted, KeyboardInterrupt) as e:  # Ctrl-C / SIGTERM: the point running was stopped, no more start
        stop = e if isinstance(e, Interrupted) else Interrupted(signal.SIGINT)
        rows = [_saved_row(c, Path(hl.sweep_dir) / str(job), launched_at) for job, c in enumerate(runnable)]
    launched_ok = stop is None and len(rows) == len(runnable) and all(r["status"] == "ok" for r in rows)
    for c in checks:
        if c.duplicate_of is not None:
            rows.append(_row(c, f"duplicate of point {c.duplicate_of}"))
        elif not c.ok:
            rows.append(
                _row(
                    c,
                    "not started (fails the checks)",
                    c.error or "; ".join(f"[{f.rule}] {f.message}" for f in c.findings if f.severity == "error"),
                )
            )
    rows.sort(key=lambda r: (r["point"] is None, r["point"]))
    rank_points(rows)
    total = round(time.perf_counter() - t0, 2)
    json_path, csv_path = write_summary(
        hl.sweep_dir,
        rows,
        launcher=hl.launcher_target,
        total_wall_s=total,
        overrides=list(overrides),
        interrupted=stop.name if stop else None,
    )
    echo(format_table(rows))
    for r in rows:
        if r["status"] == "failed":
            echo(f"point {r['point']} failed: {r['error']}")
    if stop is not None:
        left = sum(r["status"] == NOT_STARTED for r in rows)
        echo(f"sweep interrupted by {stop.name}: {left} point(s) not started")
    echo(f"summary: {json_path} and {csv_path} ({total:.1f} s in all)")
    if stop is not None:
        return stop.exit_code
    return 0 if launched_ok else 1
