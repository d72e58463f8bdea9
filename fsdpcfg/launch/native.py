"""launcher=native: write the resolved config into the run folder and start torchrun on the built-in loop.

    <fsdpcfg.run_dir>/config.yaml      the resolved config (interpolations resolved, absolute paths)
    python -m torch.distributed.run --nnodes N --nproc_per_node P --standalone -m fsdpcfg.train <that file>

The offline model assets a config points at (``$FSDPCFG_HOME/models/<name>``) are built first when missing.
A mistake the workers find while starting (for example a prompt longer than ``data.max_prompt_length``) is
written by rank 0 to ``<run_dir>/error.txt`` and reported here without a traceback.
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
from fsdpcfg.plan import Plan, make_plan

if TYPE_CHECKING:
    from fsdpcfg.plan.sft import SftPlan

#: file in the run folder where a worker reports a ConfigError (read back by :func:`launch_native`).
ERROR_FILE = "error.txt"


def ensure_assets(cfg: dict[str, Any], echo: Callable[[str], None] = print) -> list[Path]:
    """Build the offline assets the config's model and tokenizer paths point at (``$FSDPCFG_HOME/models/X``)
    when they are missing; return their folders. Paths elsewhere are left alone.

    Raises:
        ConfigError: the path names an asset folder that fsdpcfg does not know how to build.
    """
    models = (paths.home_dir() / "models").resolve()
    sft = cfg.get("fsdpcfg", {}).get("kind") == "sft"
    model = cfg["model"] if sft else cfg["actor_rollout_ref"]["model"]
    built = []
    for key in ("path", "tokenizer_path"):
        value = model[key]
        if not value:
            continue
        p = Path(str(value)).expanduser()
        if p.is_absolute() and p.resolve().parent == models:
            from fsdpcfg import assets

            if p.name not in assets.SPECS:
                if p.is_dir():
                    continue
                raise ConfigError(
                    f"{p} does not exist and is not an asset fsdpcfg can build (known: {', '.join(assets.SPECS)})",
                    key=f"{'' if sft else 'actor_rollout_ref.'}model.{key}",
                    value=str(value),
                    fix="choose model=tiny_qwen2 or point it at a model folder",
                )
            built.append(assets.ensure(p.name))
    return built


def write_run_config(cfg: dict[str, Any], folder: str | Path | None = None) -> Path:
    """Write ``cfg`` to ``<folder>/config.yaml`` (default ``fsdpcfg.run_dir``) atomically (temp file, fsync,
    rename); return the path. Secrets are never written: see :func:`fsdpcfg.redact`.

    Raises:
        WriteFault: the folder cannot be written (full, read-only, no permission).
    """
    from fsdpcfg.redact import redact
    from fsdpcfg.runinfo.faults import write_file_in

    cfg = redact(cfg)
    run_dir = Path(folder if folder is not None else cfg["fsdpcfg"]["run_dir"]).expanduser()
    return write_file_in(run_dir, "config.yaml", yamlio.dump(cfg), "fsdpcfg.run_dir")


def absolutise(cfg: dict[str, Any]) -> dict[str, Any]:
    """Make the run folder and checkpoint folder absolute (relative to the current directory), so the workers
    and the saved config mean the same folders wherever they are read."""
    cfg["fsdpcfg"]["run_dir"] = str(Path(cfg["fsdpcfg"]["run_dir"]).expanduser().absolute())
    cfg["trainer"]["default_local_dir"] = str(Path(cfg["trainer"]["default_local_dir"]).expanduser().absolute())
    return cfg


def require_model(cfg: dict[str, Any]) -> None:
    """Refuse, before torchrun starts, a model path the workers could not load: a missing folder, a folder
    without config.json, or a hub id that is neither cached nor reachable (the message names the offline
    option ``model=tiny_qwen2``), or a ``${fsdpcfg_latest:ROOT}`` whose run has not saved a checkpoint yet (the
    message names the run to start first). The tokenizer path, when set, must exist the same way.

    Raises:
        ConfigError: naming ``actor_rollout_ref.model.path`` (``model.path`` for SFT) and the fix.
    """
    from fsdpcfg.rules.chain import refuse_pending_checkpoint
    from fsdpcfg.schema.model import require_model_path

    sft = cfg.get("fsdpcfg", {}).get("kind") == "sft"
    refuse_pending_checkpoint(cfg, "sft" if sft else "ppo")  # ${fsdpcfg_latest:ROOT} before ROOT has one (FC690)
    model = cfg["model"] if sft else cfg["actor_rollout_ref"]["model"]
    prefix = "" if sft else "actor_rollout_ref."
    for key in ("path", "tokenizer_path"):
        if key == "tokenizer_path" and not model.get(key):
            continue
        try:
            require_model_path(model[key])
        except ConfigError as e:
            e.key = f"{prefix}model.{key}"
            raise


def require_data(cfg: dict[str, Any]) -> None:
    """Refuse, before torchrun starts, training data files that do not exist on this machine.

    Raises:
        ConfigError: naming ``data.train_files`` and the missing paths.
    """
    from fsdpcfg.rules.data_files import missing_files

    missing = missing_files(cfg["data"]["train_files"])
    if missing:
        raise ConfigError(
            f"no such file: {', '.join(missing)}",
            key="data.train_files",
            value=missing[0],
            fix="point data.train_files at a jsonl or parquet file in verl's format, or choose a "
            "shipped set (data=gsm8k, data=arith)",
        )


def launch_native(
    cfg: dict[str, Any],
    *,
    plan: Plan | SftPlan | None = None,
    dry_run: bool = False,
    echo: Callable[[str], None] = print,
    composed: Any = None,
    run_info: dict[str, Any] | None = None,
) -> int:
    """Start the native loop on the resolved config ``cfg`` and return torchrun's exit code (0 for a dry run).

    The run folder and the checkpoint folder are locked (:func:`fsdpcfg.launch.folders.hold_folders`) before
    anything is written into them and until torchrun has exited, and both are checked writable first. With
    ``composed``, ``run_info.json`` and ``overrides.yaml`` are written too (``run_info``: extra entries). A dry
    run writes into the run folder only when it holds no run (:func:`fsdpcfg.launch.folders.dry_run_folder`).

    torchrun runs under :func:`fsdpcfg.launch.signals.run_forwarding`: a SIGINT/SIGTERM/SIGHUP here stops it
    and its ranks, and the ranks die with this process whatever kills it.

    Raises:
        Interrupted: a signal stopped the run (exit code ``128 + signal``).
        ConfigError: the plan cannot be made (batch sizes), an asset cannot be built, a folder is in use by
            another run (``FolderBusy``) or cannot be written (``WriteFault``), or a worker reported a config
            mistake or a fault while running (read from ``<run_dir>/error.txt``).
    """
    from fsdpcfg.launch.folders import DRY_RUN_KEY, dry_run_folder, hold_folders
    from fsdpcfg.runinfo import write_run_info

    cfg = absolutise(cfg)
    if plan is None and cfg["fsdpcfg"].get("kind") == "sft":
        from fsdpcfg.plan.sft import make_sft_plan

        plan = make_sft_plan(cfg)
    plan = plan or make_plan(cfg)
    echo("plan:\n" + plan.describe())
    run_dir = Path(cfg["fsdpcfg"]["run_dir"])
    if dry_run:
        folder = dry_run_folder(run_dir, echo)
        if composed is not None:
            write_run_info(folder, composed, plan=plan, extra={**(run_info or {}), DRY_RUN_KEY: True})
        _show_command(cfg, plan, write_run_config(cfg, folder), echo)
        return 0
    ensure_assets(cfg, echo)
    require_model(cfg)
    require_data(cfg)
    with hold_folders(cfg, echo) as lock:
        if composed is not None:
            write_run_info(run_dir, composed, plan=plan, extra=run_info)
        config_path = write_run_config(cfg)
        cmd = _show_command(cfg, plan, config_path, echo)
        err = paths.within(run_dir, ERROR_FILE)
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
            raise ConfigError(text)
    return rc


def _show_command(
    cfg: dict[str, Any], plan: Plan | SftPlan, config_path: Path, echo: Callable[[str], None]
) -> list[str]:
    """Print the run folder and the torchrun command on ``config_path``; return the command."""
    cmd = torchrun_command(plan, str(config_path))
    if cfg["fsdpcfg"].get("kind") == "sft":  # the native SFT trainer's entry instead of the GRPO loop's
        cmd[cmd.index("fsdpcfg.train")] = "fsdpcfg.train.sft"
    echo(f"run folder: {cfg['fsdpcfg']['run_dir']}")
    echo(format_command(cmd))
    return cmd
