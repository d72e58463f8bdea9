"""Turn what a user names on the command line into a composed config.

A *target* is one of:

* a shipped recipe's name (``qwen_grpo``), same as ``+recipe=qwen_grpo``;
* a recipe file anywhere (``~/runs/my_grpo.yaml``): a YAML with a ``defaults:`` list or a
  ``# @package _global_`` header, composed as ``+recipe=my_grpo`` with its folder added to the recipe
  group (the way ``fsdpcfg check FILE`` does it);
* a full config YAML (a dumped, resolved config without a defaults list), read as it is;
* a verl run script (``run.sh``): its trainer command as ``fsdpcfg check run.sh`` composes it (read, never run),
  each value's source the script's line (:func:`load_script`).

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


#: file names read as run scripts (a file whose first line is a shell's ``#!`` is one too)
SCRIPT_SUFFIXES = (".sh", ".bash")


def is_script(token: str) -> bool:
    """True when ``token`` names an existing shell script: a ``.sh``/``.bash`` file, or a file whose first line
    is a ``#!`` naming a shell."""
    p = Path(token).expanduser()
    if not p.is_file():
        return False
    if p.suffix in SCRIPT_SUFFIXES:
        return True
    try:
        with open(p, "rb") as fh:
            first = fh.readline(200)
    except OSError:
        return False
    return first.startswith(b"#!") and any(sh in first for sh in (b"sh", b"bash"))


def load_script(path: Path, overrides: list[str], echo=None):
    """The :class:`fsdpcfg.compose.Composed` of a run script's trainer command, as ``fsdpcfg check`` composes
    it (:func:`fsdpcfg.check.sources.check_run_script`; ``overrides`` stand where the script writes ``"$@"``),
    with each value the script sets sourced to its line. A script with several trainer commands or paths gives
    the first; ``echo`` (default: standard error) names the others and ``fsdpcfg import``, which writes one recipe
    per command.

    Raises:
        UsageError: the script runs no verl trainer command.
        ConfigError: the command's config cannot be composed (the check's first error, with its fix).
    """
    import sys

    from fsdpcfg.check.sources import check_run_script
    from fsdpcfg.errors import ConfigError

    checked = check_run_script(path, overrides)
    composed = [c for c in checked if c.composed is not None]
    if not composed:
        errors = [f for c in checked for f in c.findings if f.severity == "error"]
        if errors:
            raise ConfigError(f"{path}: {errors[0].message}", fix=errors[0].fix)
        raise UsageError(f"{path}: no trainer command of it can be composed", fix=f"fsdpcfg check {path}")
    if len(composed) > 1:
        others = ", ".join(c.label for c in composed[1:])
        say = echo or (lambda line: print(line, file=sys.stderr))
        say(
            f"note: {path} has {len(composed)} trainer commands or paths; this is {composed[0].label} (the others: "
            f"{others}); `fsdpcfg import {path}` writes one recipe each"
        )
    return composed[0].composed


def load(tokens: list[str]):
    """Compose (or read) the config the tokens name and return a :class:`fsdpcfg.compose.Composed`.

    Raises:
        ConfigError: the composition fails (unknown key, unknown option, bad override).
    """
    from fsdpcfg.check.key_advice import KEY_ADVICE
    from fsdpcfg.compose import compose, config_file

    scripts = [t for t in tokens if "=" not in t and not t.startswith("~") and is_script(t)]
    if len(scripts) > 1:
        raise UsageError(
            f"more than one run script given ({' '.join(scripts)})", fix="give one script, then key=value overrides"
        )
    if scripts:
        rest = [t for t in tokens if t != scripts[0]]
        if any("=" not in t and not t.startswith("~") for t in rest):
            raise UsageError(
                f"a run script ({scripts[0]}) and a recipe given together",
                fix="give the script and key=value overrides, or a recipe",
            )
        return load_script(Path(scripts[0]), rest)
    overrides, dirs, full = split_args(tokens)
    if full is not None:
        return config_file.load(full)
    return compose(overrides, extra_recipe_dirs=dirs or None, keys=KEY_ADVICE)
