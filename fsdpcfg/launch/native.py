"""launcher=native: write the resolved config into the run folder and start torchrun on the built-in loop.

    <fsdpcfg.run_dir>/config.yaml      the resolved config (interpolations resolved, absolute paths)
    python -m torch.distributed.run --nnodes N --nproc_per_node P --standalone -m <plan.entry> <that file>

``plan.entry`` is the trainer of the run kind (``fsdpcfg.train``: GRPO, ``fsdpcfg.train.sft``: SFT;
:mod:`fsdpcfg.runkind`). What must hold before (absolute folders, the model, the data, the checkpoint to resume,
the offline assets built) is :func:`fsdpcfg.launch.preflight.preflight`'s; this module only locks the folders,
writes and runs. A mistake the workers find while starting (for example a prompt longer than
``data.max_prompt_length``) is written by rank 0 to ``<run_dir>/error.txt`` and reported here without a traceback.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fsdpcfg import paths, yamlio
from fsdpcfg.errors import ConfigError
from fsdpcfg.launch.torchrun import format_command, torchrun_command
from fsdpcfg.native.rank_faults import stopped_ranks
from fsdpcfg.plan import Plan

if TYPE_CHECKING:
    from fsdpcfg.plan.sft import SftPlan

#: file in the run folder where a worker reports a ConfigError (read back by :func:`launch_native`).
ERROR_FILE = "error.txt"


def write_run_config(cfg: dict[str, Any], folder: str | Path | None = None, *, composed: Any = None) -> Path:
    """Write ``cfg`` to ``<folder>/config.yaml`` (default ``fsdpcfg.run_dir``) atomically (temp file, fsync,
    rename); return the path. Secrets are never written: see :func:`fsdpcfg.redact`. With the ``composed`` config
    the run was made from, the file starts with the run and checkpoint folders as they were given
    (:func:`fsdpcfg.compose.config_file.given_header`, comments the ranks do not read): a run started from this
    file with another ``trainer.experiment_name`` gets its own folders.

    Raises:
        WriteFault: the folder cannot be written (full, read-only, no permission).
    """
    from fsdpcfg.compose.config_file import given_header
    from fsdpcfg.redact import redact
    from fsdpcfg.runinfo.faults import write_file_in

    cfg = redact(cfg)
    run_dir = Path(folder if folder is not None else cfg["fsdpcfg"]["run_dir"]).expanduser()
    header = given_header(composed.to_container(resolve=False)) if composed is not None else ""
    return write_file_in(run_dir, "config.yaml", header + yamlio.dump(cfg), "fsdpcfg.run_dir")


def launch_native(
    cfg: dict[str, Any],
    *,
    plan: Plan | SftPlan,
    dry_run: bool = False,
    echo: Callable[[str], None] = print,
    composed: Any = None,
    run_info: dict[str, Any] | None = None,
) -> int:
    """Start the native loop on the resolved config ``cfg`` as ``plan`` (:func:`fsdpcfg.plan.plan_run`) says and
    return torchrun's exit code (0 for a dry run). ``cfg`` has been through :func:`fsdpcfg.launch.preflight.
    preflight` (absolute folders; the model, data and checkpoint checked).

    The run folder and the checkpoint folder are locked (:func:`fsdpcfg.launch.folders.hold_folders`) before
    anything is written into them and until torchrun has exited, and both are checked writable first. With
    ``composed``, ``run_info.json`` and ``overrides.yaml`` are written too (``run_info``: extra entries). A dry
    run writes into the run folder only when it holds no run (:func:`fsdpcfg.launch.folders.dry_run_folder`).

    torchrun runs under :func:`fsdpcfg.launch.signals.run_forwarding`: a SIGINT/SIGTERM/SIGHUP here stops it
    and its ranks, and the ranks die with this process whatever kills it.

    Raises:
        Interrupted: a signal stopped the run (exit code ``128 + signal``).
        ConfigError: a folder is in use by another run (``FolderBusy``) or cannot be written (``WriteFault``),
            or a worker reported a config mistake or a fault while running (read from ``<run_dir>/error.txt``).
    """
    from fsdpcfg.launch.folders import DRY_RUN_KEY, dry_run_folder, hold_folders
    from fsdpcfg.runinfo import write_run_info

    echo("plan:\n" + plan.describe())
    run_dir = Path(cfg["fsdpcfg"]["run_dir"])
    if dry_run:
        folder = dry_run_folder(run_dir, echo)
        if composed is not None:
            write_run_info(folder, composed, plan=plan, extra={**(run_info or {}), DRY_RUN_KEY: True})
        _show_command(cfg, plan, write_run_config(cfg, folder, composed=composed), echo)
        return 0
    with hold_folders(cfg, echo) as lock:
        if composed is not None:
            write_run_info(run_dir, composed, plan=plan, extra=run_info)
        config_path = write_run_config(cfg, composed=composed)
        cmd = _show_command(cfg, plan, config_path, echo)
        err = paths.owned(run_dir, ERROR_FILE, key="fsdpcfg.run_dir")
        err.unlink(missing_ok=True)
        sys.stdout.flush()
        from fsdpcfg.launch.signals import run_forwarding

        # SIGINT/SIGTERM/SIGHUP are forwarded and waited for; torchrun and the ranks die with this process.
        # torchrun shares the locks: they stay held while it lives, even if this process is killed first
        rc = run_forwarding(
            cmd, {**os.environ, **lock.env(), "FSDPCFG_ERROR_FILE": str(err)}, say=echo, pass_fds=tuple(lock.pass_fds())
        )
        if err.is_file():
            text = err.read_text().strip()
            stopped = stopped_ranks(run_dir)
            if stopped:  # where the ranks torchrun had to stop stood, before the fix line
                message, arrow, fix = text.partition("\n  -> ")
                text = f"{message}\nranks still running when the run was stopped: {'; '.join(stopped)}{arrow}{fix}"
            raise ConfigError(text)
    return rc


def _show_command(
    cfg: dict[str, Any], plan: Plan | SftPlan, config_path: Path, echo: Callable[[str], None]
) -> list[str]:
    """Print the run folder and the torchrun command on ``config_path`` (the trainer of ``plan``'s kind); return
    the command."""
    cmd = torchrun_command(plan, str(config_path))
    echo(f"run folder: {cfg['fsdpcfg']['run_dir']}")
    echo(format_command(cmd))
    return cmd
