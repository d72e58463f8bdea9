"""Validate a resolved config against the schema and the key universe, without raising.

:func:`validate_tree` splits the config by :func:`fsdpcfg.schema.keys.classify`: schema keys go to Pydantic,
verl-only keys are type-checked against verl's defaults, legacy sections are left to rule FC701, unknown keys
are reported with a did-you-mean. Every problem becomes a :class:`SchemaIssue`; the rules in
``fsdpcfg/rules/schema_rules.py`` turn them into findings. :func:`parse_run_config` is the raising variant
for code that needs the typed model.
"""

from __future__ import annotations

import difflib
import typing
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from fsdpcfg import verlref
from fsdpcfg.errors import ConfigError
from fsdpcfg.schema import keys as K
from fsdpcfg.schema.root import RunConfig

if typing.TYPE_CHECKING:
    from fsdpcfg.schema.sft import SftRunConfig

IssueKind = Literal["unknown", "invalid", "missing", "verl_type", "conflict", "section"]
MISSING = "???"


@dataclass
class SchemaIssue:
    """One problem found by :func:`validate_tree`.

    Attributes:
        kind: ``unknown`` (no such key), ``invalid`` (a value the schema rejects), ``missing`` (a required
            value is not set), ``verl_type`` (a verl-only key with a value of another type than verl's
            default), ``conflict`` (a key below a value that is not a mapping).
        key: the full dotted key.
        value: the offending value (``None`` for missing keys).
        message: what is wrong, naming the value and what is allowed.
        fix: what to do.
        suggestions: closest real keys (unknown keys) or values (literals).
    """

    kind: IssueKind
    key: str
    value: Any
    message: str
    fix: str
    suggestions: list[str] = field(default_factory=list)


@dataclass
class SchemaReport:
    """Result of :func:`validate_tree`.

    Attributes:
        model: the validated :class:`RunConfig`, or ``None`` when Pydantic rejected the schema part.
        issues: every problem, in config order.
        verl_only: verl-only leaf keys present in the config, with their values.
        legacy: leaf keys under legacy sections (left to FC701).
    """

    model: RunConfig | None
    issues: list[SchemaIssue]
    verl_only: dict[str, Any] = field(default_factory=dict)
    legacy: list[str] = field(default_factory=list)


def _type_name(v: Any) -> str:
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, int):
        return "an integer"
    if isinstance(v, float):
        return "a number"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, list):
        kinds = {_type_name(x) for x in v}
        return f"a list of {_plural(kinds.pop())}" if len(kinds) == 1 else "a list"
    if isinstance(v, dict):
        return "a mapping"
    return type(v).__name__


def _plural(text: str) -> str:
    """``"a number"`` -> ``"numbers"``, ``"an integer"`` -> ``"integers"``; other texts as they are, in
    parentheses after "values"."""
    for article in ("a ", "an "):
        if text.startswith(article):
            return text[len(article) :] + "s"
    return f"values ({text})"


def _verl_type_ok(default: Any, v: Any) -> bool:
    if v is None or default is None:
        return True
    if isinstance(default, bool):
        return isinstance(v, bool)
    if isinstance(default, int):
        return isinstance(v, int) and not isinstance(v, bool)
    if isinstance(default, float):
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    if isinstance(default, str):
        return isinstance(v, str) or (default.startswith("${"))
    if isinstance(default, list):
        return isinstance(v, (list, str))
    if isinstance(default, dict):
        return isinstance(v, dict)
    return True


def _kind(v: Any) -> str:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    return {float: "float", str: "str", list: "list", dict: "dict"}.get(type(v), "any")


def _declared_kind_ok(key: str, v: Any) -> bool:
    """True when verl's config dataclass declares a kind of value ``v`` has for ``key``
    (:func:`fsdpcfg.verlref.value_kinds`: ``rollout_is_threshold: str | float`` takes ``"0.5_4.0"`` although its
    default is ``2.0``; an ``int`` where a ``float`` is declared). It only widens :func:`_verl_type_ok`: a value
    the default's type accepts is never refused for an annotation (verl's annotations are not always complete)."""
    kinds = verlref.value_kinds(key)
    if not kinds:
        return False
    kind = _kind(v)
    return "any" in kinds or kind in kinds or (kind == "int" and "float" in kinds)


