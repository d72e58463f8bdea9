"""``fsdpcfg cp RECIPE DEST [--expand]``: start a recipe of your own from an existing one.

By default DEST is a minimal *child* recipe: its defaults list names the original (``- qwen_grpo``, then
``_self_``), so it inherits every group choice and key and stays in step when the original changes; you add
only what differs. ``--expand`` writes a flat, self-contained copy instead: every group choice pinned with
``override /GROUP: OPTION`` and every key the original's recipe chain sets. Either way DEST composes to
exactly the config the original does until you edit it.

DEST may live anywhere; it is run by path (its folder joins the recipe group):

    fsdpcfg cp qwen_grpo ~/runs/my_grpo.yaml
    fsdpcfg show ~/runs/my_grpo.yaml
    fsdpcfg check ~/runs/my_grpo.yaml
    python -m fsdpcfg +recipe=~/runs/my_grpo.yaml
"""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path

import yaml

from fsdpcfg import catalog, paths, yamlio
from fsdpcfg.errors import UsageError, did_you_mean


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register ``cp``'s arguments."""
    parser.add_argument("recipe", metavar="RECIPE", help="a shipped recipe's name (`fsdpcfg ls`) or a recipe file")
    parser.add_argument("dest", metavar="DEST", help="the new recipe file (`.yaml` is added when missing)")
    parser.add_argument(
        "--expand", action="store_true", help="write a flat copy (all group choices and keys) instead of a child recipe"
    )
    parser.add_argument("--force", "-f", action="store_true", help="overwrite DEST if it exists")


def _source(recipe: str) -> tuple[str, Path, list[Path]]:
    """Return (name, file, extra recipe dirs) of the recipe to copy."""
    if recipe.endswith((".yaml", ".yml")) or "/" in recipe:
        (over,), dirs = catalog.recipe_overrides(Path(recipe))
        name = over.split("=", 1)[1]
        return name, Path(recipe).expanduser().resolve(), dirs
    names = [r.name for r in catalog.recipes()]
    if recipe not in names:
        close = did_you_mean(recipe, names)
        raise UsageError(
            f"no recipe `{recipe}`",
            key="recipe",
            fix=(f"did you mean {close[0]}? " if close else "") + f"recipes: {', '.join(names)}",
        )
    return recipe, paths.recipes_dir() / f"{recipe}.yaml", []


def _dest(dest: str, src: Path, force: bool) -> Path:
    path = paths.recipe_target(dest, f"my_{src.stem}")
    if path.exists() and not force:
        raise UsageError(f"{path} exists", fix="choose another name, or pass --force to overwrite it")
    if path.resolve() == src.resolve():
        raise UsageError(f"{path} is the recipe being copied", fix="choose another name")
    shipped = paths.recipes_dir() / f"{path.stem}.yaml"
    if shipped.is_file() and shipped.resolve() != path.resolve():
        raise UsageError(
            f"the name `{path.stem}` shadows the shipped recipe of that name",
            fix=f"choose another name, e.g. my_{path.stem}.yaml",
        )
    return path


def _schema_ref(dest: Path) -> str:
    """The schema path for the editor header: relative inside the repository, absolute outside it."""
    schema = paths.REPO_DIR / "schemas" / "fsdpcfg.schema.json"
    where = dest.resolve().parent
    if where == paths.REPO_DIR or paths.REPO_DIR in where.parents:
        return os.path.relpath(schema, where)
    return str(schema)


def _description(src: Path, name: str) -> str:
    """The original's one-line description without a previous copy's ``Child of recipe `x`:`` prefix."""
    desc = catalog.describe(src) or f"recipe {name}"
    return re.sub(r"^(Child of|Flat copy of) recipe `[^`]+`( \([^)]*\))?: ", "", desc)


def child_text(name: str, src: Path, dest: Path) -> str:
    """Return the YAML of a child recipe of ``name`` (file ``src``) to be written at ``dest``."""
    desc = _description(src, name)
    run = (
        f"python -m fsdpcfg +recipe={dest}"
        if dest.resolve().parent != paths.recipes_dir()
        else f"python -m fsdpcfg +recipe={dest.stem}"
    )
    return (
        f"# @package _global_\n# yaml-language-server: $schema={_schema_ref(dest)}\n#\n"
        f"# Child of recipe `{name}`: {desc}\n"
        f"# It inherits every group choice and key of {name}; add only what differs below.\n"
        f"#   Show:  fsdpcfg show {dest}\n#   Check: fsdpcfg check {dest}\n#   Run:   {run}\n"
        f"defaults:\n  - {name}\n  # - override /rollout: vllm     # change a group option like this\n"
        f"  - _self_\n\n# Keys in verl's names override {name}'s, e.g.:\n"
        f"# data:\n#   train_batch_size: 8\n"
    )


def expanded_text(name: str, dirs: list[Path], dest: Path) -> str:
    """Return a flat recipe equal to ``name``: all group choices pinned, every key its recipe chain sets."""
    from fsdpcfg.check.key_advice import KEY_ADVICE
    from fsdpcfg.compose import compose, recipe_chain

    composed = compose([f"+recipe={name}"], extra_recipe_dirs=dirs or None, keys=KEY_ADVICE)
    chain = recipe_chain(name, dirs)
    body: dict = {}
    for f in chain:
        data = yamlio.load_file(f) or {}
        data.pop("defaults", None)
        body = _merge(body, data)
    choices = catalog.ordered_choices(composed.choices, composed.kind)
    lines = [
        "# @package _global_",
        f"# yaml-language-server: $schema={_schema_ref(dest)}",
        "#",
        f"# Flat copy of recipe `{name}` ({', '.join(f.name for f in chain)}): {_description(chain[-1], name)}",
        f"#   Run: python -m fsdpcfg +recipe={dest}",
        "defaults:",
    ]
    lines += [f"  - override /{g}: {o}" for g, o in choices.items() if g != "recipe"]
    lines += ["  - _self_", ""]
    if body:
        lines.append(yaml.safe_dump(body, sort_keys=False, default_flow_style=False, width=110).rstrip())
    return "\n".join(lines) + "\n"


def _merge(a: dict, b: dict) -> dict:
    out = dict(a)
    for k, v in b.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) and v else v
    return out


def run(args: argparse.Namespace) -> int:
    """Write DEST and print how to use it; exit code 0."""
    name, src, dirs = _source(args.recipe)
    dest = _dest(args.dest, src, args.force)
    if not args.expand and dirs and dirs[0] != dest.resolve().parent:
        raise UsageError(
            f"a child of {src} must sit in the same folder ({dirs[0]}) to find its parent",
            fix="write DEST into that folder, or pass --expand for a self-contained copy",
        )
    text = expanded_text(name, dirs, dest) if args.expand else child_text(name, src, dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(text)
    how = "flat copy" if args.expand else "child recipe"
    print(
        f"wrote {dest} ({how} of {name})\n  show:  fsdpcfg show {dest}\n  check: fsdpcfg check {dest}\n"
        f"  run:   python -m fsdpcfg +recipe={dest}"
    )
    return 0
