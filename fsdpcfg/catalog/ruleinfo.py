"""Everything ``explain RULE_ID`` and the reference page show about a rule: the table entry, its source
location, and its failing example run through the real checker."""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field
from pathlib import Path

from fsdpcfg import paths

#: A rule ID as the registry spells it.
RULE_ID = re.compile(r"^FC\d{3}$", re.IGNORECASE)
#: ``<Qwen/Qwen-7B folder>`` in an example: one of the real model folders shipped in fsdpcfg/data/model_configs.
_FOLDER = re.compile(r"<([^<>]+?) folder>")
#: Recipe an example without ``+recipe=`` applies to.
DEFAULT_RECIPE = "qwen_grpo"


def rules() -> dict:
    """Return the rule table with every rule module imported (``RULES``, by ID)."""
    from fsdpcfg.check import load_rule_modules
    from fsdpcfg.rules.registry import RULES

    load_rule_modules()
    return dict(sorted(RULES.items()))


def source_of(rule) -> str:
    """Return ``path:line (function)`` of a rule's function, the path relative to the repository."""
    fn = inspect.unwrap(rule.fn)
    try:
        path = Path(inspect.getsourcefile(fn) or "")
        line = inspect.getsourcelines(fn)[1]
    except (OSError, TypeError):
        return fn.__qualname__
    try:
        path = path.resolve().relative_to(paths.REPO_DIR)
    except ValueError:
        pass
    return f"{path}:{line} ({fn.__qualname__})"


def model_folder(name: str) -> Path | None:
    """Return the shipped model-config folder an example's ``<NAME folder>`` names, or ``None``."""
    root = paths.data_dir() / "model_configs"
    flat = name.replace("/", "__")
    for d in sorted(p for p in root.iterdir() if p.is_dir()):
        if d.name == flat or d.name.endswith("__" + flat) or d.name.split("__")[1:2] == [flat]:
            return d
    return None


def example_overrides(rule) -> list[str]:
    """Return the rule's example as runnable overrides: on ``+recipe=qwen_grpo`` unless it names a recipe,
    ``<NAME folder>`` replaced by the shipped model folder. Empty when the rule has no example."""
    if not rule.example:
        return []
    out = []
    for o in rule.example:
        m = _FOLDER.search(o)
        if m and (folder := model_folder(m.group(1))) is not None:
            o = o[: m.start()] + str(folder) + o[m.end() :]
        out.append(o)
    if not any(o.startswith(("+recipe=", "recipe=")) for o in out):
        out.insert(0, f"+recipe={DEFAULT_RECIPE}")
    return out


@dataclass
class ExampleRun:
    """The findings of a rule's example.

    Attributes:
        overrides: what was checked.
        own: the findings of the rule itself (empty when the example did not trigger it).
        others: the findings of other rules on the same config.
        error: why the example could not be checked, if it could not.
    """

    overrides: list[str]
    own: list = field(default_factory=list)
    others: list = field(default_factory=list)
    error: str | None = None


def run_example(rule) -> ExampleRun | None:
    """Check the rule's example with :func:`fsdpcfg.check.check_overrides`; ``None`` when it has none."""
    from fsdpcfg.check import check_overrides
    from fsdpcfg.errors import ConfigError

    overrides = example_overrides(rule)
    if not overrides:
        return None
    try:
        findings = check_overrides(overrides)
    except ConfigError as e:
        return ExampleRun(overrides, error=str(e))
    return ExampleRun(overrides, [f for f in findings if f.rule == rule.id], [f for f in findings if f.rule != rule.id])
