"""``fsdpcfg diff A B [OVERRIDES...]``: the difference of two resolved configs, independent of key order.

A and B are each a recipe name, a recipe file or a full config YAML (a dumped config); OVERRIDES apply
to both sides. ``--a "..." --b "..."`` instead gives each side as its own override list. Values are
compared after interpolation, so changing ``data.max_prompt_length`` also shows the keys that follow it.

    $ fsdpcfg diff qwen_grpo ~/runs/my_grpo.yaml trainer=gpu_1x     # two recipes, on one GPU each
    $ fsdpcfg diff --a qwen_grpo --b "qwen_grpo rollout=vllm"        # what picking vLLM changes

Group choices are compared too (except the recipe's own name); a full config file has none.
"""

from __future__ import annotations

import argparse
import json
import shlex
from typing import Any

from fsdpcfg import catalog
from fsdpcfg.errors import UsageError

PASS_THROUGH = True


def _words(option: str, text: str) -> list[str]:
    """Split an ``--a``/``--b`` value like a shell would.

    Raises:
        UsageError: unbalanced quotes.
    """
    try:
        return shlex.split(text)
    except ValueError as e:
        raise UsageError(f"{option} {text!r}: {e}", fix="balance the quotes inside the value") from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register ``diff``'s arguments."""
    parser.add_argument(
        "tokens",
        nargs="*",
        metavar="A B [OVERRIDE]",
        help="two recipes / recipe files / config files, then overrides applied to both",
    )
    parser.add_argument(
        "--a",
        dest="side_a",
        metavar="ARGS",
        help='side A as one quoted argument list, e.g. "+recipe=qwen_grpo rollout=vllm"',
    )
    parser.add_argument("--b", dest="side_b", metavar="ARGS", help="side B, like --a")
    parser.add_argument("--sources", action="store_true", help="also print where each side's value came from")
    parser.add_argument("--format", choices=("table", "json"), default="table", help="output format")
    parser.add_argument("--exit-code", action="store_true", help="exit with 1 when the configs differ")


def parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """Parse options and positional tokens in any order."""
    return parser.parse_intermixed_args(argv)


def sides(args: argparse.Namespace) -> tuple[list[str], list[str]]:
    """Return the token lists of side A and side B.

    Raises:
        UsageError: neither two targets nor ``--a``/``--b`` were given, or both forms were mixed badly.
    """
    if args.side_a is not None or args.side_b is not None:
        if args.side_a is None or args.side_b is None:
            raise UsageError("--a and --b go together", fix='give both, e.g. --a "+recipe=x" --b "+recipe=x k=v"')
        common = list(args.tokens)
        return _words("--a", args.side_a) + common, _words("--b", args.side_b) + common
    targets = [t for t in args.tokens if "=" not in t and not t.startswith("~")]
    overrides = [t for t in args.tokens if t not in targets]
    if len(targets) != 2:
        raise UsageError(
            f"diff needs two recipes or config files, got {len(targets)}: {' '.join(targets) or '-'}",
            fix='fsdpcfg diff A B [OVERRIDES], or fsdpcfg diff --a "OVERRIDES" --b "OVERRIDES"',
        )
    return [targets[0], *overrides], [targets[1], *overrides]


def same(a: Any, b: Any) -> bool:
    """Equality of two leaf values where ``True != 1`` but ``1 == 1.0``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return a == b


def differences(rows_a: list[catalog.Row], rows_b: list[catalog.Row]) -> list[tuple[str, Any, Any, str, str]]:
    """Return ``(key, value A, value B, source A, source B)`` for every key whose values differ, in A's key
    order then B's extra keys; a key missing on one side has :data:`fsdpcfg.catalog.ABSENT` there."""
    a = {r.key: r for r in rows_a}
    b = {r.key: r for r in rows_b}
    out = []
    for key in list(a) + [k for k in b if k not in a]:
        ra, rb = a.get(key), b.get(key)
        va = ra.value if ra else catalog.ABSENT
        vb = rb.value if rb else catalog.ABSENT
        if ra is None or rb is None or not same(va, vb):
            out.append((key, va, vb, ra.source if ra else "", rb.source if rb else ""))
    return out


def _label(tokens: list[str]) -> str:
    return " ".join(tokens)


def run(args: argparse.Namespace) -> int:
    """Print the differences; exit code 0 (1 with ``--exit-code`` when they differ)."""
    ta, tb = sides(args)
    ca, cb = catalog.load(ta), catalog.load(tb)
    diff = differences(catalog.rows(ca), catalog.rows(cb))
    ch_a = catalog.ordered_choices(ca.choices, ca.kind)
    ch_b = catalog.ordered_choices(cb.choices, cb.kind)
    groups = (
        []
        if "file" in (ca.origin, cb.origin)
        else [g for g in dict.fromkeys([*ch_a, *ch_b]) if g != "recipe" and ch_a.get(g) != ch_b.get(g)]
    )
    if args.format == "json":
        print(
            json.dumps(
                {
                    "a": ta,
                    "b": tb,
                    "choices": {g: [ch_a.get(g), ch_b.get(g)] for g in groups},
                    "keys": {k: {"a": va, "b": vb, "source_a": sa, "source_b": sb} for k, va, vb, sa, sb in diff},
                },
                indent=2,
                default=str,
            )
        )
        return 1 if args.exit_code and (diff or groups) else 0
    print(f"A: {_label(ta)}\nB: {_label(tb)}")
    if not diff and not groups:
        print("no differences")
        return 0
    if groups:
        print("\ngroup choices:")
        for g in groups:
            print(f"  {g}: {ch_a.get(g, catalog.ABSENT)} -> {ch_b.get(g, catalog.ABSENT)}")
    if diff:
        fmt = catalog.format_value
        show = lambda v: v if v is catalog.ABSENT else fmt(v)  # noqa: E731
        if args.sources:
            body = [[k, show(va), show(vb), sa or "-", sb or "-"] for k, va, vb, sa, sb in diff]
            text = catalog.table(["KEY", "A", "B", "SOURCE A", "SOURCE B"], body)
        else:
            text = catalog.table(["KEY", "A", "B"], [[k, show(va), show(vb)] for k, va, vb, _, _ in diff])
        print(f"\n{len(diff)} key(s) differ:\n{text}")
    return 1 if args.exit_code else 0