#: Unknown keys that get a did-you-mean (:func:`fsdpcfg.schema.keys.suggest`, ~2 ms each); later ones are still
#: reported, each with a plain fix, so that a file of 10,000 unknown keys is checked in seconds (issue 14 item 6).
SUGGEST_LIMIT = 50


def validate_tree(
    cfg: dict[str, Any],
    *,
    skip: frozenset[str] = frozenset(),
    derived: frozenset[str] = frozenset(),
    config: str | None = None,
) -> SchemaReport:
    """Validate the resolved config ``cfg`` (nested dicts). Never raises for any input mapping.

    Args:
        config: verl's composition the config belongs to (``ppo_trainer``, ``ppo_megatron_trainer`` ...): an unknown
            key is never given another engine's key as its did-you-mean (:func:`fsdpcfg.schema.keys.propose`).
        skip: keys already reported elsewhere (unresolvable interpolations), left out of validation.
        derived: keys whose value is an interpolation of another key (``${actor_rollout_ref.actor.strategy}``);
            a bad value is reported once, on the key it was set on, not again on each key that copies it.
    """
    issues: list[SchemaIssue] = []
    verl_only: dict[str, Any] = {}
    legacy: list[str] = []
    missing: set[str] = set()
    raw_defaults = verlref.defaults("ppo", resolved=False)
    unknown = [0]  # unknown keys seen so far: the first SUGGEST_LIMIT get a did-you-mean

    def walk(node: dict[str, Any], prefix: str) -> dict[str, Any]:
        kept: dict[str, Any] = {}
        for k, v in node.items():
            key = f"{prefix}{k}"
            if key in skip:
                continue
            if v == MISSING:
                if K.classify(key) == "schema":  # verl-only `???` keys are read only when their feature is on
                    missing.add(key)
                continue
            kind = K.classify(key) if isinstance(k, str) else "unknown"
            if kind == "schema":
                if isinstance(v, dict) and key in K.schema_prefixes():
                    kept[k] = walk(v, key + ".")
                else:
                    kept[k] = v
            elif kind == "verl":
                replaced = K.section_replaced(key, v)
                if replaced is not None:  # rollout.mtp=1: a scalar or a list where verl reads keys
                    issues.append(SchemaIssue("section", key, v, *replaced))
                elif isinstance(v, dict) and v and key not in K.verl_keys():
                    walk(v, key + ".")  # report unknown keys inside verl-only sections
                else:
                    verl_only[key] = v
                    default = verlref.defaults("ppo").get(key)
                    if not (isinstance(raw_defaults.get(key), str) and "${" in raw_defaults[key]) and not (
                        _verl_type_ok(default, v) or _declared_kind_ok(key, v)
                    ):
                        issues.append(
                            SchemaIssue(
                                "verl_type",
                                key,
                                v,
                                f"{v!r} is {_type_name(v)}; verl 0.9.1 expects "
                                f"{_type_name(default)} (its default is {default!r})",
                                f"set {key} to {_type_name(default)}",
                            )
                        )
            elif kind == "legacy":
                legacy.append(key)
            elif kind == "conflict":
                parent = K.known_parent(key) or key
                issues.append(
                    SchemaIssue(
                        "conflict",
                        key,
                        v,
                        f"{parent} holds a single value, so it has no key `{key[len(parent) + 1 :]}`",
                        f"set {parent}=VALUE instead",
                        [parent],
                    )
                )
            elif kind == "free":
                kept[k] = v
            else:
                unknown[0] += 1
                what = "is not a key fsdpcfg or verl 0.9.1 knows"
                if unknown[0] <= SUGGEST_LIMIT:
                    real = K.propose(str(key), v, config=config)
                    sugg = [real] if real else []
                    hint = f"did you mean {real}?" if real else "remove it, or check the name (`fsdpcfg show`)"
                    what = what if real else f"{what}: {K.NO_SUCH_KEY}"
                else:  # bounded work: ~2 ms of difflib per key would make 10,000 keys take 20 s
                    sugg, hint = (
                        [],
                        (f"check the key name (did-you-mean is given for the first {SUGGEST_LIMIT} unknown keys only)"),
                    )
                issues.append(SchemaIssue("unknown", str(key), v, what, hint, sugg))
        return kept

    tree = walk(cfg if isinstance(cfg, dict) else {}, "")
    model = None
    try:
        model = RunConfig.model_validate(tree)
    except ValidationError as e:
        issues.extend(_issues_from(e, cfg, missing))
    for key in sorted(missing):
        issues.append(
            SchemaIssue(
                "missing", key, None, "is required and has no value (`???`)", f"set {key}=VALUE" + _describe(key)
            )
        )
    once = ("invalid", "section")  # reported on the key it was set on, not on each key that copies it
    reported = [(i.key, i.value) for i in issues if i.kind in once and i.key not in derived]
    issues = [i for i in issues if not (i.kind in once and i.key in derived and any(v == i.value for _, v in reported))]
    order = {k: i for i, k in enumerate(verlref.flatten(cfg) if isinstance(cfg, dict) else {})}
    issues.sort(key=lambda i: order.get(i.key, len(order)))
    return SchemaReport(model, issues, verl_only, legacy)


