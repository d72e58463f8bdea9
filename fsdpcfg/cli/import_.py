"""``fsdpcfg import SCRIPT [-- ARGS] [-o recipes/NAME.yaml]``: turn a verl run script into a fsdpcfg recipe.

The script is read as ``fsdpcfg check SCRIPT`` reads it (:func:`fsdpcfg.check.sources.read_run_script`: bash's
grammar, nothing runs; ``-- ARGS`` are its positional arguments) and each verl trainer command becomes one recipe
(:func:`fsdpcfg.check.runscript.to_recipe.import_command`): its group options as a Hydra defaults list, every key it
sets in verl's name with the value bash gives it and the script line beside it. A script with several trainer
commands, or several paths the reader cannot choose between (``DEVICE=gpu`` / ``DEVICE=npu``), gives one file
each: ``NAME_2.yaml`` for a second command, ``NAME_DEVICE_gpu.yaml`` for a path.

The default file is ``recipes/<script stem>.yaml`` under the current folder. An existing file is never
overwritten; each file is written atomically, and none is written when any cannot be.

    fsdpcfg import run_grpo.sh
    fsdpcfg check recipes/run_grpo.yaml
    python -m fsdpcfg +recipe=recipes/run_grpo.yaml
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

from fsdpcfg.errors import UsageError

#: ``fsdpcfg.cli.main`` calls :func:`parse` (the words after ``--`` are the run script's own arguments).
PASS_THROUGH = True


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register ``import``'s arguments."""
    parser.usage = "fsdpcfg import SCRIPT [-o recipes/NAME.yaml] [-- ARGS]"
    parser.add_argument("script", metavar="SCRIPT", help="a verl run script (bash; read, never run)")
    parser.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="the recipe file to write (default recipes/<script stem>.yaml; several commands add _2, _LABEL)",
    )


def parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """Parse ``import``'s command line; the words after the first ``--`` become ``script_args`` (``None``
    without ``--``): the positional arguments of the script."""
    script_args = None
    if "--" in argv:
        i = argv.index("--")
        argv, script_args = argv[:i], argv[i + 1 :]
    args = parser.parse_args(argv)
    args.script_args = script_args
    return args


def safe_label(label: str) -> str:
    """A path label (``DEVICE=gpu``, ``MODEL_SIZE=*7b|*8b``) as part of a file name (``DEVICE_gpu``,
    ``MODEL_SIZE_7b_8b``)."""
    return re.sub(r"[^A-Za-z0-9.-]+", "_", label).strip("_.")[:60] or "path"


def plan(script: Path, script_args: list[str] | None, dest: Path) -> tuple[list[tuple[Path, Any]], list[str]]:
    """Read ``script`` and return ``([(file, ImportedRecipe)] per trainer command, [commands skipped, with
    why])``, nothing written (:class:`fsdpcfg.check.runscript.to_recipe.ImportedRecipe`).

    Raises:
        UsageError: the script does not exist, runs no verl command, or no trainer fsdpcfg imports; a file to
            write exists already, or would be shadowed by a shipped recipe of its name.
        ConfigError: a group option of the script that does not exist.
    """
    from fsdpcfg import paths
    from fsdpcfg.check.runscript.fork import MAX_VARIANTS
    from fsdpcfg.check.runscript.to_recipe import import_command
    from fsdpcfg.check.sources import no_verl_command, read_run_script

    read = read_run_script(script, args=script_args)
    if not read.kept:
        no_verl_command(script, read.variants[0].evaluation)
    kept = read.kept[:MAX_VARIANTS]
    out: list[tuple[Path, Any]] = []
    skipped: list[str] = []
    names: set[str] = set()
    for label, ev, cmds in kept:
        n = 0
        for vc in cmds:
            try:
                n += 1
                stem = dest.stem
                if len(kept) > 1:
                    stem += "_" + safe_label(label)
                if n > 1:
                    stem += f"_{n}"
                while stem in names:
                    stem += "_"
                names.add(stem)
                f = dest.with_name(stem + dest.suffix)
                where = f"{script}:{vc.line}"
                rec = import_command(vc, ev, script, label=where, variant=label, recipe_path=f)
            except ValueError as e:
                skipped.append(f"{script}:{vc.line}: {e}")
                names.discard(stem)
                n -= 1
                continue
            out.append((f, rec))
    if not out:
        raise UsageError(
            f"{script}: no verl trainer command fsdpcfg imports ({'; '.join(skipped)})",
            fix="give a script that runs verl.trainer.main_ppo or verl.trainer.sft_trainer",
        )
    for f, _ in out:
        if f.exists():
            raise UsageError(f"{f} exists; fsdpcfg import never overwrites a file", fix="give another file with -o")
        shipped = paths.recipes_dir() / f"{f.stem}.yaml"
        if shipped.is_file():
            raise UsageError(
                f"the name `{f.stem}` is a shipped recipe's, which would shadow {f}",
                fix=f"give another file with -o, e.g. -o {f.with_name('my_' + f.name)}",
            )
    return out, skipped


def run(args: argparse.Namespace) -> int:
    """Write the recipes and print each file, what it could not hold, and how to check and run it; exit 0."""
    from fsdpcfg.paths import atomic_write_text

    script = Path(args.script).expanduser()
    if script.suffix in (".yaml", ".yml"):
        raise UsageError(f"{script} is a YAML file, not a run script", fix="give the shell script that runs verl")
    from fsdpcfg.paths import recipe_target

    dest = recipe_target(args.output, script.stem) if args.output else Path("recipes") / f"{script.stem}.yaml"
    planned, skipped = plan(script, args.script_args, dest)
    for f, _ in planned:
        f.parent.mkdir(parents=True, exist_ok=True)
    for f, rec in planned:
        atomic_write_text(f, rec.text)
    for f, rec in planned:
        keys = len(rec.translation.user_overrides)
        print(f"wrote {f} (from {rec.origin}: {rec.entry}, {keys} key(s) set)")
        for m in rec.migrated:
            print(f"  migrated: {m}")
        for d in rec.dropped:
            print(f"  not imported: {d}")
    for s in skipped:
        print(f"skipped: {s}")
    print("next:")
    for f, _ in planned:
        print(f"  fsdpcfg check {f}\n  python -m fsdpcfg +recipe={f}")
    return 0
