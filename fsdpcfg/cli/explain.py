"""``fsdpcfg explain KEY [OVERRIDES...]`` and ``fsdpcfg explain RULE_ID``.

A key's page: description, type, allowed values, the schema's and verl's defaults, whether the native
launcher implements it, every file of the tree that sets it, and the rules that read it. With overrides
(``explain actor_rollout_ref.rollout.n +recipe=qwen_grpo``) also the value they compose to and where it came
from. A section (``actor_rollout_ref.rollout``) lists its keys.

A rule's page: title and severity, what it checks and its source (the docstring), where it is defined,
the keys it reads, and its failing example run through the real checker, with the fix it prints.
"""

from __future__ import annotations

import argparse
import textwrap

from fsdpcfg import catalog, verlref
from fsdpcfg.catalog import keyinfo, ruleinfo
from fsdpcfg.errors import UsageError, did_you_mean

PASS_THROUGH = True


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register ``explain``'s arguments."""
    parser.add_argument("topic", metavar="KEY|RULE_ID", help="a dotted config key or section, or a rule ID (FC201)")
    parser.add_argument(
        "tokens",
        nargs="*",
        metavar="OVERRIDE",
        help="a recipe and overrides: also show the value they give KEY and its source",
    )
    parser.add_argument("--no-run", action="store_true", help="rule pages: do not run the failing example")


def parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """Parse the topic, options and overrides in any order."""
    return parser.parse_intermixed_args(argv)


def _fmt(v) -> str:
    return catalog.format_value(v)


def _finding_lines(f, indent: str = "  ") -> list[str]:
    lines = [f"{indent}{f.severity.upper()} {f.rule}: {f.message}"]
    if f.derivation:
        lines.append(f"{indent}    numbers: {f.derivation}")
    lines.append(f"{indent}    -> {f.fix}")
    return lines


def key_page(key: str, tokens: list[str]) -> str:
    """Return the page of a config key or section.

    Raises:
        UsageError: nothing knows the key (with did-you-mean), exit code 2.
    """
    info = keyinfo.key_info(key)
    if info is None:
        from fsdpcfg.schema.keys import suggest

        close = suggest(key, pool=keyinfo.all_keys())
        raise UsageError(
            f"no config key or rule `{key}`",
            key=key,
            fix=(f"did you mean {' or '.join(close)}? " if close else "")
            + "`fsdpcfg show +recipe=NAME` lists every key; rule IDs look like FC201",
        )
    desc = info.description or (
        f"an entry of the free-form mapping {info.parent}" if info.parent else "(not modelled by fsdpcfg's schema)"
    )
    lines = [key, f"  {desc}", ""]
    kind = {
        "schema": "key",
        "section": "section",
        "verl": f"verl {verlref.VERL_VERSION} key the schema does not model (passed to verl unchanged)",
        "free": "entry of a free-form mapping",
        "legacy": "legacy key verl 0.9 ignores (rule FC701)",
    }.get(info.kind, info.kind)
    rows = [("kind", kind)]
    if info.type:
        rows.append(("type", info.type))
    if info.allowed:
        rows.append(("allowed", ", ".join(_fmt(v) for v in info.allowed)))
    if info.kind != "section":
        if info.has(info.default) or info.default_source or info.kind == "schema":
            rows.append(
                (
                    "default",
                    f"{_fmt(info.default)}  ({info.default_source})" if info.has(info.default) else "none (required)",
                )
            )
        if info.has(info.sft_default) and not (info.has(info.default) and info.sft_default == info.default):
            rows.append(("sft default", _fmt(info.sft_default)))
        if info.kind != "free" or info.has(info.verl_default):
            rows.append(
                (
                    f"verl {verlref.VERL_VERSION}",
                    _fmt(info.verl_default) if info.has(info.verl_default) else "not a verl key",
                )
            )
    if info.native:
        rows.append(("launcher", info.native))
    lines += [f"  {k + ':':<12} {v}" for k, v in rows]
    if info.set_in:
        lines += ["", "set in the tree by:"] + [f"  {w}" for w in info.set_in]
    if info.rules:
        lines += ["", "rules that read it:"] + [f"  {rid}  {title}" for rid, title in info.rules]
    if info.children:
        body = [[k, d] for k, d in info.children]
        lines += ["", "keys:"] + ["  " + line for line in catalog.table(["KEY", "DESCRIPTION"], body).splitlines()[1:]]
    if tokens:
        composed = catalog.load(tokens)
        rows_ = catalog.rows(composed, prefix=key)
        lines += ["", f"with {' '.join(tokens)}:"]
        if not rows_:
            lines.append(
                f"  not in the composed config (verl's default applies: "
                f"{_fmt(info.verl_default) if info.has(info.verl_default) else 'none'})"
            )
        for r in rows_:
            src = r.source + (f"  from {_fmt(r.raw)}" if r.raw is not None else "")
            lines.append(f"  {r.key} = {_fmt(r.value)}    ({src})")
    return "\n".join(lines)


