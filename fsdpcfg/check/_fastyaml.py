"""Parse config YAML with libyaml (PyYAML's C parser) instead of pure Python, for a fast ``fsdpcfg check``.

OmegaConf (and so Hydra) builds its YAML loader in ``omegaconf._utils.get_yaml_loader``: PyYAML's pure-Python
``SafeLoader`` with OmegaConf's float resolver, no timestamps, a duplicate-key error and two ``pathlib``
constructors. :func:`install` swaps in the same loader on top of ``yaml.CSafeLoader`` -- same resolvers, same
constructors, same duplicate-key check -- which parses the config tree several times faster. Nothing changes
when PyYAML has no libyaml. ``tests/check/test_fastyaml.py`` checks that every shipped config composes to
the same tree either way.
"""

from __future__ import annotations

from typing import Any

import yaml

_installed = False


def c_loader() -> Any:
    """Return OmegaConf's loader rebuilt on ``yaml.CSafeLoader`` (``None`` without libyaml)."""
    import omegaconf._utils as ou

    if not getattr(yaml, "__with_libyaml__", False):
        return None
    original = _original or ou.get_yaml_loader
    base = original()

    class OmegaConfCLoader(yaml.CSafeLoader):
        def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> Any:
            keys = set()
            for key_node, _ in node.value:
                if key_node.tag != yaml.resolver.BaseResolver.DEFAULT_SCALAR_TAG:
                    continue
                if key_node.value in keys:
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping",
                        node.start_mark,
                        f"found duplicate key {key_node.value}",
                        key_node.start_mark,
                    )
                keys.add(key_node.value)
            return yaml.constructor.SafeConstructor.construct_mapping(self, node, deep=deep)

    OmegaConfCLoader.yaml_implicit_resolvers = {k: list(v) for k, v in base.yaml_implicit_resolvers.items()}
    OmegaConfCLoader.yaml_constructors = dict(base.yaml_constructors)
    return OmegaConfCLoader


_original = None


def install() -> bool:
    """Make OmegaConf (and Hydra) parse YAML with libyaml; idempotent. Returns whether it is active."""
    global _installed, _original
    if _installed:
        return True
    import omegaconf._utils as ou
    import omegaconf.omegaconf as oo

    _original = ou.get_yaml_loader
    loader = c_loader()
    if loader is None:
        return False
    ou.get_yaml_loader = lambda: loader
    oo_mod = oo
    if hasattr(oo_mod, "get_yaml_loader"):
        oo_mod.get_yaml_loader = ou.get_yaml_loader
    import omegaconf.basecontainer as ob

    if hasattr(ob, "get_yaml_loader"):
        ob.get_yaml_loader = ou.get_yaml_loader
    _installed = True
    return True
