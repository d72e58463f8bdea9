"""The torchrun entry shared by the RL loop and the SFT trainer: run one rank, report user errors and machine
faults without a traceback.

A :class:`fsdpcfg.errors.ConfigError` (a config mistake found while starting, a folder held by another run, a
``WriteFault`` such as a full disk, corrupt data) ends the rank with one ``fsdpcfg: error:`` message. Under the
launcher (``$FSDPCFG_ERROR_FILE`` set) the first rank to fail writes the message there (rank 0 for a config
mistake, which every rank finds alike; any rank for a fault) and exits with code 0, so torchrun adds no report
of its own; the launcher turns the file into exit code 1. A rank whose collective fails because a peer has
reported such an error exits quietly too. The traceback of a fault goes to ``<run_dir>/fault-rank<R>.log``.
Started directly (no launcher), rank 0 prints the message and the rank exits with the error's exit code.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from fsdpcfg.native.rank_faults import STACK_FILE, TIMEOUT_KEY, collective_timeout


def read_resolved(config_path: str | Path) -> Any:
    """The resolved config file a rank runs, as ``yaml.safe_load`` returns it, parsed by libyaml when PyYAML has
    it (``yaml.CSafeLoader``: the same resolvers and constructors). A rank reads the file at several places before
    it trains (the secrets, the stack file, rank 0's preflight, the trainer); the pure-Python parser takes 0.1-0.3 s
    a read of a GRPO config, libyaml about a tenth of that.

    Raises:
        OSError: the file cannot be read.
        yaml.YAMLError: it is not YAML.
    """
    import yaml

    return yaml.load(Path(config_path).read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def _is_timeout(e: BaseException) -> bool:
    """True for a collective that gave up waiting: gloo's "Timed out waiting Nms for recv operation", NCCL's
    watchdog "collective operation timeout"."""
    text = str(e)
    return "Timed out waiting" in text or "operation timeout" in text or "Watchdog caught collective" in text


def _timeout_error(config_path: str, rank: int, e: BaseException):
    """The message of a collective that timed out on this rank (a ``ConfigError`` naming :data:`TIMEOUT_KEY`)."""
    from fsdpcfg.errors import ConfigError

    resolved = read_resolved(config_path) or {}
    seconds = collective_timeout(resolved)
    run_dir = resolved["fsdpcfg"]["run_dir"]  # a rank runs a resolved config, which has every key
    return ConfigError(
        f"rank {rank} waited {seconds} s for the other ranks in a collective ({TIMEOUT_KEY}={seconds}) and gave up: "
        f"another rank stopped answering, or is slower than that ({str(e).strip().splitlines()[0][:200]})",
        key=TIMEOUT_KEY,
        fix=f"see where the ranks that were still running stood: {Path(run_dir) / STACK_FILE.format(rank='N')} "
        f"(their stacks when the run was stopped); raise {TIMEOUT_KEY} if a step really takes that long",
    )


def _keep_stacks(config_path: str, rank: int) -> Path | None:
    """Dump every thread's Python stack to ``<run_dir>/stack-rank<R>.log`` when this rank gets SIGTERM (torchrun
    stops the remaining ranks so when one fails: a rank that hung shows where), then let SIGTERM end it as
    before (:func:`faulthandler.register` with ``chain``). Returns the file (removed again by :func:`run_rank` on
    any ending but SIGTERM), or ``None`` when it cannot be made."""
    import faulthandler
    import signal

    from fsdpcfg.paths import owned

    try:
        run_dir = read_resolved(config_path)["fsdpcfg"]["run_dir"]
        path = owned(run_dir, STACK_FILE.format(rank=rank), key="fsdpcfg.run_dir")
        fh = open(path, "w")  # noqa: SIM115 -- held open for the handler until the process ends
        faulthandler.register(signal.SIGTERM, file=fh, all_threads=True, chain=True)
    except Exception:  # no run folder to write (a rank started by hand on a bad config): no stack, nothing else
        return None
    return path


def _report(e: Exception, print_here: bool) -> int:
    """Record ``e`` as the run's error in ``$FSDPCFG_ERROR_FILE`` (the first rank to fail writes it), or print
    it when ``print_here`` and there is no such file; return the rank's exit code."""
    from fsdpcfg.redact import scrub_text

    target = os.environ.get("FSDPCFG_ERROR_FILE")
    if target:
        with contextlib.suppress(OSError):  # FileExistsError: a peer was first
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            with os.fdopen(fd, "w") as fh:
                fh.write(scrub_text(str(e)) + "\n")
        if Path(target).is_file():
            return 0
        print_here = True  # the run folder itself cannot be written: say it here
    if print_here:
        print(f"fsdpcfg: error: {e}", file=sys.stderr, flush=True)
    return getattr(e, "exit_code", 1)


def _log_detail(config_path: str, rank: int) -> None:
    """Write the current exception's traceback to ``<run_dir>/fault-rank<R>.log`` (best effort)."""
    with contextlib.suppress(Exception):
        from fsdpcfg.paths import owned

        run_dir = read_resolved(config_path)["fsdpcfg"]["run_dir"]
        from fsdpcfg.redact import write_private

        write_private(owned(run_dir, f"fault-rank{rank}.log", key="fsdpcfg.run_dir"), traceback.format_exc())