def rule_page(rule_id: str, run_example: bool = True) -> str:
    """Return the page of a rule.

    Raises:
        UsageError: no rule has the ID (with did-you-mean), exit code 2.
    """
    table = ruleinfo.rules()
    rule = table.get(rule_id.upper())
    if rule is None:
        same_range = [r for r in table if r[:3] == rule_id.upper()[:3]]
        close = same_range[:8] if same_range else did_you_mean(rule_id.upper(), table, cutoff=0.5)
        raise UsageError(
            f"no rule `{rule_id}`",
            key=rule_id,
            fix=(f"did you mean {' or '.join(close)}? " if close else "")
            + "the reference page docs/reference.md lists every rule",
        )
    lines = [f"{rule.id}  {rule.title}  ({rule.severity})", ""]
    lines += [textwrap.indent(rule.doc, "  "), "", f"  defined in: {ruleinfo.source_of(rule)}"]
    if rule.keys:
        lines.append("  reads:      " + ", ".join(rule.keys))
    if rule.stage == "launch":
        lines += [
            "",
            "  a launch-time check of the machine the run starts on: `python -m fsdpcfg ...` runs it right "
            "before starting, `fsdpcfg check` does not (a cluster config is right on a laptop too)",
        ]
        return "\n".join(lines)
    if not rule.example:
        lines += ["", "  (the rule table gives no failing example for this rule)"]
        return "\n".join(lines)
    overrides = ruleinfo.example_overrides(rule)
    lines += ["", "example that fails:", f"  fsdpcfg check {' '.join(rule.example)}"]
    if not run_example:
        return "\n".join(lines)
    ex = ruleinfo.run_example(rule)
    if ex is None:  # the example gave no override to check
        return "\n".join(lines)
    if overrides != list(rule.example):
        lines.append(f"  (checked as: fsdpcfg check {' '.join(overrides)})")
    lines.append("")
    if ex.error:
        lines.append(f"  the example cannot be checked: {ex.error}")
    elif not ex.own:
        lines.append(
            f"  (on this tree the example does not trigger {rule.id}; "
            f"reported instead: {', '.join(sorted({f.rule for f in ex.others})) or 'nothing'})"
        )
    for f in ex.own:
        lines += _finding_lines(f)
    if ex.own and ex.others:
        lines.append(f"  (also reported on that config: {', '.join(sorted({f.rule for f in ex.others}))})")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    """Print the page; exit code 0 (2 for an unknown key or rule)."""
    if ruleinfo.RULE_ID.match(args.topic):
        if args.tokens:
            raise UsageError("a rule page takes no overrides", fix=f"fsdpcfg explain {args.topic}")
        print(rule_page(args.topic, run_example=not args.no_run))
    else:
        print(key_page(args.topic, args.tokens))
    return 0
