"""``trainer.resume_mode=auto`` continues an interrupted run exactly: the same step counter, the same data
position (sampler), the same learning-rate schedule (cosine with warm-up, so the lr differs every step) and the
same optimizer state. An uninterrupted 3-step run is compared with one SIGKILLed inside the save of step 2 and
resumed from ``global_step_1``: the metrics of steps 2 and 3 and the final weights agree within 1e-5 (relative)
/ 1e-6 (absolute); the runs are deterministic on CPU (gloo, fixed seeds), the tolerance only absorbs float noise.

The killed run also shows what a SIGKILL (torchrun and every rank) inside a save leaves: no checkpoint that resume
would load. The half-written ``global_step_2.tmp`` has no manifest, ``latest_checkpointed_iteration.txt`` still
names step 1, and the resume loads ``global_step_1`` and finishes the run with one metrics row per step (the killed
run's step-2 row is moved to ``metrics.discarded.jsonl``). The kill lands inside the save through the test hook
``FSDPCFG_TEST_SAVE_PAUSE=2:120`` (fsdpcfg/train/checkpoint.py): rank 0 sleeps after every shard of step 2 is on
disk and before the manifest is written. And the uninterrupted run, saved on 2 ranks, resumes on 1.

The arithmetic recipe is used because its warm-started tiny model earns rewards (~0.1), so advantages, losses
and gradients are not zero and a wrong resume would show."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from _killtree import REPO, kill_tree, start, wait_for_line

# one worker builds the module's shared fixture (tests/conftest.py)
pytestmark = pytest.mark.xdist_group("resume_equivalence_runs")

COMPARED = (
    "critic/rewards/mean",
    "critic/score/mean",
    "critic/advantages/mean",
    "actor/pg_loss",
    "actor/lr",
    "actor/grad_norm",
    "actor/pg_clipfrac",
    "response_length/mean",
    "training/epoch",
)


def _rows(run_dir):
    by_step = {}
    for line in (run_dir / "metrics.jsonl").read_text().splitlines():
        row = json.loads(line)
        by_step[row["step"]] = row  # a step logged twice (before a kill and after the resume): the last one
    return by_step


def _args(root: Path, name: str) -> list[str]:
    return [
        "+recipe=arith_grpo",
        f"fsdpcfg.run_dir={root / name / 'run'}",
        f"trainer.default_local_dir={root / name / 'ckpt'}",
        "trainer.total_training_steps=3",
        "trainer.save_freq=1",
        "trainer.logger=[console]",
        "actor_rollout_ref.actor.optim.lr_scheduler_type=cosine",
        "actor_rollout_ref.actor.optim.lr_warmup_steps=1",
    ]


def _fsdpcfg(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "fsdpcfg", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture(scope="module")
def root(tiny_model, tmp_path_factory) -> Path:
    """The folder that holds this module's runs (``a/``: uninterrupted, ``b/``: killed and resumed)."""
    tiny_model("tiny-qwen2-arith")
    return tmp_path_factory.mktemp("resume")


@pytest.fixture(scope="module")
def uninterrupted(root: Path) -> Path:
    """The uninterrupted 3-step run (``<root>/a``), made once for this module: the equivalence test compares the
    resumed run with it, and the 1-rank resume starts from its ``global_step_2``."""
    ref = _fsdpcfg(_args(root, "a"))
    assert ref.returncode == 0, (ref.stdout + ref.stderr)[-3000:]
    return root / "a"


def _link_or_copy(src: str, dst: str) -> None:
    """Hard-link a large file (a shard the resume may replace but never rewrites in place), copy a small one."""
    if os.path.getsize(src) > 2**20:
        os.link(src, dst)
    else:
        shutil.copy2(src, dst)


@dataclass
class Interrupted:
    """The run SIGKILLed inside the save of step 2 (``<root>/b``), then resumed to step 3."""

    ckpt: Path
    run_dir: Path
    killed: list[int]  # the pids the kill found: fsdpcfg, torchrun, the ranks
    after_kill: Path  # ``ckpt`` as the kill left it (a snapshot taken before the resume)
    resumed: subprocess.CompletedProcess


@pytest.fixture(scope="module")
def interrupted(root: Path) -> Interrupted:
    """The killed and resumed run, made once for this module: the equivalence test compares its steps and weights
    with the uninterrupted run, the kill test reads what the kill left on disk (snapshotted before the resume
    changes it) and how the resume treated it."""
    log = root / "b.log"
    proc = start(_args(root, "b"), log, env={"FSDPCFG_TEST_SAVE_PAUSE": "2:120"})
    try:
        wait_for_line(log, "pausing 120 s inside the save of step 2", proc, timeout=240)
    finally:
        killed = kill_tree(proc)
    ckpt = root / "b" / "ckpt"
    after_kill = root / "b_after_kill"
    shutil.copytree(ckpt, after_kill, copy_function=_link_or_copy)
    resumed = _fsdpcfg(_args(root, "b"))
    return Interrupted(ckpt, root / "b" / "run", killed, after_kill, resumed)


