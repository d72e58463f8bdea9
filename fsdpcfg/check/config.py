"""Public API of the pre-flight checker: run the schema and every rule over a composed config.

    from fsdpcfg.check import check_config, check_overrides, has_errors
    findings = check_overrides(["+recipe=qwen_grpo", "actor_rollout_ref.actor.strategy=fsdp3"])

:func:`check_config` never raises for a config mistake: every problem is a :class:`Finding` (a rule that
crashes becomes an ``FC000`` finding). It imports every module of :mod:`fsdpcfg.rules` (discovered with
pkgutil, so a new rule module needs no change here) and never imports torch, transformers, verl or the
config's ``external_lib``, and opens no network connection.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable
from functools import cache
from typing import Any

from fsdpcfg.check import _fastparse, _fastyaml
from fsdpcfg.errors import ConfigError, UsageError
from fsdpcfg.rules.finding import Finding

_fastyaml.install()  # Hydra parses the config tree with libyaml: the same trees, composed faster
_fastparse.install()  # each ${...} string is parsed once: the same values, resolved faster

from fsdpcfg.compose.resolve import resolve  # noqa: E402  (after the two installs: it imports Hydra)

#: modules of fsdpcfg.rules that hold machinery, not rules.
_NOT_RULES = {"context", "finding", "registry"}
#: rule modules that live with the stage they check, outside fsdpcfg.rules: the machine checks of a verl launch
#: (FC85x, ``stage="launch"``). Imported by name: the one plug-in point by which a later stage adds rules to
#: the registry (tests/test_layout.py allows no other import up the pipeline).
RULE_PLUGINS = ("fsdpcfg.launch.verl_launch",)
_SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


@cache
def load_rule_modules() -> tuple[tuple[str, str | None], ...]:
    """Import every rule module of :mod:`fsdpcfg.rules` and the :data:`RULE_PLUGINS`; return ``(module, import
    error or None)`` pairs."""
    import fsdpcfg.rules as pkg

    out: list[tuple[str, str | None]] = []
    names = [
        f"{pkg.__name__}.{info.name}"
        for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda m: m.name)
        if not info.name.startswith("_") and info.name not in _NOT_RULES
    ]
    for name in [*names, *RULE_PLUGINS]:
        try:
            importlib.import_module(name)
            out.append((name, None))
        except Exception as e:  # a broken rule module must not take the checker down
            out.append((name, f"{type(e).__name__}: {e}"))
    return tuple(out)


def check_config(composed: Any) -> list[Finding]:
    """Check a composed config (:class:`fsdpcfg.compose.Composed`): schema, unknown keys, then every rule.

    Returns the findings sorted by severity (errors first), then rule ID. Never raises for a config mistake.
    """
    from fsdpcfg.rules.context import Context
    from fsdpcfg.rules.registry import RULES

    cfg, failed, derived = resolve(composed)
    ctx = Context(composed, cfg)
    ctx.unresolved = failed  # read by FC100; keys left out of cfg
    ctx.derived = derived  # read by the schema rules
    findings: list[Finding] = []
    for module, err in load_rule_modules():
        if err:
            findings.append(
                Finding(
                    "FC000",
                    "warning",
                    [],
                    f"the rule module {module} cannot be imported ({err}); its rules did not run",
                    "report this to the fsdpcfg maintainers",
                )
            )
    schema_errors = False
    kind = getattr(composed, "kind", "ppo")
    for rid in sorted(RULES):
        r = RULES[rid]
        if r.stage != "check":  # machine checks run at launch only (fsdpcfg.launch.verl_launch)
            continue
        if kind not in r.kinds:  # ppo rules read ppo keys; sft rules sft keys
            continue
        try:
            got = list(r.fn(ctx) or [])
        except Exception as e:
            if schema_errors:
                findings.append(
                    Finding(
                        "FC000",
                        "info",
                        list(r.keys),
                        f"{rid} ({r.title}) was skipped: it cannot run on the invalid values reported above",
                        "fix the errors above",
                    )
                )
            else:
                findings.append(
                    Finding(
                        "FC000",
                        "warning",
                        list(r.keys),
                        f"{rid} ({r.title}) failed: {type(e).__name__}: {e}",
                        "report this to the fsdpcfg maintainers",
                    )
                )
            continue
        findings.extend(got)
        if rid.startswith("FC1") and any(f.severity == "error" for f in got):
            schema_errors = True
    return sort_findings(_dedupe(findings))


def check_overrides(overrides: list[str], *, extra_recipe_dirs: Iterable[Any] | None = None) -> list[Finding]:
    """Compose ``overrides`` (Hydra syntax, e.g. ``["+recipe=qwen_grpo", "data.train_batch_size=8"]``) and
    check the result. A config that cannot be composed is an ``FC100``/``FC101`` finding.

    Raises:
        UsageError: an override that cannot be parsed, or a sweep.
    """
    composed, findings = compose_for_check(overrides, extra_recipe_dirs=extra_recipe_dirs)
    return findings if composed is None else check_config(composed)


def compose_for_check(
    overrides: list[str], *, extra_recipe_dirs: Iterable[Any] | None = None
) -> tuple[Any, list[Finding]]:
    """Compose ``overrides`` for checking: ``(composed or None, findings)``.

    ``key=value`` for a key that fsdpcfg's schema or verl defines but that no file of the tree sets is
    rejected by Hydra (and by verl's own Hydra). It is composed again as ``+key=value``, so that every other
    finding is reported in the same run, and recorded as ``composed.plus_needed`` ({key: override}) for
    rule FC105. The reverse, ``+key=value`` for a key the tree holds (every key of verl's composition is in
    it), is composed as ``key=value`` and recorded as ``composed.plus_refused`` for rule FC112. ``findings`` is
    non-empty only when the config cannot be composed.

    Raises:
        UsageError: an override that cannot be parsed, or a sweep.
    """
    from fsdpcfg.compose import compose
    from fsdpcfg.schema.keys import classify

    overrides = list(overrides)
    dirs = list(extra_recipe_dirs or []) or None
    plus_needed: dict[str, str] = {}
    plus_refused: dict[str, str] = {}
    first_error: ConfigError | None = None
    for _ in range(len(overrides) + 1):
        try:
            composed = compose(overrides, extra_recipe_dirs=dirs)
            composed.plus_needed = plus_needed
            composed.plus_refused = plus_refused
            return composed, []
        except UsageError:
            raise
        except ConfigError as e:
            key = e.key if isinstance(e.key, str) else None
            if key and "`+` cannot add it" in e.message:
                # `+key=value` on a key the tree (verl's own tree) holds: Hydra and verl refuse it; compose it as
                # `key=value` so the other rules run, and let FC112 report it
                idx = next(
                    (
                        i
                        for i, o in enumerate(overrides)
                        if o.startswith("+") and not o.startswith("++") and o[1:].split("=", 1)[0] == key
                    ),
                    None,
                )
                if idx is None or key in plus_refused:
                    return None, [compose_error_finding(first_error or e)]
                first_error = first_error or e
                plus_refused[key] = overrides[idx]
                overrides[idx] = overrides[idx][1:]
                continue
            idx = next((i for i, o in enumerate(overrides) if key and o.split("=", 1)[0] == key), None)
            if idx is None or key is None or key in plus_needed or classify(key) not in ("schema", "verl", "free"):
                return None, [compose_error_finding(first_error or e)]
            first_error = first_error or e
            plus_needed[key] = overrides[idx]
            overrides[idx] = "+" + overrides[idx]
        except Exception as e:  # Hydra raises a few plain ValueErrors (e.g. `trainer=0`); never a traceback
            return None, [unexpected_compose_finding(e, overrides)]
    return None, [Finding("FC100", "error", [], "the overrides cannot be composed", "check them with `fsdpcfg show`")]


def compose_error_finding(e: ConfigError) -> Finding:
    """Turn a :class:`ConfigError` raised while composing or reading a config into a finding."""
    key = e.key if isinstance(e.key, str) else None
    rule = "FC101" if key and "not a key" in e.message else "FC100"
    msg = f"{e.message} ({e.value!r})" if e.value is not None and repr(e.value) not in e.message else e.message
    if key and key not in msg:
        msg = f"{key}: {msg}"
    return Finding(rule, "error", [key] if key else [], msg, e.fix or "fix the config so it composes")


def unexpected_compose_finding(e: Exception, overrides: list[str]) -> Finding:
    """An exception Hydra or OmegaConf raised while composing that is not a :class:`ConfigError`."""
    text = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    return Finding(
        "FC100",
        "error",
        [],
        f"the config cannot be composed: {text}",
        f"check the overrides ({' '.join(overrides)}) against `fsdpcfg ls` and `fsdpcfg show`",
    )


def has_errors(findings: Iterable[Finding]) -> bool:
    """True when any finding is an error (the run must not start)."""
    return any(f.severity == "error" for f in findings)


def sort_findings(findings: Iterable[Finding]) -> list[Finding]:
    """Errors first, then warnings, then infos; by rule ID within a severity (stable otherwise)."""
    return sorted(findings, key=lambda f: (_SEVERITY_ORDER.get(f.severity, 3), f.rule))


def _dedupe(findings: list[Finding]) -> list[Finding]:
    seen, out = set(), []
    for f in findings:
        k = (f.rule, f.severity, tuple(f.keys), f.message)
        if k not in seen:
            seen.add(k)
            out.append(f)
    return out
