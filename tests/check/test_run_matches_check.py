"""Property (issue 14 item 8): ``fsdpcfg check`` and the run's preparation (``--dry-run``) give the same verdict,
never a traceback, never a hang, on 10,000 override sets and 200 hostile recipe files
(``tests/check/property_inputs.py`` holds the inputs and the property).

Each property runs as shards, one test item each (``FSDPCFG_PROPERTY_SHARDS``, default 20 for the override sets,
4 for the files), every shard its own process and hypothesis seed (1000 + shard, so the same inputs every time):
under ``pytest -n auto`` the shards and the rest of the suite share the cores. Counts: ``FSDPCFG_PROPERTY_OVERRIDES``
(default 10,000) and ``FSDPCFG_PROPERTY_FILES`` (default 200). One override set costs ~0.2 CPU s here (a compose
the check and the run share, ``property_inputs._OneCompose``; the schema and every rule on both paths; the run
folder written). Shards of ~500 sets keep the longest item short, so the longest-first schedule of
``tests/conftest.py`` ends both workers together.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(4 * 3600)]

N_OVERRIDES = int(os.environ.get("FSDPCFG_PROPERTY_OVERRIDES", "10000"))
N_FILES = int(os.environ.get("FSDPCFG_PROPERTY_FILES", "200"))
SHARDS = int(os.environ.get("FSDPCFG_PROPERTY_SHARDS", "20"))
FILE_SHARDS = max(1, SHARDS // 5)
SCRIPT = Path(__file__).with_name("property_inputs.py")


def _count(total: int, shards: int, i: int) -> int:
    return total // shards + (i < total % shards)


def _run_shard(what: str, shard: int, count: int, tmp_path: Path) -> dict:
    """Run one shard of ``property_inputs.py`` in its own process; return its tally (asserting it found nothing)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SCRIPT.parents[2]), os.environ.get("PYTHONPATH", "")])}
    workdir = tmp_path / f"shard{shard}" / "w" / "x" / "y" / "z"  # four deep: `..` names stay inside tmp_path
    p = subprocess.run(
        [sys.executable, str(SCRIPT), what, str(shard), str(count), str(workdir)],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert p.returncode == 0, f"shard {shard} exited {p.returncode}:\n{p.stdout[-3000:]}"
    result = json.loads(p.stdout.strip().splitlines()[-1])
    assert result["failure"] is None, result["failure"]
    return result


def _report(what: str, shard: int, r: dict) -> None:
    kinds = r["kinds"]
    print(
        f"\nshard {shard}: {r['examples']} {what}, {r['refused']} refused by both, {r['wall_s']:.0f} s wall, "
        f"{r['cpu_s']:.0f} CPU s" + (f", kinds {kinds}" if kinds else "")
    )


@pytest.mark.parametrize("shard", range(SHARDS))
def test_override_sets_get_the_same_verdict_from_check_and_the_run(shard, tmp_path):
    count = _count(N_OVERRIDES, SHARDS, shard)
    r = _run_shard("overrides", shard, count, tmp_path)
    _report("override sets", shard, r)
    assert r["examples"] >= count * 0.9  # hypothesis may stop early only on an exhausted space
    assert 0 < r["refused"] < r["examples"]  # both verdicts were reached


@pytest.mark.parametrize("shard", range(FILE_SHARDS))
def test_hostile_files_get_the_same_verdict_from_check_and_the_run(shard, tmp_path):
    count = _count(N_FILES, FILE_SHARDS, shard)
    r = _run_shard("files", shard, count, tmp_path)
    _report("hostile files", shard, r)
    assert r["examples"] >= count * 0.9
    assert 0 < r["refused"] < r["examples"]
