"""The end-of-sweep table and its JSON/CSV files."""

from __future__ import annotations

import csv
import json

from fsdpcfg.sweep.summary import format_table, rank_points, write_summary

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
    assert lines[1].split() == [
        "point",
        "status",
        "final_reward",
        "val_reward",
        "rank",
        "steps",
        "wall_s",
        "overrides",
    ]
    assert lines[2].split() == ["0", "ok", "0.125", "-", "-", "1", "31.5", "lr=1e-06"]
    assert lines[3].split() == ["1", "failed", "-", "-", "-", "-", "12", "lr=3e-06"]
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


def test_points_rank_by_validation_reward_else_by_training_reward():
    rows = [
        {"point": 0, "final_reward": 0.9, "val_reward": 0.2},
        {"point": 1, "final_reward": 0.1, "val_reward": 0.5},
        {"point": 2, "final_reward": 0.5, "val_reward": None},  # never validated: not ranked beside those that did
        {"point": 3, "final_reward": 0.3, "val_reward": 0.5},  # a tie shares the better rank
    ]
    assert rank_points(rows) == "val_reward"
    assert [r["rank"] for r in rows] == [3, 1, None, 1]
    rows = [{"point": 0, "final_reward": 0.2, "val_reward": None}, {"point": 1, "final_reward": float("nan")}]
    assert rank_points(rows) == "final_reward" and [r["rank"] for r in rows] == [1, None]
    assert rank_points([{"point": 0, "final_reward": None}]) is None


def test_final_metrics_reads_the_last_training_and_validation_rows(tmp_path):
    from fsdpcfg.sweep.task import final_metrics

    val = "val-core/openai/gsm8k/reward/mean@1"
    rows = [
        {"step": 0, val: 0.1},  # before training (trainer.val_before_train)
        {"step": 1, "critic/rewards/mean": 0.25, "timing_s/step": 3.0},
        {"step": 2, "critic/rewards/mean": 0.5, "timing_s/step": 3.0, val: 0.3, "val-aux/x/reward/std@1": 0.2},
    ]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows) + '{"step": 3, "crit')
    assert final_metrics(tmp_path) == {"steps": 2, "final_reward": 0.5, "val_reward": 0.3}
    assert final_metrics(tmp_path / "none") == {"steps": None, "final_reward": None, "val_reward": None}
