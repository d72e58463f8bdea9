"""``fsdpcfg schema [--check] [--out DIR] [--print NAME]``: export JSON Schema from the Pydantic models.

Writes ``schemas/fsdpcfg.schema.json`` (partial configs: recipes and group options; every key optional,
unknown keys rejected, interpolations allowed) and ``schemas/fsdpcfg.strict.schema.json`` (a complete
resolved config). Editors that speak the YAML language server protocol (VS Code's YAML extension, Neovim,
JetBrains) then complete and check keys in any file that starts with::

    # yaml-language-server: $schema=../schemas/fsdpcfg.schema.json

``--check`` writes nothing and exits 1 when a checked-in file is stale (for CI and pre-commit).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from fsdpcfg.catalog import schema_files
from fsdpcfg.errors import UsageError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register ``schema``'s arguments."""
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        metavar="DIR",
        help="folder to write to (default: the repository's schemas/; installed: ./schemas)",
    )
    parser.add_argument("--check", action="store_true", help="only report stale files; exit 1 if any")
    parser.add_argument(
        "--print",
        dest="show",
        metavar="NAME",
        default=None,
        help="print one schema (e.g. fsdpcfg.schema.json) to stdout instead of writing",
    )


def run(args: argparse.Namespace) -> int:
    """Write, check or print the schema files."""
    folder = args.out or schema_files.output_dir()
    if args.show:
        docs = schema_files.build()
        if args.show not in docs:
            raise UsageError(f"no schema named {args.show}", fix=f"choose one of: {', '.join(docs)}")
        print(schema_files.render(docs[args.show]), end="")
        return 0
    if args.check:
        stale = schema_files.stale(folder)
        if stale:
            print(f"stale schema files in {folder}: {', '.join(stale)}\n  -> run `fsdpcfg schema` and commit them")
            return 1
        print(f"{folder}: up to date")
        return 0
    for path in schema_files.write(folder):
        print(f"wrote {path}")
    return 0
