"""The catalogue behind ``ls``, ``show``, ``cp``, ``diff``, ``schema`` and ``explain``.

Public API:

* :mod:`~fsdpcfg.catalog.tree`: recipes, groups and options with their one-line descriptions, read from the
  config tree (:func:`recipes`, :func:`group_options`, :func:`all_options`, :func:`describe`).
* :mod:`~fsdpcfg.compose.flat`: a composed config as rows of key, value and provenance (:func:`rows`,
  :func:`flat`) and their table/YAML/JSON renderings.
* :mod:`~fsdpcfg.catalog.load`: what a command-line target names (recipe name, recipe file, full config
  file) composed into a config (:func:`load`).

Nothing here imports torch, transformers or verl.
"""

from fsdpcfg.catalog.load import is_recipe_file, load, recipe_overrides, split_args
from fsdpcfg.catalog.tree import (
    Option,
    all_options,
    comment_block,
    describe,
    group_options,
    groups,
    kinds,
    ordered_choices,
    recipes,
    root_defaults,
)
from fsdpcfg.compose.flat import ABSENT, Row, flat, format_value, rows, rows_json, rows_table, rows_yaml, table

__all__ = [
    "ABSENT",
    "Option",
    "Row",
    "all_options",
    "comment_block",
    "describe",
    "flat",
    "format_value",
    "group_options",
    "groups",
    "is_recipe_file",
    "kinds",
    "load",
    "ordered_choices",
    "recipe_overrides",
    "recipes",
    "root_defaults",
    "rows",
    "rows_json",
    "rows_table",
    "rows_yaml",
    "split_args",
    "table",
]
