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
import re
from collections.abc import Iterable
from functools import cache
from pathlib import Path
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
    from omegaconf import OmegaConf

    from fsdpcfg.rules.context import Context
    from fsdpcfg.rules.registry import RULES

    # once: resolve's walk and the secret rule read it
    raw: dict[str, Any] = OmegaConf.to_container(composed.cfg, resolve=False)  # type: ignore[assignment]
    cfg, failed, derived = resolve(composed, raw)
    ctx = Context(composed, cfg)
    ctx.raw = raw
    ctx.unresolved = failed  # read by FC100; keys left out of cfg
    ctx.derived = derived  # read by the schema rules
    # the overrides Hydra refused, dropped so that the rest composed (compose_for_check): reported first
    findings: list[Finding] = list(getattr(composed, "refused", None) or [])
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
    overrides: list[str],
    *,
    extra_recipe_dirs: Iterable[Any] | None = None,
    verl_composes: bool = False,
    searchpath: str | None = None,
) -> tuple[Any, list[Finding]]:
    """Compose ``overrides`` for checking, so that every finding is reported at once: ``(composed or None,
    findings)``.

    What Hydra refuses is reported and composed around, and the compose retried (at most twice per override; the
    first-stage tree is kept, :mod:`fsdpcfg.compose.tree_cache`, so a retry costs ~0.03 CPU s):

    * ``key=value`` for a key that fsdpcfg's schema or verl defines but that no file of the tree sets (Hydra and
      verl's own Hydra reject it) is composed as ``+key=value`` and recorded in ``composed.plus_needed``
      ({key: override}, rule FC105); the reverse, ``+key=value`` for a key the tree holds, is composed as
      ``key=value`` and recorded in ``composed.plus_refused`` (rule FC112);
    * any other override Hydra refuses (a key that is not in the tree, ``~`` of a missing key, an unknown group
      option, a value that cannot be merged) is dropped and its finding (key, value, rule, fix) kept in
      ``composed.refused``, which :func:`check_config` reports;
    * an option a recipe's defaults list chooses that does not exist is replaced by the chain's last existing
      choice (or the root config's) and reported in ``composed.refused`` too.

    ``findings`` is non-empty only when the config cannot be composed at all (an unknown recipe, a file Hydra
    cannot merge); it then holds the refusals found before, too.

    ``verl_composes``: the overrides are a verl command's (a run script's), which verl composes itself; an
    option of a group fsdpcfg's tree does not model is then an info (FC108), else an error (fsdpcfg would run
    the config without it). ``searchpath``: the command's ``hydra.searchpath`` (a run script's, which the script
    reader sets aside), named in that finding.

    Raises:
        UsageError: an override that cannot be parsed, or a sweep.
    """
    from fsdpcfg.check.key_advice import KEY_ADVICE
    from fsdpcfg.compose import ComposeError, compose, group_fallback

    kind = _kind_of(_recipe_of(list(overrides)), list(extra_recipe_dirs or []) or None)
    unknown: list[tuple[Finding, ComposeError, str]] = []  # refused unknown keys: proposals judged again below
    overrides = list(overrides)
    given = list(overrides)
    dirs = list(extra_recipe_dirs or []) or None
    plus_needed: dict[str, str] = {}
    plus_refused: dict[str, str] = {}
    refused: list[Finding] = []
    fallbacks: set[str] = set()
    for _ in range(2 * len(overrides) + 4):
        try:
            composed = compose(overrides, extra_recipe_dirs=dirs, keys=KEY_ADVICE)
        except UsageError:
            raise
        except ComposeError as e:
            key = e.key if isinstance(e.key, str) else None
            idx = _culprit(overrides, e.override or _named_override(e.message))
            text = overrides[idx] if idx is not None else ""
            if e.reason == "plus_refused" and key and text.startswith("+") and not text.startswith("++"):
                if key not in plus_refused:
                    # `+key=value` on a key the tree (verl's own tree) holds: compose it as `key=value`, FC112 says
                    plus_refused[key] = text
                    overrides[idx] = text[1:]  # type: ignore[index]
                    continue
            if e.reason == "needs_plus" and key and text and not text.startswith(("+", "~")):
                if key not in plus_needed:
                    plus_needed[key] = text
                    overrides[idx] = "+" + text  # type: ignore[index]
                    continue
            if idx is not None and _override_key(text) != "recipe":
                f = unmodelled_group_finding(text, e, overrides, verl_composes, searchpath)
                f = f or compose_error_finding(e)
                if f.rule == "FC103" and kind == "sft":
                    f.rule = "FC150"  # the SFT tree's schema rule
                if e.reason == "unknown" and key:
                    unknown.append((f, e, text))
                for k in f.keys:
                    f.provenance[k] = f"command line `{text}`"
                refused.append(f)
                del overrides[idx]
                continue
            recipe = _recipe_of(overrides)
            if e.override is None and key and isinstance(e.value, str) and key not in fallbacks:
                option, bad_at = group_fallback(key, recipe, _kind_of(recipe, dirs), [Path(d) for d in dirs or []])
                if option is not None:
                    f = compose_error_finding(e)
                    f.message += f"; the check went on with {key}={option}"
                    if bad_at is not None:
                        f.location = (str(bad_at[0]), bad_at[1])
                    refused.append(f)
                    fallbacks.add(key)
                    overrides.append(f"{key}={option}")  # a command-line choice wins over a defaults list's
                    continue
            return None, refused + [compose_error_finding(e)]
        except ConfigError as e:
            return None, refused + [compose_error_finding(e)]
        except Exception as e:  # Hydra raises a few plain ValueErrors (e.g. `trainer=0`); never a traceback
            return None, refused + [unexpected_compose_finding(e, overrides)]
        _propose_for_engine(unknown, composed, kind)
        composed.plus_needed = plus_needed
        composed.plus_refused = plus_refused
        composed.refused = sorted(refused, key=lambda f: _position(given, f))  # in the order given
        return composed, []
    return None, refused + [
        Finding("FC100", "error", [], "the overrides cannot be composed", "check them with `fsdpcfg show`")
    ]


