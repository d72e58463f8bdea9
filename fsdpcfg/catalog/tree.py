"""Read the config tree as a catalogue: recipes, groups, options and their one-line descriptions.

Nothing here is hand-kept: the options are the ``*.yaml`` files of each group folder, the groups are the
root ``config.yaml``'s defaults list (per config kind), and an option's description is the first comment
line of its file that is not a Hydra or editor directive (``# @package ...``, ``# yaml-language-server:``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from fsdpcfg import paths

#: Comment lines that are directives for tools, not descriptions.
_DIRECTIVES = ("@package", "yaml-language-server:")


@dataclass(frozen=True)
class Option:
    """One selectable YAML file of the tree.

    Attributes:
        group: the config group (``engine``, ``model``, ..., ``recipe``).
        name: the option name (the file stem), as written after ``group=``.
        path: the YAML file.
        kind: the config kind whose tree holds it (``ppo`` or ``sft``; recipes: the kind they extend).
        description: the first descriptive comment line ("" when the file has none).
        is_default: the root config's defaults list picks this option.
    """

    group: str
    name: str
    path: Path
    kind: str
    description: str
    is_default: bool = False


def comment_block(path: Path) -> list[str]:
    """Return the leading comment lines of a YAML file, ``#`` stripped, directives and blanks dropped.

    Reading stops at the first line that is neither a comment nor blank (the first key). A bare ``#`` line
    inside the block is kept as ``""`` (a paragraph break), except at the start.
    """
    out: list[str] = []
    for raw in Path(path).read_text().splitlines():
        line = raw.strip()
        if not line:
            if out:
                break
            continue
        if not line.startswith("#"):
            break
        text = line[1:].strip()
        if text.startswith(_DIRECTIVES):
            continue
        if text or out:
            out.append(text)
    while out and not out[-1]:
        out.pop()
    return out


def describe(path: Path) -> str:
    """Return the one-line description of a YAML option file: its first descriptive comment line."""
    block = comment_block(path)
    return block[0] if block else ""


def kinds() -> list[str]:
    """Return the config kinds whose tree exists (``ppo`` first)."""
    out = []
    for k in paths.KINDS:
        try:
            paths.conf_dir(k)
        except FileNotFoundError:
            continue
        out.append(k)
    return out


def root_defaults(kind: str = "ppo") -> dict[str, str]:
    """Return ``{group: option}`` as the root ``config.yaml`` of ``kind`` picks them (verl's own tree, the first
    entry, is not a group a user picks: :mod:`fsdpcfg.compose.verl_base`)."""
    from fsdpcfg.compose.verl_base import GROUP

    data = yaml.safe_load((paths.conf_dir(kind) / "config.yaml").read_text()) or {}
    out: dict[str, str] = {}
    for entry in data.get("defaults", []):
        if isinstance(entry, dict):
            for k, v in entry.items():
                name = str(k).replace("override ", "").strip().lstrip("/").split("@")[0]
                if name not in ("_self_", GROUP) and isinstance(v, str):
                    out[name] = v
    return out


def group_options(group: str, kind: str = "ppo") -> list[Option]:
    """Return the options of ``group`` in the ``kind`` tree, sorted by name (``recipe`` lists recipes)."""
    if group == "recipe":
        return recipes()
    chosen = root_defaults(kind).get(group)
    folder = paths.conf_dir(kind) / group
    return [Option(group, f.stem, f, kind, describe(f), f.stem == chosen) for f in sorted(folder.glob("*.yaml"))]


def recipes() -> list[Option]:
    """Return the shipped recipes (``recipes/*.yaml``), sorted by name, each with the kind it extends."""
    from fsdpcfg.compose import recipe_kind

    folder = paths.recipes_dir()
    return [Option("recipe", f.stem, f, recipe_kind(f.stem), describe(f)) for f in sorted(folder.glob("*.yaml"))]


def groups(kind: str = "ppo") -> tuple[str, ...]:
    """Return the groups of the ``kind`` tree in the root defaults list's order."""
    return tuple(root_defaults(kind))


def all_options() -> list[Option]:
    """Return every group option of every kind (recipes not included), in tree order."""
    out: list[Option] = []
    for kind in kinds():
        for g in groups(kind):
            out.extend(group_options(g, kind))
    return out


def ordered_choices(choices: dict[str, str], kind: str = "ppo") -> dict[str, str]:
    """Return ``choices`` (Hydra's group -> option) as ``recipe`` first, then the groups in tree order."""
    order = ["recipe", *groups(kind)]
    return dict(sorted(choices.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else len(order)))
