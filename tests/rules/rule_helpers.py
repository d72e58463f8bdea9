"""Helpers for rule unit tests: compose a config with overrides and run one rule on it.

A module of its own, not conftest.py: several test folders have a conftest, and `from conftest import` would
resolve to whichever was imported first."""

from __future__ import annotations

from pathlib import Path

from fsdpcfg.compose import compose
from fsdpcfg.rules.context import Context

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared"
MODELS = SHARED / "data" / "model_configs"


def make_ctx(*overrides: str, model: str | None = None) -> Context:
    """A :class:`Context` for ``+recipe=qwen_grpo`` plus ``overrides`` (a shared model folder if given)."""
    ov = ["+recipe=qwen_grpo", *overrides]
    if model is not None:
        ov.append(f"actor_rollout_ref.model.path={MODELS / model}")
    c = compose(ov)
    return Context(c, c.to_container())


def run(fn, *overrides: str, model: str | None = None):
    """Findings of rule function ``fn`` on the composed config."""
    return list(fn(make_ctx(*overrides, model=model)))


def errors(findings, rule_id: str | None = None):
    return [f for f in findings if f.severity == "error" and (rule_id is None or f.rule == rule_id)]


def warnings(findings, rule_id: str | None = None):
    return [f for f in findings if f.severity == "warning" and (rule_id is None or f.rule == rule_id)]