def _rank0_preflight(config_path: str) -> None:
    """Rank 0, before anything is built: hold the run and checkpoint folders (a no-op under the launcher, which
    holds them) and refuse to resume a checkpoint trained from another model (the launcher checked it too; a
    run started directly with torchrun is checked here)."""
    from fsdpcfg.native.ckpt_layout import check_resume_layout
    from fsdpcfg.runinfo.ckpt_identity import check_resume_identity
    from fsdpcfg.runinfo.lock import hold_for_rank
    from fsdpcfg.schema import parse_config

    resolved = read_resolved(config_path)
    hold_for_rank(resolved)
    if not os.environ.get("FSDPCFG_ERROR_FILE"):  # under the launcher this was checked before torchrun
        check_config_file(config_path)  # every finding at once, before the schema's first error alone
        cfg = parse_config(resolved)
        check_resume_identity(cfg, check_resume_layout(cfg.trainer), echo=lambda m: print(m, flush=True))


def check_config_file(config_path: str) -> None:
    """Run ``fsdpcfg check``'s rules on the config file (:func:`fsdpcfg.check.sources.check_yaml_file`, the
    same functions the launcher runs before torchrun), for a rank started directly: a config no rule accepts
    is refused before anything is built, with every error found, rather than by the rank's own code later.

    Raises:
        ConfigError: the errors the rules found (rule, message; the first error's key and fix).
    """
    from fsdpcfg.check.sources import check_yaml_file
    from fsdpcfg.errors import ConfigError

    errors = [f for f in check_yaml_file(Path(config_path)).findings if f.severity == "error"]
    if errors:
        first = errors[0]
        raise ConfigError(
            f"{config_path} does not pass `fsdpcfg check` ({len(errors)} error(s)):\n"
            + "\n".join(f"  {f.rule} {f.message}" for f in errors),
            key=first.keys[0] if first.keys else None,
            fix=f"{first.fix} (`python -m fsdpcfg check {config_path}` lists every finding)",
        )


def run_rank(module: str, argv: list[str], prog: str) -> int:
    """Run ``<module>.main(config_path)`` for ``argv == [config_path]`` and return its exit code.

    Args:
        module: the module holding ``main(config_path: str) -> int`` (imported only here, after arguments).
        argv: the command-line arguments after the module name.
        prog: how the command is spelled in the usage message (``python -m fsdpcfg.train``).

    Returns 2 on a usage mistake; on a user mistake or a machine fault, 0 under the launcher (which reports it)
    and the :class:`fsdpcfg.errors.ConfigError`'s exit code otherwise.
    """
    if len(argv) != 1:
        print(f"usage: {prog} CONFIG.yaml (started by torchrun; use `python -m fsdpcfg`)", file=sys.stderr)
        return 2
    from fsdpcfg.errors import ConfigError
    from fsdpcfg.launch.signals import die_with_parent
    from fsdpcfg.redact import filter_streams
    from fsdpcfg.runinfo.faults import WriteFault

    die_with_parent()  # torchrun starts ranks in their own sessions: they die with torchrun, whatever kills it
    filter_streams()  # this rank's own output holds no secret either (fsdpcfg.redact)
    _register_secrets(argv[0])
    rank = int(os.environ.get("RANK", "0"))
    stacks = _keep_stacks(argv[0], rank)
    try:
        if rank == 0:
            _rank0_preflight(argv[0])
        main: Callable[[str], int] = importlib.import_module(module).main
        return main(argv[0])
    except WriteFault as e:  # a fault of this rank's machine: this rank may be the only one to see it
        _log_detail(argv[0], rank)
        return _report(e, print_here=True)
    except ConfigError as e:  # a config mistake every rank finds alike: rank 0 says it
        return _report(e, print_here=rank == 0)
    except RuntimeError as e:
        if _is_timeout(e):  # a peer stopped answering: say so, and fail so that torchrun stops the others
            _log_detail(argv[0], rank)
            _report(_timeout_error(argv[0], rank, e), print_here=True)
            return 1
        err = os.environ.get("FSDPCFG_ERROR_FILE")
        if err and Path(err).is_file():  # a peer reported its error and left: this collective failed for it
            return 0
        raise
    finally:
        if stacks is not None:  # this rank ended by itself: it has no stack to show
            with contextlib.suppress(OSError):
                stacks.unlink()


def exit_rank(code: int) -> NoReturn:
    """End this rank's process with ``code`` once its work is done: flush ``sys.stdout``/``sys.stderr`` and the
    ``logging`` handlers, then leave through ``os._exit``, skipping the interpreter's finalization and C++ static
    destructors. By then the process group is closed (:func:`close_process_group`) and every file the rank writes
    is closed by its own writer (checkpoints, metrics, trackers). A rank of a run that had finished was seen to
    abort in that teardown on a loaded CI machine ("terminate called without an active exception", SIGABRT after
    the last step's metrics): torchrun then killed its peer and failed the run. torch's own atexit clean-up of
    process groups was tried and abandoned upstream (pytorch/pytorch#179291), so the rank does not rely on it.
    """
    import logging

    with contextlib.suppress(Exception):
        logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def close_process_group(clean: bool) -> None:
    """Leave torch.distributed at the end of a rank: after a barrier when every rank finished (``clean``), at
    once otherwise (a rank that failed alone must not wait in a barrier its peers never reach, nor pair its
    barrier with one of theirs)."""
    import torch.distributed as dist

    if dist.is_initialized():
        if clean:
            dist.barrier()
        dist.destroy_process_group()


def _register_secrets(config_path: str) -> None:
    """Register the secrets the config file refers to (``${oc.env:NAME}`` of secret keys) for the scrubber."""
    import yaml

    from fsdpcfg.redact import register_config

    try:
        register_config(read_resolved(config_path) or {})
    except (OSError, ValueError, yaml.YAMLError, AttributeError):
        pass  # the rank's own loading reports an unreadable config
