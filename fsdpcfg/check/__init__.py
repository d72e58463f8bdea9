"""The pre-flight checker (stage 2: the schema and the rules over a composed config) and its inputs.

    from fsdpcfg.check import check_config, check_overrides, has_errors
    findings = check_overrides(["+recipe=qwen_grpo", "actor_rollout_ref.actor.strategy=fsdp3"])

Modules:

* :mod:`fsdpcfg.check.config`: the schema and every rule over a composed config (the API re-exported here).
* :mod:`fsdpcfg.check.sources`: the inputs other than overrides (recipe files, config dumps, run scripts).
* :mod:`fsdpcfg.check.runscript`: the run-script reader (bash's grammar; nothing runs).
* :mod:`fsdpcfg.check.verl_opinion`: the second opinion, verl's own config-time validation in a subprocess.
* :mod:`fsdpcfg.check.key_advice`: the schema's answers to an unknown key's error during composition
  (:data:`~fsdpcfg.check.key_advice.KEY_ADVICE`, handed to :func:`fsdpcfg.compose.compose`).
* :mod:`fsdpcfg.check.to_verl`: the config translated into verl's tree (what the second opinion hands verl, and
  what ``launcher=verl`` and ``fsdpcfg export`` write).

The names below are loaded from :mod:`fsdpcfg.check.config` on first use, so importing a subpackage (the
verl worker, the run-script reader) does not load the checker.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fsdpcfg.check.config import (
        check_config,
        check_overrides,
        compose_error_finding,
        compose_for_check,
        has_errors,
        load_rule_modules,
        resolve,
        sort_findings,
        unexpected_compose_finding,
    )

__all__ = [
    "check_config",
    "check_overrides",
    "compose_error_finding",
    "compose_for_check",
    "has_errors",
    "load_rule_modules",
    "resolve",
    "sort_findings",
    "unexpected_compose_finding",
]


def __getattr__(name: str) -> Any:
    """The public API of :mod:`fsdpcfg.check.config`, imported on first use."""
    if name in __all__:
        return getattr(importlib.import_module("fsdpcfg.check.config"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