def _propose_for_engine(unknown: list[tuple[Finding, Any, str]], composed: Any, kind: str) -> None:
    """Judge again the did-you-mean of each refused unknown key, now that the composed config names verl's
    composition (its engine): a key of another engine is never proposed (issue 20 item 6)."""
    if not unknown:
        return
    from fsdpcfg.check.key_advice import KEY_ADVICE
    from fsdpcfg.compose import unknown_key_error
    from fsdpcfg.compose.verl_base import composition_of

    try:
        config = composition_of(composed.cfg, kind)
    except Exception:  # a config whose engine keys do not read: keep the proposals made while composing
        return
    for f, e, text in unknown:
        again = compose_error_finding(unknown_key_error(e.key, e.value, text or None, kind, config, keys=KEY_ADVICE))
        f.message, f.fix = again.message, again.fix
        f.keys = again.keys


def _position(given: list[str], f: Finding) -> int:
    """Where the override a refusal finding names stands in ``given`` (after them all when none does)."""
    for i, o in enumerate(given):
        if f.keys and _override_key(o) == f.keys[0]:
            return i
    return len(given)


def _override_key(text: str) -> str:
    """The key (or group) of an override line: ``+a.b=1`` -> ``a.b``, ``~a.b`` -> ``a.b``."""
    return text.lstrip("~+").split("=", 1)[0]


def _culprit(overrides: list[str], line: str | None) -> int | None:
    """The index in ``overrides`` of the override Hydra refused (``line``, as Hydra parsed it): the same line,
    else the last override on the same key; ``None`` when none is."""
    if line is None:
        return None
    for i in range(len(overrides) - 1, -1, -1):
        if overrides[i] == line:
            return i
    key = _override_key(line)
    for i in range(len(overrides) - 1, -1, -1):
        if _override_key(overrides[i]) == key:
            return i
    return None


