"""Property (issue 14 item 8): ``fsdpcfg check`` and the run's preparation (``--dry-run``) give the same verdict,
never a traceback, never a hang, on 10,000 override sets and 200 hostile recipe files
(``tests/check/property_inputs.py`` holds the inputs and the property).

The examples run in ``FSDPCFG_PROPERTY_WORKERS`` processes at once (default: one per CPU, at most 2), each its
own hypothesis seed, so the same inputs every time. Counts: ``FSDPCFG_PROPERTY_OVERRIDES`` (default 10,000) and
``FSDPCFG_PROPERTY_FILES`` (default 200). One override set costs ~0.22 CPU s here (two composes, the schema, every
rule, the run folder written), so the default takes ~20 minutes on 2 CPUs.
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
WORKERS = int(os.environ.get("FSDPCFG_PROPERTY_WORKERS", str(max(1, min(2, os.cpu_count() or 1)))))
SCRIPT = Path(__file__).with_name("property_inputs.py")


def _run_shards(what: str, total: int, tmp_path: Path) -> list[dict]:
    counts = [total // WORKERS + (i < total % WORKERS) for i in range(WORKERS)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SCRIPT.parents[2]), os.environ.get("PYTHONPATH", "")])}
    procs = [
        subprocess.Popen(
            [sys.executable, str(SCRIPT), what, str(i), str(n), str(tmp_path / f"shard{i}" / "w" / "x" / "y" / "z")],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        for i, n in enumerate(counts)
    ]
    results = []
    for p in procs:
        out, _ = p.communicate()
        assert p.returncode == 0, f"a shard exited {p.returncode}:\n{out[-3000:]}"
        results.append(json.loads(out.strip().splitlines()[-1]))
    for r in results:
        assert r["failure"] is None, r["failure"]
    return results


def _report(what: str, results: list[dict]) -> tuple[int, int]:
    n = sum(r["examples"] for r in results)
    refused = sum(r["refused"] for r in results)
    kinds: dict[str, int] = {}
    for r in results:
        for k, v in r["kinds"].items():
            kinds[k] = kinds.get(k, 0) + v
    print(
        f"\n{n} {what} ({len(results)} shards), {refused} refused by both, "
        f"{max(r['wall_s'] for r in results):.0f} s wall, {sum(r['cpu_s'] for r in results):.0f} CPU s"
        + (f", kinds {kinds}" if kinds else "")
    )
    return n, refused


def test_override_sets_get_the_same_verdict_from_check_and_the_run(tmp_path):
    n, refused = _report("override sets", _run_shards("overrides", N_OVERRIDES, tmp_path))
    assert n >= N_OVERRIDES * 0.9  # hypothesis may stop early only on an exhausted space
    assert 0 < refused < n  # both verdicts were reached


def test_hostile_files_get_the_same_verdict_from_check_and_the_run(tmp_path):
    n, refused = _report("hostile files", _run_shards("files", N_FILES, tmp_path))
    assert n >= N_FILES * 0.9
    assert 0 < refused < n
