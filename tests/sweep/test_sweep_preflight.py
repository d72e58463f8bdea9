"""Sweep expansion (Hydra's grammar) and the preflight: every point checked before any starts."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fsdpcfg.cli.main import main
from fsdpcfg.errors import UsageError
from fsdpcfg.sweep import expand, preflight

REPO = Path(__file__).resolve().parents[2]
LR = "actor_rollout_ref.actor.optim.lr"
N = "actor_rollout_ref.rollout.n"


def test_comma_lists_expand_last_key_fastest_and_hydra_overrides_split_off():
    e = expand(["+recipe=qwen_grpo", f"{LR}=1e-6,3e-6", f"{N}=4,8", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2"])
    assert [p[1:] for p in e.points] == [
        [f"{LR}=1e-06", f"{N}=4"],
        [f"{LR}=1e-06", f"{N}=8"],
        [f"{LR}=3e-06", f"{N}=4"],
        [f"{LR}=3e-06", f"{N}=8"],
    ]
    assert e.hydra_overrides == ["hydra/launcher=joblib", "hydra.launcher.n_jobs=2"]
    assert e.kind == "ppo" and not e.duplicates


def test_duplicates_are_removed_and_reported():
    e = expand(["+recipe=qwen_grpo", f"{N}=4,8,4"])
    assert [p[-1] for p in e.points] == [f"{N}=4", f"{N}=8"]
    assert e.duplicates == [(["+recipe=qwen_grpo", f"{N}=4"], 0)]


def test_range_and_glob_over_group_options():
    e = expand(["+recipe=qwen_grpo", "engine=glob(fsdp*)", "trainer.total_training_steps=range(1,3)"])
    assert [p[1:] for p in e.points] == [
        ["engine=fsdp", "trainer.total_training_steps=1"],
        ["engine=fsdp", "trainer.total_training_steps=2"],
        ["engine=fsdp2", "trainer.total_training_steps=1"],
        ["engine=fsdp2", "trainer.total_training_steps=2"],
    ]
    assert expand(["+recipe=glob(qwen_*,exclude=qwen_sft)"]).points == [["+recipe=qwen_grpo"]]


def test_mixed_config_trees_and_bad_syntax_are_usage_errors():
    with pytest.raises(UsageError, match="mixes config trees"):
        expand(["+recipe=qwen_grpo,qwen_sft"])
    with pytest.raises(UsageError, match="cannot parse"):
        expand(["+recipe=qwen_grpo", f"{LR}=1e-6,"])
    with pytest.raises(UsageError, match="intervals"):
        expand(["+recipe=qwen_grpo", f"{LR}=interval(0.1,0.2)"])


def test_preflight_marks_failures_and_same_config_duplicates():
    checks = preflight(
        [["+recipe=qwen_grpo", f"{N}=1"], ["+recipe=qwen_grpo", f"{LR}=1e-6"], ["+recipe=qwen_grpo", f"{LR}=0.000001"]],
        echo=lambda s: None,
    )
    assert not checks[0].ok and {f.rule for f in checks[0].findings if f.severity == "error"} >= {"FC601"}
    assert checks[1].ok and checks[1].plan.world_size == 2
    assert checks[2].duplicate_of == 1  # same resolved config, spelled differently


@pytest.mark.slow  # end to end: a fresh Python process
def test_invalid_sweep_starts_nothing_exits_nonzero_within_10s_and_names_the_point(tmp_path):
    t0 = time.perf_counter()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "fsdpcfg",
            "-m",
            "+recipe=qwen_grpo",
            f"{LR}=1e-6,3e-6",
            f"{N}=1,4",
            f"hydra.sweep.dir={tmp_path / 'sweep'}",
            f"fsdpcfg.run_dir={tmp_path / 'run'}",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    elapsed = time.perf_counter() - t0
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert elapsed < 10, f"took {elapsed:.1f} s"
    failing = [line for line in proc.stderr.splitlines() if line.endswith("fails the checks:")]
    assert len(failing) == 2
    assert failing[0].startswith("point 0: +recipe=qwen_grpo") and f"{LR}=1e-06 {N}=1 " in failing[0]
    assert failing[1].startswith("point 2: +recipe=qwen_grpo") and f"{LR}=3e-06 {N}=1 " in failing[1]
    assert "[FC601]" in proc.stderr and "2 of 4 sweep points fail the checks; nothing was started" in proc.stderr
    assert "--only-valid" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "sweep").exists() and not (tmp_path / "run").exists()


def test_only_valid_dry_run_writes_the_valid_points_folders(tmp_path, capsys):
    rc = main(
        [
            "-m",
            "+recipe=qwen_grpo",
            f"{N}=1,4,8",
            f"hydra.sweep.dir={tmp_path}/sw",
            "--only-valid",
            "--dry-run",
            f"trainer.default_local_dir={tmp_path}/ck",
        ]
    )
    assert rc == 0
    out = capsys.readouterr()
    assert "point 0" in out.err and "fails the checks" in out.err
    assert sorted(p.name for p in (tmp_path / "sw").iterdir() if p.is_dir()) == ["0", "1"]
    info = json.loads((tmp_path / "sw" / "0" / "run_info.json").read_text())
    assert info["overrides"] == ["+recipe=qwen_grpo", f"{N}=4", f"trainer.default_local_dir={tmp_path}/ck"]
    assert info["sweep"] == f"{tmp_path}/sw" and info["plan"]["n"] == 4
    assert "torch.distributed.run" in out.out and "dry run: nothing was started" in out.out


def test_a_second_sweep_into_a_held_sweep_folder_is_refused(tmp_path, capsys, monkeypatch):
    """Two sweeps in one sweep folder numbered their points 0, 1, ... over each other (issue 22 item 3): the sweep
    holds its folder's lock while its points run, and a second one is refused before any point starts."""
    from fsdpcfg.runinfo.lock import RunLock, probe
    from fsdpcfg.sweep import runner

    launched = []

    def launch(hl, task, runnable, *rest):  # stands in for the points' runs: the folder is held meanwhile
        launched.append(probe(hl.sweep_dir)[0])
        return 0

    monkeypatch.setattr(runner, "_launch_and_summarise", launch)
    sweep_dir = tmp_path / "sw"
    argv = ["-m", "+recipe=qwen_grpo", f"{N}=4,8", f"hydra.sweep.dir={sweep_dir}", f"fsdpcfg.run_dir={tmp_path}/r"]
    with RunLock([("hydra.sweep.dir", sweep_dir)]) as first:  # the first sweep, running
        assert main(argv) == 1
        err = capsys.readouterr().err
        assert f"{sweep_dir} is in use by another run: pid {first.holder.pid}" in err and not launched
    assert main(argv) == 0 and launched == ["held"]  # free again: launched, holding the folder while it runs
    assert probe(sweep_dir)[0] == "free"  # and released after


@pytest.mark.parametrize(
    "hydra_args",
    [
        ["hydra.sweeper.params={actor_rollout_ref.actor.optim.lr:'1e-5,2e-5'}"],
        ["hydra/sweeper=basic", "+hydra.sweeper.params.x=y"],
    ],
)
def test_sweeper_settings_hydra_cannot_merge_are_a_message(tmp_path, monkeypatch, capsys, hydra_args):
    """Hydra's sweeper settings that its own merge refuses with a plain AttributeError/AssertionError tracebacked
    (break-it pass): they are a ConfigError naming the multirun config, and nothing starts or is written."""

    monkeypatch.chdir(tmp_path)
    argv = ["-m", "+recipe=qwen_grpo", *hydra_args, "actor_rollout_ref.actor.optim.lr=1e-5,2e-5", "--dry-run"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "fsdpcfg: error: cannot compose Hydra's multirun config" in err and "Traceback" not in err
    assert not (tmp_path / "runs").exists()
