"""Stage 1, compose: Hydra composes ``conf/`` + ``recipes/`` + overrides into one config in verl's key names.

Public API: :func:`compose`, :class:`Composed`, :class:`ComposeError` (the override Hydra refused and why),
:class:`KeyAdvice` (what an unknown key's error asks of the schema, handed in by the caller),
:func:`group_fallback`, :func:`load_yaml_config`, :func:`unknown_key_error` (a refused unknown key and its
did-you-mean); the tree's groups and their options
(:data:`GROUPS`, :func:`groups`, :func:`available_options`); recipes (:func:`recipe_kind`, :func:`recipe_chain`,
:func:`validate_recipe_file`, :data:`YAML_SUFFIXES`).
"""

from fsdpcfg.compose._compose import (
    YAML_SUFFIXES,
    ComposeError,
    KeyAdvice,
    compose,
    group_fallback,
    raised_in_hydra,
    recipe_chain,
    recipe_kind,
    refuse_package_search_path,
    unknown_key_error,
    validate_recipe_file,
)
from fsdpcfg.compose.composed import Composed, load_yaml_config
from fsdpcfg.compose.conf_tree import GROUPS, available_options, groups

__all__ = [
    "GROUPS",
    "YAML_SUFFIXES",
    "ComposeError",
    "Composed",
    "KeyAdvice",
    "available_options",
    "compose",
    "group_fallback",
    "groups",
    "load_yaml_config",
    "raised_in_hydra",
    "recipe_chain",
    "recipe_kind",
    "refuse_package_search_path",
    "unknown_key_error",
    "validate_recipe_file",
]
