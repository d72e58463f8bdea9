"""A run SIGKILLed (torchrun and every rank) while it writes a checkpoint leaves no checkpoint that resume would
load: the half-written ``global_step_2.tmp`` has no manifest, ``latest_checkpointed_iteration.txt`` still names
step 1, and ``trainer.resume_mode=auto`` resumes from ``global_step_1`` and finishes the run, with one metrics row per
step (the killed run's step-2 row is moved to ``metrics.discarded.jsonl``).

The kill lands inside the save through the test hook ``FSDPCFG_TEST_SAVE_PAUSE=2:120`` (fsdpcfg/train/checkpoint.py):
rank 0 sleeps after every shard of step 2 is on disk and before the manifest is written."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from _killtree import REPO, kill_tree, start, wait_for_line


@pytest.mark.distributed
@pytest.mark.slow
def test_sigkill_during_save_then_resume_loads_the_previous_checkpoint(tiny_model, tmp_path):
    tiny_model("tiny-qwen2-arith")
    run_dir, ckpt = tmp_path / "run", tmp_path / "ckpt"
    args = [
        "+recipe=arith_grpo",
        f"fsdpcfg.run_dir={run_dir}",
        f"trainer.default_local_dir={ckpt}",
        "trainer.total_training_steps=2",
        "trainer.save_freq=1",
        "trainer.logger=[console]",
    ]
    log = tmp_path / "killed.log"
    proc = start(args, log, env={"FSDPCFG_TEST_SAVE_PAUSE": "2:120"})
    try:
        wait_for_line(log, "pausing 120 s inside the save of step 2", proc, timeout=240)
    finally:
        killed = kill_tree(proc)
    assert len(killed) >= 4  # fsdpcfg, torchrun, two ranks
    # what the kill left on disk: step 2's shards without a manifest, step 1 complete and named latest
    tmp2 = ckpt / "global_step_2.tmp"
    assert (tmp2 / "model.safetensors").is_file() and (tmp2 / "trainer_state" / "trainer.pt").is_file()
    assert not (tmp2 / "MANIFEST.json").exists() and not (ckpt / "global_step_2").exists()
    assert (ckpt / "latest_checkpointed_iteration.txt").read_text().strip() == "1"
    from fsdpcfg.native.ckpt_layout import find_resume_folder, is_complete

    assert not is_complete(tmp2) and is_complete(ckpt / "global_step_1")
    from fsdpcfg.schema.trainer import TrainerSection

    trainer = TrainerSection(resume_mode="auto", default_local_dir=str(ckpt))
    assert find_resume_folder(trainer) == ckpt / "global_step_1"
    # resume: loads global_step_1, trains step 2 again, writes a complete global_step_2
    proc = subprocess.run(
        [sys.executable, "-m", "fsdpcfg", *args], cwd=REPO, capture_output=True, text=True, timeout=400
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert f"resumed from {ckpt / 'global_step_1'} (step 1 of 2)" in out
    assert is_complete(ckpt / "global_step_2") and not tmp2.exists()
    assert (ckpt / "latest_checkpointed_iteration.txt").read_text().strip() == "2"
    manifest = json.loads((ckpt / "global_step_2" / "MANIFEST.json").read_text())
    assert manifest["step"] == 2 and manifest["world_size"] == 2
    assert manifest["trained_from"]["model_path"].endswith("tiny-qwen2-arith")  # what resume compares
    steps = [json.loads(line)["step"] for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert steps == [1, 2]  # one row per step: the killed run's step-2 row (never saved) was moved aside
    discarded = [json.loads(line) for line in (run_dir / "metrics.discarded.jsonl").read_text().splitlines()]
    assert [r["step"] for r in discarded] == [2]
    assert "moved 1 metrics row(s) past step 1" in out
