"""trainer.logger in the native loop: TensorBoard, verl's file layout, wandb (offline) and MLflow (local file store)
written for real through their libraries, and continued by a resumed run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fsdpcfg.train.trackers import mlflow_key

REPO = Path(__file__).resolve().parents[2]


def test_mlflow_key_as_verl_sanitises():
    assert mlflow_key("val-core/openai/gsm8k/reward/mean@1") == "val-core/openai/gsm8k/reward/mean_at_1"
    assert mlflow_key("a//b#c") == "a/b_c"


def test_file_logger_writes_in_the_run_folder_unless_verls_variables_say_otherwise(tmp_path, monkeypatch):
    from fsdpcfg.paths import PathEscape
    from fsdpcfg.train.trackers import FileSink

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("VERL_FILE_LOGGER_PATH", raising=False)
    monkeypatch.delenv("VERL_FILE_LOGGER_ROOT", raising=False)
    run_dir = tmp_path / "runs" / "fsdpcfg" / "e1"
    run_dir.mkdir(parents=True)
    sink = FileSink(run_dir, "fsdpcfg", "e1")
    sink.log(1, {"critic/rewards/mean": 0.5})
    sink.close()
    assert sink.path == run_dir / "e1.jsonl"
    assert json.loads(sink.path.read_text()) == {"step": 1, "data": {"critic/rewards/mean": 0.5}}
    assert not (tmp_path / "fsdpcfg").exists()  # verl's ./<project>/ would shadow the package here
    monkeypatch.setenv("VERL_FILE_LOGGER_ROOT", str(tmp_path / "root"))
    assert FileSink(run_dir, "p", "e").path == tmp_path / "root" / "p" / "e.jsonl"
    monkeypatch.setenv("VERL_FILE_LOGGER_PATH", str(tmp_path / "exact.jsonl"))
    assert FileSink(run_dir, "p", "e").path == tmp_path / "exact.jsonl"
    monkeypatch.delenv("VERL_FILE_LOGGER_PATH")
    monkeypatch.delenv("VERL_FILE_LOGGER_ROOT")
    (tmp_path / "elsewhere").mkdir()
    (run_dir / "e2.jsonl").symlink_to(tmp_path / "elsewhere" / "x.jsonl")  # a link out of the run folder
    with pytest.raises(PathEscape):
        FileSink(run_dir, "p", "e2")


@pytest.mark.distributed
@pytest.mark.slow
def test_four_sinks_written_and_resumed_into_the_same_runs(tiny_model_path, tmp_path, monkeypatch):
    run_dir, ckpt = tmp_path / "run", tmp_path / "ckpt"
    env = {
        **os.environ,
        "WANDB_MODE": "offline",
        "WANDB_SILENT": "true",
        "VERL_FILE_LOGGER_ROOT": str(tmp_path / "f"),
        "MLFLOW_TRACKING_URI": (tmp_path / "mlruns").as_uri(),
        "MLFLOW_ALLOW_FILE_STORE": "true",
    }
    env.pop("TENSORBOARD_DIR", None)
    common = [
        "+recipe=qwen_grpo",
        f"fsdpcfg.run_dir={run_dir}",
        f"trainer.default_local_dir={ckpt}",
        "trainer.logger=[console,tensorboard,wandb,file,mlflow]",
        "trainer.val_before_train=false",
        "trainer.test_freq=-1",
        "data.max_response_length=8",
        "trainer.save_freq=1",
        "trainer.project_name=trk",
        "trainer.experiment_name=e1",
    ]

    def run(steps: int) -> None:
        proc = subprocess.run(
            [sys.executable, "-m", "fsdpcfg", *common, f"trainer.total_training_steps={steps}"],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]

    # one step, then a resume for a second: a resume needs a checkpoint to start from, not more steps
    run(1)
    wandb_id = (run_dir / "wandb_run_id").read_text().strip()
    mlflow_id = (run_dir / "mlflow_run_id").read_text().strip()
    run(2)  # resumes from global_step_1
    # wandb: the resumed run continues the same run id (offline runs sync later with `wandb sync`)
    assert (run_dir / "wandb_run_id").read_text().strip() == wandb_id
    offline = sorted(p.name for p in (run_dir / "wandb").glob("offline-run-*"))
    assert len(offline) == 2 and all(name.endswith(f"-{wandb_id}") for name in offline)
    # verl's file layout: {"step": N, "data": {...}} lines at $VERL_FILE_LOGGER_ROOT/<project>/<experiment>.jsonl
    rows = [json.loads(line) for line in (tmp_path / "f" / "trk" / "e1.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2] and "critic/rewards/mean" in rows[0]["data"]
    # TensorBoard: every step's scalar
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    steps = []
    for events in (run_dir / "tensorboard").glob("events.out.tfevents.*"):
        acc = EventAccumulator(str(events))
        acc.Reload()
        if "critic/rewards/mean" in acc.Tags()["scalars"]:
            steps += [e.step for e in acc.Scalars("critic/rewards/mean")]
    assert sorted(steps) == [1, 2]
    # MLflow: one run (resumed by id) holding steps 1..2, metric names sanitised as verl does
    from mlflow.tracking import MlflowClient

    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")

    assert (run_dir / "mlflow_run_id").read_text().strip() == mlflow_id
    hist = MlflowClient(env["MLFLOW_TRACKING_URI"]).get_metric_history(mlflow_id, "critic/rewards/mean")
    assert sorted(m.step for m in hist) == [1, 2]
