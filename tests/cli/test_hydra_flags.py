"""Hydra's flags on the run command (``--cfg``, ``--info``, ``--version``, ``-cp/-cn``, ``-sc``): real output."""

from __future__ import annotations

import shutil
import subprocess

import pytest
import yaml

from fsdpcfg import paths
from fsdpcfg.cli.main import main


def _out(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(list(argv))
    got = capsys.readouterr()
    return rc, got.out, got.err


def test_cfg_job_prints_the_composed_config_and_starts_nothing(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rc, out, _ = _out(capsys, "+recipe=qwen_grpo", "--cfg", "job")
    assert rc == 0
    cfg = yaml.safe_load(out)
    assert cfg["actor_rollout_ref"]["actor"]["strategy"] == "fsdp2"  # engine=fsdp2 of the recipe
    assert cfg["fsdpcfg"]["launcher"] == "native" and "hydra" not in cfg
    assert not (tmp_path / "runs").exists()  # nothing written, nothing launched


def test_cfg_package_and_resolve(capsys):
    rc, out, _ = _out(
        capsys,
        "+recipe=qwen_grpo",
        "--cfg=job",
        "-p",
        "actor_rollout_ref.actor.optim",
        "actor_rollout_ref.actor.optim.lr=3e-6",
    )
    assert rc == 0 and yaml.safe_load(out)["lr"] == 3e-6
    _, raw, _ = _out(capsys, "+recipe=qwen_grpo", "--cfg", "job", "-p", "actor_rollout_ref.ref")
    _, resolved, _ = _out(capsys, "+recipe=qwen_grpo", "--cfg", "job", "--resolve", "-p", "actor_rollout_ref.ref")
    assert "${" in raw and "${" not in resolved


def test_cfg_hydra_and_all(capsys):
    rc, out, _ = _out(capsys, "+recipe=qwen_grpo", "--cfg", "hydra")
    doc = yaml.safe_load(out)
    assert rc == 0 and set(doc) == {"hydra"} and doc["hydra"]["runtime"]["choices"]["recipe"] == "qwen_grpo"
    _, out, _ = _out(capsys, "+recipe=qwen_grpo", "--cfg", "all")
    assert {"hydra", "actor_rollout_ref", "fsdpcfg"} <= set(yaml.safe_load(out))


def test_cfg_unknown_value_and_missing_value_are_usage_errors(capsys):
    rc, _, err = _out(capsys, "+recipe=qwen_grpo", "--cfg", "jobs")
    assert rc == 2 and "--cfg jobs: unknown" in err and "job, hydra, all" in err
    rc, _, err = _out(capsys, "+recipe=qwen_grpo", "--cfg")
    assert rc == 2 and "--cfg needs a value" in err


def test_info_lists_search_path_choices_and_groups(capsys):
    rc, out, _ = _out(capsys, "+recipe=qwen_grpo", "engine=fsdp", "--info")
    assert rc == 0
    assert f"file://{paths.conf_dir('ppo')}" in out
    assert "  engine: fsdp\n" in out and "  recipe: qwen_grpo" in out
    assert "  engine: fsdp, fsdp2 (default)" in out
    rc, out, _ = _out(capsys, "+recipe=qwen_grpo", "--info", "defaults")
    assert "Config search path" not in out and "recipe: qwen_grpo" in out


def test_version_names_fsdpcfg_verl_and_torch(capsys):
    import importlib.metadata

    rc, out, _ = _out(capsys, "--version")
    assert rc == 0 and out.startswith("fsdpcfg 0.1.0 (verl key set 0.9.1)")
    assert f"torch {importlib.metadata.version('torch')}" in out


def test_config_path_and_name_run_a_config_file(capsys, tmp_path):
    shutil.copy(paths.recipes_dir() / "qwen_grpo.yaml", tmp_path / "mine.yaml")
    rc, by_file, _ = _out(capsys, "-cp", str(tmp_path), "-cn", "mine", "--cfg", "job")
    _, by_name, _ = _out(capsys, "+recipe=qwen_grpo", "--cfg", "job")
    assert rc == 0 and yaml.safe_load(by_file) == yaml.safe_load(by_name)
    rc, _, err = _out(capsys, "-cp", str(tmp_path), "-cn", "absent")
    assert rc == 2 and "no config file" in err


@pytest.mark.slow  # end to end: a fresh Python process
def test_shell_completion_script_and_queries(capsys, monkeypatch):
    rc, script, _ = _out(capsys, "-sc", "install=bash")
    assert rc == 0 and "complete -F _fsdpcfg_complete fsdpcfg" in script
    subprocess.run(["bash", "-n"], input=script, text=True, check=True)  # valid bash
    cases = {
        # both trees' options: engine=automodel is the SFT tree's (verl's sft_trainer has an automodel engine)
        "fsdpcfg engine=": {
            "engine=fsdp",
            "engine=fsdp2",
            "engine=megatron",
            "engine=torchtitan",
            "engine=veomni",
            "engine=automodel",
        },
        "fsdpcfg +recipe=": {
            "+recipe=qwen_grpo",
            "+recipe=arith_grpo",
            "+recipe=qwen_sft",
            "+recipe=arith_sft",
            "+recipe=arith_grpo_sft",
        },
        "fsdpcfg +recipe=qwen_grpo actor_rollout_ref.act": {"actor_rollout_ref.actor."},
    }
    for line, want in cases.items():
        monkeypatch.setenv("COMP_LINE", line)
        monkeypatch.delenv("COMP_POINT", raising=False)
        rc, out, _ = _out(capsys, "-sc", "query=bash")
        assert rc == 0 and set(out.split()) == want, line
    monkeypatch.setenv("COMP_LINE", "fsdpcfg +recipe=qwen_grpo actor_rollout_ref.actor.optim.lr_sc")
    _, out, _ = _out(capsys, "-sc", "query=bash")
    assert out.split() == ["actor_rollout_ref.actor.optim.lr_scheduler_type="]
    rc, _, err = _out(capsys, "-sc", "install=tcsh")
    assert rc == 2 and "bash, zsh, fish" in err