@pytest.mark.distributed
@pytest.mark.slow
def test_interrupted_and_resumed_run_equals_the_uninterrupted_one(uninterrupted, interrupted):
    res = interrupted.resumed
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
    assert "resumed from" in res.stdout + res.stderr and "global_step_1 (step 1 of 3)" in res.stdout + res.stderr

    a, b = _rows(uninterrupted / "run"), _rows(interrupted.run_dir)
    assert sorted(a) == sorted(b) == [1, 2, 3]
    lrs = [a[s]["actor/lr"] for s in (1, 2, 3)]
    assert len(set(lrs)) == 3, f"the schedule should change the lr every step: {lrs}"
    assert any(a[s]["actor/grad_norm"] > 0 for s in (2, 3))
    for step in (2, 3):
        for k in COMPARED:
            assert b[step][k] == pytest.approx(a[step][k], rel=1e-5, abs=1e-6), (step, k, a[step][k], b[step][k])
    from safetensors.torch import load_file

    wa = load_file(str(uninterrupted / "ckpt" / "global_step_3" / "model.safetensors"))
    wb = load_file(str(interrupted.ckpt / "global_step_3" / "model.safetensors"))
    w1 = load_file(str(uninterrupted / "ckpt" / "global_step_1" / "model.safetensors"))
    assert wa.keys() == wb.keys()
    assert max(float((wa[k] - w1[k]).abs().max()) for k in wa) > 1e-4  # steps 2-3 changed the weights
    worst = max(float((wa[k] - wb[k]).abs().max()) for k in wa)
    assert worst <= 1e-6, f"final weights differ by up to {worst}"


@pytest.mark.distributed
@pytest.mark.slow
def test_sigkill_during_save_then_resume_loads_the_previous_checkpoint(interrupted):
    ckpt, run_dir, snap = interrupted.ckpt, interrupted.run_dir, interrupted.after_kill
    assert len(interrupted.killed) >= 4  # fsdpcfg, torchrun, two ranks
    # what the kill left on disk: step 2's shards without a manifest, step 1 complete and named latest
    tmp2 = snap / "global_step_2.tmp"
    assert (tmp2 / "model.safetensors").is_file() and (tmp2 / "trainer_state" / "trainer.pt").is_file()
    assert not (tmp2 / "MANIFEST.json").exists() and not (snap / "global_step_2").exists()
    assert (snap / "latest_checkpointed_iteration.txt").read_text().strip() == "1"
    from fsdpcfg.native.ckpt_layout import find_resume_folder, is_complete

    assert not is_complete(tmp2) and is_complete(snap / "global_step_1")
    from fsdpcfg.schema.trainer import TrainerSection

    trainer = TrainerSection(resume_mode="auto", default_local_dir=str(snap))
    assert find_resume_folder(trainer) == snap / "global_step_1"
    # resume: loads global_step_1, trains step 2 again, writes a complete global_step_2 (and step 3)
    out = interrupted.resumed.stdout + interrupted.resumed.stderr
    assert interrupted.resumed.returncode == 0, out[-3000:]
    assert f"resumed from {ckpt / 'global_step_1'} (step 1 of 3)" in out
    assert is_complete(ckpt / "global_step_2") and not (ckpt / "global_step_2.tmp").exists()
    assert (ckpt / "latest_checkpointed_iteration.txt").read_text().strip() == "3"
    manifest = json.loads((ckpt / "global_step_2" / "MANIFEST.json").read_text())
    assert manifest["step"] == 2 and manifest["world_size"] == 2
    assert manifest["trained_from"]["model_path"].endswith("tiny-qwen2-arith")  # what resume compares
    steps = [json.loads(line)["step"] for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert steps == [1, 2, 3]  # one row per step: the killed run's step-2 row (never saved) was moved aside
    discarded = [json.loads(line) for line in (run_dir / "metrics.discarded.jsonl").read_text().splitlines()]
    assert [r["step"] for r in discarded] == [2]
    assert "moved 1 metrics row(s) past step 1" in out


@pytest.mark.distributed
@pytest.mark.slow
def test_grpo_run_saved_on_2_ranks_resumes_on_1(root, uninterrupted):
    """The GRPO loop (actor, reference, rollout replica) resumes a 2-rank checkpoint on 1 rank. Its steps are
    not compared with a 2-rank run: each rank samples its own responses, so another world size samples other
    ones (tests/train/test_dcp_resume.py compares the weights of SFT runs); the lr schedule and the step counter
    continue. The 2-rank run (steps 1..3 with a checkpoint each) is the uninterrupted run above; step 3 is resumed
    from its ``global_step_2`` on 1 rank."""
    first = _rows(uninterrupted / "run")
    b_ck = root / "one_rank_ck"
    b_ck.mkdir()
    shutil.copytree(uninterrupted / "ckpt" / "global_step_2", b_ck / "global_step_2")
    (b_ck / "latest_checkpointed_iteration.txt").write_text("2\n")
    proc = _fsdpcfg(
        [
            *_args(root, "a"),
            "trainer.n_gpus_per_node=1",
            f"trainer.default_local_dir={b_ck}",
            f"fsdpcfg.run_dir={root / 'one_rank_run'}",
        ]
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    out = proc.stdout + proc.stderr
    assert f"resumed from {b_ck / 'global_step_2'} (step 2 of 3)" in out
    resumed = _rows(root / "one_rank_run")
    assert [s for s in resumed if s > 0] == [3]
    assert resumed[3]["actor/lr"] == pytest.approx(first[3]["actor/lr"], rel=1e-9)  # the scheduler came back
    assert json.loads((b_ck / "global_step_3" / "MANIFEST.json").read_text())["world_size"] == 1
