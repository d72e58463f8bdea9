"""Turn what a user names on the command line into a composed config.

A *target* is one of:

* a shipped recipe's name (``qwen_grpo``), same as ``+recipe=qwen_grpo``;
* a recipe file anywhere (``~/runs/my_grpo.yaml``): a YAML with a ``defaults:`` list or a
  ``# @package _global_`` header, composed as ``+recipe=my_grpo`` with its folder added to the recipe
  group (the way ``fsdpcfg check FILE`` does it);
* a full config YAML (a dumped, resolved config without a defaults list), read as it is.

Hydra overrides may follow a target; a ``+recipe=PATH.yaml`` override is accepted too.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from fsdpcfg import paths
from fsdpcfg.compose import YAML_SUFFIXES as _SUFFIXES
from fsdpcfg.compose import validate_recipe_file
from fsdpcfg.errors import UsageError


def is_recipe_file(path: Path) -> bool:
    """True when the YAML at ``path`` is a recipe (a ``defaults:`` list of fsdpcfg's groups, a ``@package``
    header, a few sections, or a file of the shipped recipes folder); False for a full config file or a verl
    config file (:func:`fsdpcfg.compose.config_file.classify`, the one classification ``check`` uses too)."""
    from fsdpcfg.compose import config_file

    path = Path(path)
    if path.resolve().parent == paths.recipes_dir().resolve():
        return True
    try:
        _, info = config_file.read(path)
    except yaml.YAMLError:
        return True  # let Hydra report the syntax error with its location
    return info.kind == "recipe"


def _looks_like_path(token: str) -> bool:
    return token.endswith(_SUFFIXES) or "/" in token


def recipe_overrides(path: Path) -> tuple[list[str], list[Path]]:
    """Return ``(["+recipe=STEM"], [folder])`` that select the recipe file at ``path``.

    Raises:
        UsageError: the file does not exist, or its name shadows a different shipped recipe.
    """
    path = Path(path).expanduser()
    validate_recipe_file(path)
    shipped = paths.recipes_dir() / f"{path.stem}.yaml"
    if shipped.is_file() and shipped.resolve() != path.resolve():
        raise UsageError(
            f"{path}: its name shadows the shipped recipe `{path.stem}`, which Hydra would pick instead",
            fix=f"rename the file, e.g. my_{path.stem}.yaml",
        )
    return [f"+recipe={path.stem}"], [path.resolve().parent]


def split_args(tokens: list[str]) -> tuple[list[str], list[Path], Path | None]:
    """Split command-line tokens into ``(overrides, extra_recipe_dirs, full_config_file)``.

    A bare word (no ``=``, not ``~key``) is a recipe name; a token ending in ``.yaml`` or holding a ``/``
    is a recipe file or a full config file; ``+recipe=PATH.yaml`` selects a recipe file. At most one
    target may be given.

    Raises:
        UsageError: two targets, or a full config file combined with overrides.
    """
    overrides: list[str] = []
    dirs: list[Path] = []
    full: Path | None = None
    targets = 0
    for tok in tokens:
        value = tok.split("=", 1)[1] if tok.startswith(("+recipe=", "recipe=")) else None
        if value is not None and _looks_like_path(value):
            tok = value
        elif "=" in tok or tok.startswith("~"):
            overrides.append(tok)
            continue
        targets += 1
        if targets > 1:
            raise UsageError(
                f"more than one recipe or config file given (`{tok}`)", fix="give one recipe, then key=value overrides"
            )
        if _looks_like_path(tok):
            p = Path(tok).expanduser()
            validate_recipe_file(p)  # missing, a folder, not UTF-8, not YAML, empty, not a mapping
            if is_recipe_file(p):
                o, d = recipe_overrides(p)
                overrides, dirs = o + overrides, dirs + d
            else:
                full = p
        else:
            overrides.insert(0, f"+recipe={tok}")
    if full is not None and overrides:
        raise UsageError(
            f"{full} is a full config file; overrides ({' '.join(overrides)}) do not apply to it",
            fix="give a recipe (name or file) to compose with overrides",
        )
    return overrides, dirs, full


def load(tokens: list[str]):
    """Compose (or read) the config the tokens name and return a :class:`fsdpcfg.compose.Composed`.

    Raises:
        ConfigError: the composition fails (unknown key, unknown option, bad override).
    """
    from fsdpcfg.check.key_advice import KEY_ADVICE
    from fsdpcfg.compose import compose, config_file

    overrides, dirs, full = split_args(tokens)
    if full is not None:
        return config_file.load(full)
    return compose(overrides, extra_recipe_dirs=dirs or None, keys=KEY_ADVICE)
