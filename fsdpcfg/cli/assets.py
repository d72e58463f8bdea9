"""``fsdpcfg assets build|list``: build the offline model assets, show what exists.

    fsdpcfg assets build                 # the default set (tiny-qwen2 and the tiny architectures tests use)
    fsdpcfg assets build --all           # also the on-demand ones (qwen2-100m, tiny-qwen2-arith, ...)
    fsdpcfg assets build --name tiny-qwen2-arith [--force]
    fsdpcfg assets list

Building is idempotent (a complete, current folder is skipped) and atomic (temporary folder, then rename).
"""

from __future__ import annotations

import argparse
import time

from fsdpcfg.errors import UsageError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register ``build`` and ``list`` with their options on ``parser``."""
    sub = parser.add_subparsers(dest="action", metavar="{build,list}")
    b = sub.add_parser("build", help="build missing or stale assets into $FSDPCFG_HOME/models")
    b.add_argument("--all", action="store_true", help="build every asset, on-demand ones included")
    b.add_argument(
        "--name",
        action="append",
        default=[],
        metavar="NAME",
        help="build this asset (repeatable); see `fsdpcfg assets list`",
    )
    b.add_argument("--force", action="store_true", help="rebuild even when a complete folder exists")
    sub.add_parser("list", help="list the assets, where they live and whether they are built")


def run(args: argparse.Namespace) -> int:
    """Run the chosen action; returns the exit code (0 on success)."""
    if args.action == "build":
        return _build(args)
    if args.action == "list":
        return _list()
    raise UsageError(
        "missing action", fix="use `fsdpcfg assets build [--all|--name NAME] [--force]` or `fsdpcfg assets list`"
    )


def _build(args: argparse.Namespace) -> int:
    from fsdpcfg import assets

    if args.all and args.name:
        raise UsageError("--all and --name exclude each other", fix="give one of them")
    names = list(assets.SPECS) if args.all else (args.name or assets.default_names())
    for n in names:
        assets.get_spec(n)  # every name checked before the first build starts
    start = time.perf_counter()
    for n in names:
        was = assets.is_complete(n)
        if was and not args.force:
            print(f"{n:<18} up to date   {assets.asset_path(n)}")
            continue
        t = time.perf_counter()
        path = assets.build(n, force=args.force, verbose=False)
        print(f"{n:<18} built {time.perf_counter() - t:5.1f} s {path}")
    print(f"{len(names)} asset(s) ready in {time.perf_counter() - start:.1f} s")
    return 0


def _list() -> int:
    from fsdpcfg import assets

    print(f"{'name':<20} {'state':<8} {'set':<9} {'built from':<21} {'source config':<40} path")
    covered = []
    for n, spec in assets.SPECS.items():
        path = assets.asset_path(n)
        state = "built" if assets.is_complete(n) else ("stale" if path.exists() else "missing")
        kind = "default" if spec.default else "on-demand"
        label = spec.source_label + ("" if spec.weights else " (config only)")
        print(f"{n:<20} {state:<8} {kind:<9} {spec.built_from:<21} {label:<40} {path}")
        covered += [(real, n, spec) for real in spec.covers]
    if covered:
        print("\nreal checkpoints covered by a row (same architecture class and model_type):")
        for real, n, spec in covered:
            arch = (spec.defaults_args.get("architectures") or [""])[0]
            print(f"  {real:<38} -> {n}" + (f" ({arch})" if arch else ""))
    return 0
