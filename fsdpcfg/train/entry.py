"""The torchrun entry shared by the RL loop and the SFT trainer: run one rank, report user errors without a
traceback (rank 0 writes them to ``$FSDPCFG_ERROR_FILE`` when the launcher set one, else prints them)."""

from __future__ import annotations

import importlib
import os
import sys
from typing import Callable


def run_rank(module: str, argv: list[str], prog: str) -> int:
    """Run ``<module>.main(config_path)`` for ``argv == [config_path]`` and return its exit code.

    Args:
        module: the module holding ``main(config_path: str) -> int`` (imported only here, after arguments).
        argv: the command-line arguments after the module name.
        prog: how the command is spelled in the usage message (``python -m fsdpcfg.train``).

    Returns 2 on a usage mistake, the :class:`fsdpcfg.errors.ConfigError`'s exit code on a user mistake.
    """
    if len(argv) != 1:
        print(f"usage: {prog} CONFIG.yaml (started by torchrun; use `python -m fsdpcfg`)", file=sys.stderr)
        return 2
    from fsdpcfg.errors import ConfigError
    from fsdpcfg.launch._signals import die_with_parent
    from fsdpcfg.runinfo.redact import filter_streams, write_private

    die_with_parent()  # torchrun starts ranks in their own sessions: they die with torchrun, whatever kills it

    filter_streams()  # this rank's own output holds no secret either (fsdpcfg.runinfo.redact)
    _register_secrets(argv[0])
    try:
        main: Callable[[str], int] = importlib.import_module(module).main
        return main(argv[0])
    except ConfigError as e:
        if os.environ.get("RANK", "0") == "0":
            target = os.environ.get("FSDPCFG_ERROR_FILE")
            if target:
                write_private(target, str(e) + "\n")
            else:
                print(f"fsdpcfg: error: {e}", file=sys.stderr)
        return e.exit_code


def _register_secrets(config_path: str) -> None:
    """Register the secrets the config file refers to (``${oc.env:NAME}`` of secret keys) for the scrubber."""
    import yaml

    from fsdpcfg.runinfo.redact import register_config

    try:
        register_config(yaml.safe_load(open(config_path).read()) or {})
    except (OSError, ValueError, yaml.YAMLError, AttributeError):
        pass  # the rank's own loading reports an unreadable config
