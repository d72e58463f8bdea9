"""Ask the rules about a plain resolved config: how the plan and a rank, holding a config as nested dicts (not a
composed config), refuse an invalid one without a second copy of any rule.

A rule (:mod:`fsdpcfg.rules`) is the only place that decides a config is invalid. :func:`require` runs the
named rules on ``cfg`` and raises the first error as a :class:`fsdpcfg.errors.ConfigError` naming the rule,
its keys and its fix; the numbers the plan derives afterwards (:func:`fsdpcfg.plan.make_plan`) are then
whole. Provenance is not known here (every value reads as "from the config").
"""

from __future__ import annotations

import copy
import importlib
from collections.abc import Iterable
from typing import Any

from fsdpcfg.errors import ConfigError
from fsdpcfg.rules.finding import Finding


class _FromConfig:
    kind = "config"

    def __str__(self) -> str:
        return "the config"


class _NoProvenance:
    """Every value's source is the config itself (its file and line are not known here)."""

    def source_of(self, key: str) -> _FromConfig:
        return _FromConfig()


class PlainConfig:
    """A stand-in for :class:`fsdpcfg.compose.Composed` around resolved nested dicts ``cfg`` of ``kind``
    (``ppo``/``sft``): no provenance, no ``+``/``~`` history."""

    def __init__(self, cfg: dict[str, Any], kind: str = "ppo") -> None:
        self.cfg = cfg
        self.kind = kind
        self.provenance = _NoProvenance()

    def to_container(self, resolve: bool = True) -> dict[str, Any]:
        """A copy of the config (already resolved: ``resolve`` changes nothing)."""
        return copy.deepcopy(self.cfg)


def findings(cfg: dict[str, Any], rule_ids: Iterable[str], kind: str = "ppo") -> list[Finding]:
    """The findings of rules ``rule_ids`` (``"FC201"`` ...) on the resolved config ``cfg``, in the order given.

    Raises:
        KeyError: an ID that names no registered rule.
    """
    from fsdpcfg.rules.context import Context
    from fsdpcfg.rules.registry import RULES

    _load_rules()
    ctx = Context(PlainConfig(cfg, kind), cfg)  # type: ignore[arg-type]
    out: list[Finding] = []
    for rid in rule_ids:
        out.extend(RULES[rid].fn(ctx) or [])
    return out


def require(cfg: dict[str, Any], rule_ids: Iterable[str], kind: str = "ppo") -> None:
    """Raise the first error of rules ``rule_ids`` on ``cfg`` (warnings and infos pass).

    Raises:
        ConfigError: the rule's message and rule ID (its derivation when it has one), its first key, its fix.
    """
    for f in findings(cfg, rule_ids, kind):
        if f.severity == "error":
            why = f"{f.rule}; {f.derivation}" if f.derivation else f.rule
            raise ConfigError(f"{f.message} ({why})", key=f.keys[0] if f.keys else None, fix=f.fix)


_RULE_MODULES = ("batch", "launcher_rules", "parallel", "patch_rules", "schema_rules", "sft_rules")


def _load_rules() -> None:
    """Import the rule modules :func:`require`'s callers name rules of (registering them)."""
    for name in _RULE_MODULES:
        importlib.import_module(f"fsdpcfg.rules.{name}")
