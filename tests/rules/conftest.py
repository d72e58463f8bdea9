"""Fixtures of the rule tests (the helpers are in rule_helpers.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from rule_helpers import MODELS


@pytest.fixture
def shared_models() -> Path:
    if not MODELS.is_dir():
        pytest.skip("../shared/data/model_configs is not present")
    return MODELS
