"""``fsdpcfg ls [GROUP ...]``: list the recipes and every group option, each with its one-line description.

Everything is read from the config tree: the groups from the root ``config.yaml``'s defaults list, the
options from the group folders, the descriptions from the first comment line of each file. ``*`` marks the
option the root config picks when a recipe does not choose another.

    $ fsdpcfg ls
    RECIPE     KIND  DESCRIPTION
    qwen_grpo  ppo   GRPO on GSM8K with a Qwen2-architecture model.
    ...
"""

from __future__ import annotations

import argparse
import json

from fsdpcfg import catalog
from fsdpcfg.errors import UsageError, did_you_mean


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register ``ls``'s arguments."""
    parser.add_argument(
        "groups",
        nargs="*",
        metavar="GROUP",
        help="list only these groups (`recipe` for the recipes); default: everything",
    )
    parser.add_argument("--format", choices=("table", "json"), default="table", help="output format")


def _selected(names: list[str]) -> tuple[bool, list[catalog.Option]]:
    """Return (list the recipes?, the group options to list) for the GROUP arguments."""
    options = catalog.all_options()
    known = ["recipe", *dict.fromkeys(o.group for o in options)]
    for name in names:
        if name not in known:
            close = did_you_mean(name, known)
            raise UsageError(
                f"no config group `{name}`",
                key=name,
                fix=(f"did you mean `{close[0]}`? " if close else "") + f"groups: {', '.join(known)}",
            )
    if not names:
        return True, options
    return "recipe" in names, [o for o in options if o.group in names]


def _groups_table(options: list[catalog.Option]) -> str:
    kinds = {o.kind for o in options}
    body = []
    for o in options:
        group = o.group if len(kinds) == 1 else f"{o.group} ({o.kind})"
        body.append([group, o.name + (" *" if o.is_default else ""), o.description or "(no description)"])
    return catalog.table(["GROUP", "OPTION", "DESCRIPTION"], body)


def run(args: argparse.Namespace) -> int:
    """Print the catalogue; exit code 0."""
    with_recipes, options = _selected(args.groups)
    recipes = catalog.recipes() if with_recipes else []
    if args.format == "json":
        doc = {
            "recipes": [
                {"name": r.name, "kind": r.kind, "description": r.description, "path": str(r.path)} for r in recipes
            ],
            "options": [
                {
                    "group": o.group,
                    "kind": o.kind,
                    "name": o.name,
                    "default": o.is_default,
                    "description": o.description,
                    "path": str(o.path),
                }
                for o in options
            ],
        }
        print(json.dumps(doc, indent=2))
        return 0
    parts = []
    if with_recipes:
        body = [[r.name, r.kind, r.description or "(no description)"] for r in recipes]
        parts.append(catalog.table(["RECIPE", "KIND", "DESCRIPTION"], body))
    if options:
        parts.append(_groups_table(options))
    print("\n\n".join(parts))
    if options:
        print(
            "\n* = the root config's default. Pick an option with GROUP=OPTION on the command line or in a "
            "recipe's defaults list;\n`fsdpcfg show +recipe=NAME` prints what a recipe resolves to."
        )
    return 0
