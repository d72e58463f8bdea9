"""``fsdpcfg export --launcher verl``: the folder, the script (run with a stand-in python3), the CLI."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest
import yaml

from fsdpcfg.cli.main import main
from fsdpcfg.compose import compose
from fsdpcfg.errors import ConfigError
from fsdpcfg.launch.verl_export import export_verl

REPO_RECIPES = Path(__file__).resolve().parents[2] / "recipes"
GPU = ["+recipe=qwen_grpo", "rollout=vllm", "trainer=gpu_1x", "actor_rollout_ref.rollout.tensor_model_parallel_size=1"]


def _fake_python(tmp: Path) -> dict[str, str]:
    """A PATH whose python3 prints each argument it got, one per line."""
    bin_ = tmp / "bin"
    bin_.mkdir()
    py = bin_ / "python3"
    py.write_text('#!/bin/sh\nfor a in "$@"; do echo "ARG[$a]"; done\necho "ENV[NCCL_DEBUG=${NCCL_DEBUG:-}]"\n')
    py.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_}{os.pathsep}{os.environ['PATH']}"}


def test_export_writes_an_executable_script_a_yaml_and_the_shipped_files(tmp_path):
    out = tmp_path / "my export"  # a space: the script must quote its own folder
    res = export_verl(compose(GPU + ["launcher=verl", "+fsdpcfg.env.NCCL_DEBUG=WARN"]), out)
    assert res.script.stat().st_mode & stat.S_IXUSR
    text = res.script.read_text()
    assert text.startswith("#!/usr/bin/env bash\n# Runs verl 0.9.1 (verl.trainer.main_ppo)")
    assert "python3 -m verl.trainer.main_ppo" in text and "export NCCL_DEBUG=WARN" in text
    doc = yaml.safe_load(res.config.read_text())
    assert doc["defaults"] == ["ppo_trainer", "_self_"] and "fsdpcfg" not in doc
    # the shipped GSM8K files are copied next to the config, byte for byte
    for key in ("data.train_files", "data.val_files"):
        copy = Path(res.copied[key])
        assert copy.parent == out / "files"
        src = doc["data"][key.split(".")[1]]
        assert copy.read_bytes() == Path(src).read_bytes()

    env = _fake_python(tmp_path)
    run = subprocess.run(
        ["bash", str(res.script), "trainer.total_epochs=2"], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert run.returncode == 0, run.stderr
    args = [line[4:-1] for line in run.stdout.splitlines() if line.startswith("ARG[")]
    assert args[:4] == ["-m", "verl.trainer.main_ppo", f"--config-path={out}", "--config-name=config"]
    assert f"data.train_files='{out}/files/gsm8k_train.jsonl'" in args
    assert args[-1] == "trainer.total_epochs=2"  # the user's own overrides come last, so they win
    assert "ENV[NCCL_DEBUG=WARN]" in run.stdout
    assert res.overrides == [a for a in args if a.startswith("data.")]


def test_export_refuses_to_overwrite_without_force(tmp_path):
    c = compose(GPU + ["launcher=verl"])
    export_verl(c, tmp_path)
    with pytest.raises(ConfigError) as e:
        export_verl(c, tmp_path)
    assert "--force" in e.value.fix
    export_verl(c, tmp_path, force=True)


def test_cli_export_adds_launcher_and_checks_first(tmp_path, capsys):
    out = tmp_path / "ok"
    assert main(["export", "--launcher", "verl", *GPU, "-o", str(out)]) == 0
    assert (out / "run_verl.sh").is_file() and (out / "config.yaml").is_file()
    assert "run it: bash" in capsys.readouterr().out
    # a config fsdpcfg rejects is not exported: the native-only hf rollout chosen explicitly
    bad = tmp_path / "bad"
    assert main(["export", "--launcher", "verl", "+recipe=qwen_grpo", "rollout=hf", "-o", str(bad)]) == 1
    err = capsys.readouterr().err
    assert "FC801" in err and "launcher=native" in err
    assert not bad.exists()


def test_cli_export_of_the_plain_recipe_picks_a_verl_rollout_and_says_so(tmp_path, capsys):
    out = tmp_path / "plain"
    assert main(["export", "--launcher", "verl", "+recipe=qwen_grpo", "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "exported with rollout=vllm" in printed
    cfg = yaml.safe_load((out / "config.yaml").read_text())
    assert cfg["actor_rollout_ref"]["rollout"]["name"] == "vllm"
    assert cfg["trainer"]["device"] == "cuda" and "fsdpcfg" not in cfg
    assert "verl.trainer.main_ppo" in (out / "run_verl.sh").read_text()
    # the user's explicit choice is kept
    out2 = tmp_path / "sglang"
    assert main(["export", "--launcher", "verl", "+recipe=qwen_grpo", "rollout=sglang", "-o", str(out2)]) == 0
    assert yaml.safe_load((out2 / "config.yaml").read_text())["actor_rollout_ref"]["rollout"]["name"] == "sglang"


def test_cli_export_rejects_a_contradicting_launcher(tmp_path, capsys):
    assert main(["export", "--launcher", "verl", *GPU, "launcher=native", "-o", str(tmp_path / "x")]) == 2
    assert "contradicts --launcher verl" in capsys.readouterr().err


def test_sft_recipe_exports_a_torchrun_script(tmp_path):
    if not (REPO_RECIPES / "qwen_sft.yaml").is_file():
        pytest.skip("no SFT recipe")
    out = tmp_path / "sft"
    assert main(["export", "--launcher", "verl", "+recipe=qwen_sft", "trainer=gpu_1x", "-o", str(out)]) == 0
    text = (out / "run_verl.sh").read_text()
    assert "exec torchrun --nnodes=1 --nproc_per_node=1 \\\n  -m verl.trainer.sft_trainer" in text
    doc = yaml.safe_load((out / "config.yaml").read_text())
    assert doc["defaults"] == ["sft_trainer_engine", "_self_"] and doc["trainer"]["device"] == "cuda"
    assert "actor_rollout_ref" not in doc and "fsdpcfg" not in doc
