"""``fsdpcfg show [RECIPE|FILE] [OVERRIDES...]``: the resolved config with each value's provenance.

The recipe is named as ``+recipe=NAME``, as a bare ``NAME``, or as a path to a recipe file of your own
(``show ~/runs/my_grpo.yaml``); a full config YAML (a dumped config) is shown as it is. Every leaf is
printed with its resolved value and where it came from: ``file:line`` of the root config,
``group=option (file:line)``, ``recipe=NAME (file:line)`` or the command-line override. Interpolated
values also show the expression they were written as.

    $ fsdpcfg show +recipe=qwen_grpo --key actor_rollout_ref.rollout.n
    KEY                           VALUE  SOURCE
    actor_rollout_ref.rollout.n   4      recipe=qwen_grpo (recipes/qwen_grpo.yaml:31)
"""

from __future__ import annotations

import argparse

from fsdpcfg import catalog
from fsdpcfg.errors import UsageError, did_you_mean

#: The arguments are Hydra overrides mixed with show's own options.
PASS_THROUGH = True


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register ``show``'s arguments."""
    parser.add_argument(
        "tokens",
        nargs="*",
        metavar="RECIPE|FILE|OVERRIDE",
        help="a recipe (+recipe=NAME, NAME or a recipe file path) or a config file, then Hydra "
        "overrides (key=value, +key=value, ~key, group=option)",
    )
    parser.add_argument(
        "--format",
        choices=("table", "yaml", "json"),
        default="table",
        help="table: aligned key/value/source columns; yaml: nested, sources as comments; "
        "json: {choices, config, provenance}",
    )
    parser.add_argument(
        "--key",
        "-k",
        action="append",
        default=[],
        metavar="PREFIX",
        help="show only this key or the keys under it (repeatable)",
    )
    parser.add_argument("--choices", action="store_true", help="print only the chosen group options")


def parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """Parse options and overrides in any order (``show +recipe=x --format yaml a.b=1``)."""
    return parser.parse_intermixed_args(argv)


def _filter(rows: list[catalog.Row], prefixes: list[str]) -> list[catalog.Row]:
    if not prefixes:
        return rows
    out = [r for r in rows if any(r.key == p or r.key.startswith(p + ".") for p in prefixes)]
    if not out:
        close = did_you_mean(prefixes[0], [r.key for r in rows])
        raise UsageError(
            f"no key `{prefixes[0]}` in the config",
            key=prefixes[0],
            fix=(f"did you mean {close[0]}?" if close else "run `fsdpcfg show` without --key"),
        )
    return out


def run(args: argparse.Namespace) -> int:
    """Compose the config and print it; exit code 0 (a composition error is reported by the CLI)."""
    composed = catalog.load(args.tokens)
    choices = catalog.ordered_choices(composed.choices, composed.kind)
    if args.choices:
        body = [[g, o] for g, o in choices.items()]
        print(catalog.table(["GROUP", "OPTION"], body) if body else "(a full config file: no group choices)")
        return 0
    rows = _filter(catalog.rows(composed), args.key)
    if args.format == "json":
        print(catalog.rows_json(rows, choices))
    elif args.format == "yaml":
        if choices:
            print("# choices: " + " ".join(f"{g}={o}" for g, o in choices.items()))
        print(catalog.rows_yaml(rows))
    else:
        if choices:
            print("choices: " + " ".join(f"{g}={o}" for g, o in choices.items()) + "\n")
        print(catalog.rows_table(rows))
    return 0