def _describe(key: str) -> str:
    info = K.field_info(key)
    return f" ({info.description})" if info is not None and info.description else ""


def _field_key(loc: tuple[Any, ...]) -> str:
    model: type[BaseModel] | None = RunConfig
    parts: list[str] = []
    for el in loc:
        if model is None or not isinstance(el, str) or el not in model.model_fields:
            break
        parts.append(el)
        ann = model.model_fields[el].annotation
        model = ann if isinstance(ann, type) and issubclass(ann, BaseModel) else None
    return ".".join(parts)


def _get(cfg: Any, key: str) -> Any:
    from fsdpcfg import keypath

    return keypath.get(cfg, key, None)


def _msg(e: dict[str, Any]) -> str:
    m = str(e.get("msg", "")).removeprefix("Value error, ").removeprefix("Assertion failed, ")
    return m[:1].lower() + m[1:]


def _issues_from(err: ValidationError, cfg: dict[str, Any], missing: set[str]) -> list[SchemaIssue]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for detail in err.errors():
        groups.setdefault(_field_key(tuple(detail["loc"])), []).append(dict(detail))
    out = []
    for key, errs in groups.items():
        types = {e["type"] for e in errs}
        value = _get(cfg, key)
        if "missing" in types:
            missing.add(key)
            continue
        if "extra_forbidden" in types:  # only reachable when classify() and the models disagree
            for e in errs:
                k = ".".join(str(x) for x in e["loc"])
                out.append(
                    SchemaIssue(
                        "unknown",
                        k,
                        e.get("input"),
                        "is not a key of the schema",
                        "check the key name (`fsdpcfg show`)",
                        K.suggest(k),
                    )
                )
            continue
        replaced = K.section_replaced(key, value)
        if replaced is not None:  # actor.optim=adam: a scalar or a list where the schema has a section
            out.append(SchemaIssue("section", key, value, *replaced))
            continue
        allowed = K.allowed_values(key)
        if allowed and "literal_error" in types:
            bad = [e.get("input") for e in errs if e["type"] == "literal_error"]
            shown = bad[0] if len(bad) == 1 else value
            close = difflib.get_close_matches(str(shown), [str(a) for a in allowed], n=1, cutoff=0.5)
            hint = f"did you mean {key}={close[0]}? " if close else ""
            out.append(
                SchemaIssue(
                    "invalid",
                    key,
                    value,
                    f"{shown!r} is not one of {', '.join(map(str, allowed))}",
                    f"{hint}set {key} to one of: {', '.join(map(str, allowed))}",
                    close,
                )
            )
            continue
        msgs = list(dict.fromkeys(_msg(e) for e in errs))
        if len(errs) > 1 and all(len(e["loc"]) > len(key.split(".")) for e in errs):
            expected = _annotation_text(K.field_info(key).annotation) if K.field_info(key) else ""
            text = f"{value!r} is {_type_name(value)}; expected {expected}" if expected else "; ".join(msgs)
        else:
            text = f"{value!r}: " + "; ".join(msgs)
        out.append(SchemaIssue("invalid", key, value, text, f"set {key} to a valid value" + _describe(key)))
    return out


