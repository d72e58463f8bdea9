"""The end-of-sweep table and its JSON/CSV files."""

from __future__ import annotations

import csv
import json

from fsdpcfg.sweep.summary import format_table, write_summary

ROWS = [
    {
        "point": 0,
        "status": "ok",
        "final_reward": 0.125,
        "steps": 1,
        "wall_s": 31.5,
        "run_dir": "/s/0",
        "overrides": ["+recipe=qwen_grpo", "lr=1e-06"],
        "error": None,
    },
    {
        "point": 1,
        "status": "failed",
        "final_reward": None,
        "steps": None,
        "wall_s": 12.0,
        "run_dir": "/s/1",
        "overrides": ["+recipe=qwen_grpo", "lr=3e-06"],
        "error": "data.max_prompt_length: too short",
    },
    {
        "point": 2,
        "status": "not started (fails the checks)",
        "final_reward": None,
        "steps": None,
        "wall_s": None,
        "run_dir": None,
        "overrides": ["+recipe=qwen_grpo", "lr=0"],
        "error": "[FC601] ...",
    },
]


def test_table_shows_what_differs_and_marks_missing_values():
    lines = format_table(ROWS).splitlines()
    assert lines[0] == "every point: +recipe=qwen_grpo"
    assert lines[1].split() == ["point", "status", "final_reward", "steps", "wall_s", "overrides"]
    assert lines[2].split() == ["0", "ok", "0.125", "1", "31.5", "lr=1e-06"]
    assert lines[3].split() == ["1", "failed", "-", "-", "12", "lr=3e-06"]
    assert lines[4].startswith("2      not started (fails the checks)")


def test_json_and_csv_hold_every_row(tmp_path):
    j, c = write_summary(tmp_path / "sw", ROWS, launcher="BasicLauncher", total_wall_s=45.0)
    data = json.loads(j.read_text())
    assert data["launcher"] == "BasicLauncher" and data["points"] == ROWS
    with open(c) as fh:
        table = list(csv.DictReader(fh))
    assert [t["status"] for t in table] == ["ok", "failed", "not started (fails the checks)"]
    assert table[0]["final_reward"] == "0.125" and table[1]["final_reward"] == ""
    assert table[1]["overrides"] == "+recipe=qwen_grpo lr=3e-06" and "max_prompt_length" in table[1]["error"]


def test_an_interrupted_sweep_reads_only_this_sweeps_results(tmp_path):
    """After Ctrl-C the rows come from the jobs' result.json; an earlier sweep's file in a reused folder is a point
    not started (fsdpcfg/sweep/runner.py)."""
    import json as _json
    from types import SimpleNamespace

    from fsdpcfg.sweep.runner import NOT_STARTED, _saved_row

    c = SimpleNamespace(index=1, overrides=["a=1"])
    (tmp_path / "result.json").write_text(_json.dumps({"point": 1, "status": "interrupted", "started": 100.0}))
    assert _saved_row(c, tmp_path, since=50.0)["status"] == "interrupted"
    assert _saved_row(c, tmp_path, since=200.0)["status"] == NOT_STARTED
    assert _saved_row(c, tmp_path / "missing", since=0.0)["status"] == NOT_STARTED
