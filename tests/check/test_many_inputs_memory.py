"""``fsdpcfg check`` on many files keeps what places each finding, not each composed config (issue 22: 500 files
held ~1 MB each, 568 MB): memory stays bounded by the number of findings, and the report is the same."""

from __future__ import annotations

import argparse
import gc
import json
import tracemalloc

import pytest

from fsdpcfg.check.sources import Located
from fsdpcfg.cli import check as cli_check
from fsdpcfg.cli.main import main


def _recipes(folder, n: int) -> list[str]:
    out = []
    for i in range(n):
        f = folder / f"r{i}.yaml"
        f.write_text(f"# @package _global_\ndefaults:\n  - qwen_grpo\n  - _self_\ndata:\n  train_batch_size: {3 + i}\n")
        out.append(str(f))
    return out


def _args(files: list[str]) -> argparse.Namespace:
    return argparse.Namespace(inputs=files, script_args=None, skip_unrelated=False)


def test_many_files_keep_only_the_provenance_with_the_same_findings(tmp_path):
    files = _recipes(tmp_path, 3)
    whole = cli_check.collect(_args(files))
    slim = cli_check.collect(_args(files), keep_configs=False)
    assert all(isinstance(r.composed, Located) for r in slim)
    assert [r.findings for r in slim] == [r.findings for r in whole]
    assert [r.composed.provenance.source_of("data.train_batch_size").location() for r in slim] == [
        (f, 6) for f in files
    ]


@pytest.mark.slow  # tracemalloc makes each check ~10x slower
def test_what_many_files_keep_is_a_quarter_of_their_configs(tmp_path):
    files = _recipes(tmp_path, 4)
    cli_check.collect(_args(files[:1]))  # first imports and caches, charged to neither side
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        kept = cli_check.collect(_args(files))
        gc.collect()
        whole = tracemalloc.get_traced_memory()[0] - base
        del kept
        gc.collect()
        base = tracemalloc.get_traced_memory()[0]
        slim = cli_check.collect(_args(files), keep_configs=False)
        gc.collect()
        reduced = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert len(slim) == 4 and reduced < 0.25 * whole, (reduced, whole)  # ~80 KB a file kept, not ~1 MB


def test_the_report_of_many_files_places_each_finding_as_before(tmp_path, capsys):
    files = _recipes(tmp_path, 2)  # train_batch_size 3 and 4: the first is below the mini batch (FC202)
    assert main(["check", "--format", "json", *files]) == 1
    many = json.loads(capsys.readouterr().out)
    assert main(["check", "--format", "json", files[0]]) == 1
    one = json.loads(capsys.readouterr().out)
    assert many["inputs"][0]["findings"] == one["inputs"][0]["findings"]
    f = next(f for f in many["inputs"][0]["findings"] if f["rule"] == "FC202")
    assert "data.train_batch_size" in f["keys"] and (f["file"], f["line"]) == (files[0], 6)
    assert many["inputs"][1]["status"] == "passes"
