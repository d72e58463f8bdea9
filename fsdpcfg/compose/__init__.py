"""Stage 1, compose: Hydra composes ``conf/`` + ``recipes/`` + overrides into one config in verl's key names.

Public API: :func:`compose`, :class:`Composed`, :func:`load_yaml_config`.
"""

from fsdpcfg.compose._compose import Composed, compose, load_yaml_config

__all__ = ["Composed", "compose", "load_yaml_config"]
