"""launcher=native without starting torchrun: the run command's dry run, the resolved config in the run folder,
refusal on check errors, asset paths, and sweeps."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from fsdpcfg.cli.main import main
from fsdpcfg.cli.run import sweep_points
from fsdpcfg.errors import ConfigError
from fsdpcfg.launch import signals  # the launcher starts torchrun through run_forwarding
from fsdpcfg.launch.preflight import ensure_assets

REPO = Path(__file__).resolve().parents[2]


def test_dry_run_writes_the_resolved_config_and_prints_the_command(tmp_path, capsys):
    rc = main(["+recipe=qwen_grpo", f"fsdpcfg.run_dir={tmp_path}/run", "trainer.default_local_dir=ck", "--dry-run"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "-m torch.distributed.run --nnodes 1 --nproc_per_node 2 --standalone -m fsdpcfg.train" in out
    assert f"{tmp_path}/run/config.yaml" in out
    cfg = yaml.safe_load((tmp_path / "run" / "config.yaml").read_text())
    assert cfg["actor_rollout_ref"]["actor"]["strategy"] == "fsdp2"
    assert Path(cfg["trainer"]["default_local_dir"]).is_absolute()  # made absolute for the workers
    text = (tmp_path / "run" / "config.yaml").read_text()
    assert "${" not in "".join(ln for ln in text.splitlines(True) if not ln.startswith("#"))  # values resolved
    assert text.startswith(f'# fsdpcfg given: fsdpcfg.run_dir = "{tmp_path}/run"\n')  # the folders as given
    assert '# fsdpcfg given: trainer.default_local_dir = "ck"\n' in text


@pytest.mark.slow  # end to end: a fresh Python process
def test_bad_strategy_is_refused_fast_without_traceback():
    proc = subprocess.run(
        [sys.executable, "-m", "fsdpcfg", "+recipe=qwen_grpo", "actor_rollout_ref.actor.strategy=fsdp3"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 1
    assert "actor_rollout_ref.actor.strategy" in proc.stderr and "fsdp2" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert "nothing was started" in proc.stderr


def test_plan_error_is_a_config_error(tmp_path, capsys):
    rc = main(
        [
            "+recipe=qwen_grpo",
            f"fsdpcfg.run_dir={tmp_path}",
            "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=3",
            "--dry-run",
        ]
    )
    assert rc == 1
    assert "ppo_micro_batch_size_per_gpu" in capsys.readouterr().err


def test_sweep_points_expand_in_order():
    pts = sweep_points(["+recipe=qwen_grpo", "actor_rollout_ref.actor.optim.lr=1e-6,3e-6", "data.train_batch_size=4,8"])
    assert len(pts) == 4
    assert pts[0] == ["+recipe=qwen_grpo", "actor_rollout_ref.actor.optim.lr=1e-06", "data.train_batch_size=4"]
    assert [p[2] for p in pts] == ["data.train_batch_size=4", "data.train_batch_size=8"] * 2


def test_sweep_dry_run_gives_each_point_its_own_folders(tmp_path, capsys):
    # each job's folder is <hydra.sweep.dir>/<job>; its checkpoints <default_local_dir>/<sweep folder name>/<job>
    rc = main(
        [
            "+recipe=qwen_grpo",
            f"fsdpcfg.run_dir={tmp_path}/run",
            "-m",
            "actor_rollout_ref.actor.optim.lr=1e-6,3e-6",
            f"hydra.sweep.dir={tmp_path}/sw",
            "--dry-run",
        ]
    )
    assert rc == 0
    for i, lr in enumerate([1e-6, 3e-6]):
        cfg = yaml.safe_load((tmp_path / "sw" / str(i) / "config.yaml").read_text())
        assert cfg["actor_rollout_ref"]["actor"]["optim"]["lr"] == pytest.approx(lr)
        assert cfg["trainer"]["default_local_dir"].endswith(f"/sw/{i}")


def test_ensure_assets_only_touches_fsdpcfg_home(tmp_path, monkeypatch):
    monkeypatch.setenv("FSDPCFG_HOME", str(tmp_path))
    cfg = {"actor_rollout_ref": {"model": {"path": "/somewhere/else", "tokenizer_path": None}}}
    assert ensure_assets(cfg) == []
    cfg["actor_rollout_ref"]["model"]["path"] = str(tmp_path / "models" / "no-such-asset")
    with pytest.raises(ConfigError, match="not an asset"):
        ensure_assets(cfg)


def _no_torchrun(monkeypatch):
    started = []
    monkeypatch.setattr(signals, "run_forwarding", lambda *a, **k: started.append(a) or 0)
    return started


def test_missing_model_folder_is_refused_before_torchrun_naming_the_offline_option(tmp_path, capsys, monkeypatch):
    started = _no_torchrun(monkeypatch)
    monkeypatch.chdir(tmp_path)  # not the checkout: a checkpoint the README's main job left there would resume
    rc = main(
        [
            "+recipe=qwen_grpo",
            f"fsdpcfg.run_dir={tmp_path}/run",
            f"actor_rollout_ref.model.path={tmp_path}/no/such/model",
        ]
    )
    err = capsys.readouterr().err
    assert rc == 1 and not started
    assert "actor_rollout_ref.model.path" in err and "does not exist" in err and "model=tiny_qwen2" in err
    assert "Traceback" not in err


def test_uncached_hub_id_is_refused_when_the_hub_is_unreachable_or_offline(tmp_path, capsys, monkeypatch):
    from fsdpcfg.schema import model as model_schema

    started = _no_torchrun(monkeypatch)
    monkeypatch.chdir(tmp_path)  # not the checkout: a checkpoint the README's main job left there would resume
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # an empty cache: the id is not cached
    monkeypatch.setattr(model_schema, "hub_reachable", lambda timeout_s=3.0: False)
    rc = main(["+recipe=qwen_grpo", "model=qwen2_5_0_5b_instruct", f"fsdpcfg.run_dir={tmp_path}/run"])
    err = capsys.readouterr().err
    assert rc == 1 and not started
    assert "Qwen/Qwen2.5-0.5B-Instruct" in err and "cannot be reached" in err and "model=tiny_qwen2" in err
    # offline by environment: refused without trying the network
    monkeypatch.setattr(model_schema, "hub_reachable", lambda timeout_s=3.0: pytest.fail("network tried offline"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert main(["+recipe=qwen_grpo", "model=qwen2_5_0_5b_instruct", f"fsdpcfg.run_dir={tmp_path}/run"]) == 1
    assert "model=tiny_qwen2" in capsys.readouterr().err and not started
