"""Run-folder metadata (run_info.json, overrides.yaml, config.yaml), secrets kept out of every saved file, the
start-up audit comparison, and the resume world-size refusal before anything starts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from fsdpcfg.check import check_overrides
from fsdpcfg.cli.main import main
from fsdpcfg.errors import ConfigError
from fsdpcfg.runinfo import compare_audit, expected_audit, redact, redact_overrides
from fsdpcfg.runinfo.audit import AUDIT_FILE, check_audit_file

REPO = Path(__file__).resolve().parents[2]
SECRET = "wandb-0123456789abcdef0123"


def test_dry_run_writes_run_info_and_keeps_the_env_secret_out(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FSDPCFG_TEST_WANDB", SECRET)
    rc = main(
        [
            "+recipe=qwen_grpo",
            f"fsdpcfg.run_dir={tmp_path}/run",
            "+fsdpcfg.env.WANDB_API_KEY=${oc.env:FSDPCFG_TEST_WANDB}",
            "--dry-run",
        ]
    )
    assert rc == 0, capsys.readouterr().err
    run = tmp_path / "run"
    for f in ("config.yaml", "run_info.json", "overrides.yaml"):
        assert SECRET not in (run / f).read_text(), f
    cfg = yaml.safe_load((run / "config.yaml").read_text())
    assert cfg["fsdpcfg"]["env"]["WANDB_API_KEY"] == "${oc.env:FSDPCFG_TEST_WANDB}"
    info = json.loads((run / "run_info.json").read_text())
    assert info["overrides"][0] == "+recipe=qwen_grpo" and info["choices"]["recipe"] == "qwen_grpo"
    assert info["provenance"]["data.train_batch_size"].startswith("recipe=qwen_grpo")
    assert info["provenance"]["fsdpcfg.run_dir"].startswith("command line")
    assert info["packages"]["hydra-core"] and info["packages"]["fsdpcfg"]
    assert info["hardware"]["cpu_count"] >= 1 and info["hardware"]["memory_gib"] > 0
    assert info["git"]["commit"] is None or len(info["git"]["commit"]) == 40
    assert info["plan"]["world_size"] == 2


@pytest.mark.slow  # end to end: a fresh Python process
def test_literal_secret_is_a_finding_in_overrides_and_in_recipe_files(tmp_path):
    found = check_overrides(["+recipe=qwen_grpo", f"+fsdpcfg.env.WANDB_API_KEY={SECRET}"])
    fc = [f for f in found if f.rule == "FC720"]
    assert len(fc) == 1 and fc[0].severity == "error" and SECRET not in fc[0].message
    assert "${oc.env:WANDB_API_KEY}" in fc[0].fix
    recipe = tmp_path / "leaky.yaml"
    recipe.write_text(
        "# @package _global_\ndefaults:\n  - qwen_grpo\nfsdpcfg:\n  env:\n"
        f"    HF_TOKEN: hf_{SECRET}\n    NCCL_DEBUG: WARN\n"
    )
    proc = subprocess.run(
        [sys.executable, "-m", "fsdpcfg", "check", str(recipe)], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert (
        proc.returncode == 1
        and "FC720" in proc.stdout + proc.stderr
        and "fsdpcfg.env.HF_TOKEN" in proc.stdout + proc.stderr
    )
    assert SECRET not in proc.stdout + proc.stderr
    clean = check_overrides(
        [
            "+recipe=qwen_grpo",
            "+fsdpcfg.env.WANDB_API_KEY=${oc.env:HOME}",
            "actor_rollout_ref.actor.ppo_max_token_len_per_gpu=4096",
        ]
    )
    assert not [f for f in clean if f.rule == "FC720"]


def test_redact_without_raw_and_inside_other_values():
    cfg = {
        "fsdpcfg": {"env": {"WANDB_API_KEY": SECRET, "NCCL_DEBUG": "WARN"}},
        "trainer": {"hf_token": SECRET, "experiment_name": f"x-{SECRET}", "logger": ["console", SECRET]},
    }
    out = redact(cfg)
    assert out["fsdpcfg"]["env"] == {"WANDB_API_KEY": "${oc.env:WANDB_API_KEY}", "NCCL_DEBUG": "WARN"}
    assert out["trainer"]["hf_token"] == "<redacted>" and SECRET not in json.dumps(out)
    assert cfg["trainer"]["hf_token"] == SECRET  # the input is not modified
    assert redact_overrides([f"+trainer.hf_token={SECRET}", "+fsdpcfg.env.X_TOKEN=${oc.env:T}", "a=1"]) == [
        "+trainer.hf_token=<redacted>",
        "+fsdpcfg.env.X_TOKEN=${oc.env:T}",
        "a=1",
    ]


def test_audit_compares_built_with_asked(tmp_path):
    from fsdpcfg.compose import compose

    cfg = compose(
        ["+recipe=qwen_grpo", "engine=fsdp2", "actor_rollout_ref.actor.fsdp_config.fsdp_size=1"]
    ).to_container()
    asked = expected_audit(cfg)
    assert asked["fsdp_version"] == 2 and asked["mesh"] == {"shape": [2, 1], "dim_names": ["ddp", "fsdp"]}
    assert asked["compute_dtype"] == "float32" and asked["rollout_backend"] == "hf" and asked["patches"] == []
    built = dict(asked, fsdp_version=1, compute_dtype="bfloat16")
    assert compare_audit(asked, built) == [
        "fsdp_version: asked 2, built 1",
        "compute_dtype: asked 'float32', built 'bfloat16'",
    ]
    assert compare_audit(asked, dict(asked)) == []
    (tmp_path / AUDIT_FILE).write_text(json.dumps({"asked": asked, "built": built}))
    assert len(check_audit_file(tmp_path)) == 2
    with pytest.raises(ConfigError, match="no readable start-up audit"):
        check_audit_file(tmp_path / "nowhere")


@pytest.mark.slow  # end to end: a fresh Python process
def test_a_checkpoint_of_the_old_layout_is_refused_before_start_another_world_size_is_not(tmp_path):
    """The layout before torch.distributed.checkpoint (one optimizer shard per rank, no trainer_state/dcp) cannot
    be resumed: refused before the run folder or torchrun, naming the folder and the fixes. A DCP checkpoint
    written by another number of ranks passes this check (it is resharded: tests/train/test_dcp_resume.py)."""
    ck = tmp_path / "ck" / "global_step_3"
    (ck / "trainer_state").mkdir(parents=True)
    (ck / "trainer_state" / "optim_rank0.pt").write_bytes(b"x")
    (ck / "MANIFEST.json").write_text(
        json.dumps({"step": 3, "world_size": 4, "files": ["trainer_state/optim_rank0.pt"]})
    )
    (tmp_path / "ck" / "latest_checkpointed_iteration.txt").write_text("3\n")
    base = [
        sys.executable,
        "-m",
        "fsdpcfg",
        "+recipe=qwen_grpo",
        f"trainer.default_local_dir={tmp_path / 'ck'}",
        f"fsdpcfg.run_dir={tmp_path / 'run'}",
    ]
    proc = subprocess.run(base, cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert f"{ck} has no trainer_state/dcp/.metadata" in proc.stderr and "trainer.resume_mode" in proc.stderr
    assert "trainer.default_local_dir" in proc.stderr and f"model.path={ck}" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "run").exists()  # refused before the run folder or torchrun
    ok = subprocess.run(
        [*base, f"trainer.default_local_dir={tmp_path / 'new'}", "--dry-run"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ok.returncode == 0, ok.stderr  # the fix it names passes: a folder of the run's own
    # its own folder with resume_mode=disable: the run would write over global_step_3, refused
    again = subprocess.run(
        [*base, "trainer.resume_mode=disable", "--dry-run"], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert again.returncode == 1 and "already holds global_step_3" in again.stderr
    from fsdpcfg.native.ckpt_layout import check_resume_layout

    (ck / "trainer_state" / "dcp").mkdir()
    (ck / "trainer_state" / "dcp" / ".metadata").write_bytes(b"m")
    from fsdpcfg.native.ckpt_layout import MANIFEST, describe_files, seal

    # the manifest a writer of 4 ranks leaves: every file listed, with its size and CRC-32
    (ck / MANIFEST).write_text(json.dumps(seal({"step": 3, "world_size": 4, **describe_files(ck)})))
    from fsdpcfg.schema.trainer import TrainerSection

    trainer = TrainerSection(resume_mode="auto", default_local_dir=str(tmp_path / "ck"))
    assert check_resume_layout(trainer) == ck  # world size 4, this plan 2: not refused
