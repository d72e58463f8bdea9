"""Shared fixtures. Built assets go to the real ``$FSDPCFG_HOME`` so each is built once, not per test run.

- ``tiny_model_path``: ``Path`` of the built ``tiny-qwen2`` folder (built on first use, ~5 s).
- ``tiny_model``: a function ``name -> Path`` that ensures any asset of ``fsdpcfg.assets.SPECS``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def tiny_model() -> Callable[[str], Path]:
    """Return ``ensure(name) -> Path`` for the offline assets (``fsdpcfg.assets.ensure``)."""
    from fsdpcfg.assets import ensure

    return lambda name="tiny-qwen2": ensure(name, verbose=False)


@pytest.fixture(scope="session")
def tiny_model_path(tiny_model: Callable[[str], Path]) -> Path:
    """Return the folder of the built ``tiny-qwen2`` (config.json, model.safetensors, tokenizer files)."""
    return tiny_model("tiny-qwen2")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Slow tests first (stable: each group keeps its order). Under ``pytest -n auto --dist load`` the long
    end-to-end items (the property shards, training runs) start on every core at once and the quick ones fill
    the gaps, instead of one long shard running alone at the end."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
