"""Do not copy Hydra's ConfigStore at every compose.

Each compose builds a ``CachingConfigRepository``, whose ``__init__`` deep-copies the repository "to avoid
mutating it with initialize_sources()" (``hydra/_internal/config_repository.py``). The repository's
``StructuredConfigSource`` holds the process-wide ``ConfigStore`` singleton, so the copy also deep-copies every
config stored in it: with verl's six compositions stored (:mod:`fsdpcfg.compose.verl_base`, ~1,700 keys each)
that is ~0.12 CPU s a compose, more than the rest of the compose. The store is not what ``initialize_sources``
mutates (it replaces the sources list), and ``ConfigStore.load`` already returns a copy of each node it hands
out, so :func:`install` makes a copy of the store the store itself, as the singleton it is. The composed trees
are the same (``tests/compose/test_tree_cache.py`` composes every recipe and random override sets both ways).
"""

from __future__ import annotations

from typing import Any

_installed = False


def install() -> bool:
    """Make ``copy.deepcopy`` of Hydra's ``ConfigStore`` return the store itself; idempotent. Returns ``True``."""
    global _installed
    if _installed:
        return True
    from hydra.core.config_store import ConfigStore

    def _same_store(self: Any, memo: dict[int, Any]) -> Any:
        return self

    ConfigStore.__deepcopy__ = _same_store  # type: ignore[attr-defined]
    _installed = True
    return True


def uninstall() -> None:
    """Let ``copy.deepcopy`` copy the store again (tests compare both)."""
    global _installed
    from hydra.core.config_store import ConfigStore

    if "__deepcopy__" in vars(ConfigStore):
        del ConfigStore.__deepcopy__  # type: ignore[attr-defined]
    _installed = False