def _named_override(message: str) -> str | None:
    """The override Hydra's message names when the error carries none ("Override a@b=c looks like a config group
    override, but config group 'a' does not exist")."""
    m = re.search(r"Override (\S+) looks like a config group override", message)
    return m.group(1) if m else None


def _recipe_of(overrides: list[str]) -> str | None:
    """The recipe name ``+recipe=NAME`` (or ``+recipe=FILE.yaml``: its stem) selects, or ``None``."""
    for o in reversed(overrides):
        if _override_key(o) == "recipe" and "=" in o:
            value = o.split("=", 1)[1]
            return Path(value).stem if value.endswith((".yaml", ".yml")) else value
    return None


def _kind_of(recipe: str | None, dirs: list[Any] | None) -> str:
    from fsdpcfg.compose import recipe_kind

    return recipe_kind(recipe, [Path(d) for d in dirs or []]) if recipe else "ppo"


def compose_error_finding(e: ConfigError) -> Finding:
    """Turn a :class:`ConfigError` raised while composing or reading a config into a finding."""
    key = e.key if isinstance(e.key, str) else None
    rule = "FC101" if key and "not a key" in e.message else "FC100"
    if getattr(e, "reason", None) == "section":  # a list on a section: a value of the wrong type (FC103's)
        rule = "FC103"
    msg = f"{e.message} ({e.value!r})" if e.value is not None and repr(e.value) not in e.message else e.message
    if key and key not in msg:
        msg = f"{key}: {msg}"
    return Finding(rule, "error", [key] if key else [], msg, e.fix or "fix the config so it composes")


def unmodelled_group_finding(
    text: str, e: ConfigError, overrides: list[str], verl_composes: bool = False, searchpath: str | None = None
) -> Finding | None:
    """FC108 for a group option fsdpcfg's tree does not model, or ``None`` for another refusal: an option of
    one of verl's own config groups (``actor@actor_rollout_ref.actor=dp_actor``: fsdpcfg's tree holds verl's
    composed defaults, not its groups) or of a group a ``hydra.searchpath`` package adds
    (``hydra.searchpath=[pkg://verl_mlite.config] engine=mlite``). In a verl command (``verl_composes``: a run
    script's) verl composes it and fsdpcfg cannot see what it sets: an info naming what was not checked, never a
    guessed error. For a config fsdpcfg composes and runs, it is an error: the run would go without it.

    Source: Hydra's refusals "config group 'X' does not exist" and "Could not find 'X/Y'"
    (``hydra/_internal/defaults_list.py``); verl's examples with ``hydra.searchpath`` (megatron-lite); issue 20.
    """
    msg = e.message
    searchpath = searchpath or next(
        (o.split("=", 1)[1] for o in overrides if o.lstrip("+").startswith("hydra.searchpath=")), None
    )
    key = _override_key(text)
    group = key.split("@", 1)[0]
    no_group = f"config group '{group}' does not exist" in msg
    if not (no_group or (searchpath and "@" not in key and ("Could not find" in msg or "no option" in msg))):
        return None
    where = f"a group the hydra.searchpath {searchpath} adds" if searchpath else "one of verl's own config groups"
    if not verl_composes:
        return Finding(
            "FC108",
            "error",
            [],
            f"`{text}` selects an option of `{group}`, {where}; fsdpcfg's tree does not model it, so a run "
            "fsdpcfg composes would go without it",
            "set the keys it sets as overrides or in a recipe, or run the command with verl itself "
            "(`fsdpcfg check run.sh` checks a verl run script)",
            provenance={},
        )
    return Finding(
        "FC108",
        "info",
        [],
        f"`{text}` selects an option of `{group}`, {where}; fsdpcfg's tree does not model it, so what it sets "
        "was not checked (the rest of the command was)",
        "check it with `fsdpcfg check --verl` (verl composes it) where "
        + (f"the package of {searchpath} is installed" if searchpath else "verl is installed"),
        provenance={},
    )


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