def _annotation_text(a: Any) -> str:
    origin = typing.get_origin(a)
    if a is type(None):
        return "null"
    if origin is Literal:
        return "one of " + ", ".join(map(str, typing.get_args(a)))
    if origin is typing.Annotated:  # a constrained type (Beta = Annotated[float, ...]): the type it constrains
        return _annotation_text(typing.get_args(a)[0])
    if origin is list:
        args = typing.get_args(a)
        return f"a list of {_plural(_annotation_text(args[0]))}" if args else "a list"
    if origin is dict:
        return "a mapping"
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        return " or ".join(_annotation_text(x) for x in typing.get_args(a))
    return {int: "an integer", float: "a number", str: "a string", bool: "a boolean"}.get(
        a, getattr(a, "__name__", str(a))
    )


def parse_run_config(cfg: Any) -> RunConfig:
    """Return the typed :class:`RunConfig` of a config, for code that needs typed values: a
    :class:`fsdpcfg.compose.Composed` (a bad value copied by interpolations is counted once) or a resolved
    config as nested dicts.

    Raises:
        ConfigError: the config has schema issues (the first one is the message; all are counted).
    """
    derived: frozenset[str] = frozenset()
    if hasattr(cfg, "cfg") and hasattr(cfg, "provenance"):
        from fsdpcfg.compose.resolve import resolve

        cfg, failed, derived = resolve(cfg)
        if failed:
            key, why = next(iter(failed.items()))
            raise ConfigError(why, key=key, fix="set it to a literal value or point the ${...} at an existing key")
    rep = validate_tree(cfg, derived=derived)
    if rep.issues or rep.model is None:
        first = rep.issues[0] if rep.issues else SchemaIssue("invalid", "", None, "invalid config", "run fsdpcfg check")
        more = f" (and {len(rep.issues) - 1} more; `fsdpcfg check` lists them)" if len(rep.issues) > 1 else ""
        raise ConfigError(first.message + more, key=first.key or None, value=first.value, fix=first.fix)
    return rep.model


def parse_sft_config(cfg: dict[str, Any]) -> SftRunConfig:
    """Return the typed :class:`fsdpcfg.schema.sft.SftRunConfig` of a resolved SFT config (nested dicts): the
    keys of verl's ``sft_trainer_engine`` composition that the SFT schema does not model are left out, as rule
    FC150 leaves them out (they are verl's, passed to verl).

    Raises:
        ConfigError: the config does not match the SFT schema (the first problem; ``fsdpcfg check`` lists all).
    """
    from fsdpcfg.schema.sft import SftRunConfig, schema_defaults, schema_part

    try:
        return SftRunConfig.model_validate(schema_part(cfg, frozenset(schema_defaults())))
    except ValidationError as e:
        err = e.errors()[0]
        key = ".".join(str(p) for p in err["loc"] if isinstance(p, str))
        more = f" (and {e.error_count() - 1} more; `fsdpcfg check` lists them)" if e.error_count() > 1 else ""
        raise ConfigError(
            f"{err['msg']}{more}", key=key or None, value=err.get("input"), fix=f"set {key} to a valid value"
        ) from None


def parse_config(cfg: dict[str, Any]) -> RunConfig | SftRunConfig:
    """The typed model of a resolved config of either kind, by its run kind's parser (:attr:`fsdpcfg.runkind.
    RunKind.parse`: :func:`parse_run_config`, or :func:`parse_sft_config` for ``fsdpcfg.kind=sft``); what the
    native trainers read.

    Raises:
        ConfigError: the config does not match its schema, or ``fsdpcfg.kind`` names no kind.
    """
    from fsdpcfg import runkind

    typed: RunConfig | SftRunConfig = runkind.of(cfg).load("parse")(cfg)
    return typed
