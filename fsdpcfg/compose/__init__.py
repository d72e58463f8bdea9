"""Stage 1, compose: Hydra composes ``conf/`` + ``recipes/`` + overrides into one config in verl's key names.

Public API: :func:`compose`, :class:`Composed`, :class:`ComposeError` (the override Hydra refused and why),
:func:`group_fallback`, :func:`load_yaml_config`, :func:`unknown_key_error` (a refused unknown key and its
did-you-mean); the tree's groups and their options
(:data:`GROUPS`, :func:`groups`, :func:`available_options`); recipes (:func:`recipe_kind`, :func:`recipe_chain`,
:func:`validate_recipe_file`, :data:`YAML_SUFFIXES`).
"""

from fsdpcfg.compose._compose import (
    GROUPS,
    YAML_SUFFIXES,
    Composed,
    ComposeError,
    available_options,
    compose,
    group_fallback,
    groups,
    load_yaml_config,
    recipe_chain,
    recipe_kind,
    unknown_key_error,
    validate_recipe_file,
)

__all__ = [
    "GROUPS",
    "YAML_SUFFIXES",
    "ComposeError",
    "Composed",
    "available_options",
    "compose",
    "group_fallback",
    "groups",
    "load_yaml_config",
    "recipe_chain",
    "recipe_kind",
    "unknown_key_error",
    "validate_recipe_file",
]
