"""Helpers of the checker tests: run ``fsdpcfg check`` in-process and read its JSON."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fsdpcfg.cli.main import main


@pytest.fixture
def run_check(capsys):
    """``run_check(*args) -> (exit code, parsed JSON findings or the human text)``."""

    def run(*args: str, fmt: str = "json") -> tuple[int, Any]:
        rc = main(["check", "--format", fmt, *args])
        out = capsys.readouterr().out
        return rc, (json.loads(out)["findings"] if fmt == "json" and rc in (0, 1) else out)

    return run
