"""``fsdpcfg show``: the resolved config with each value's provenance."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from fsdpcfg.cli.main import main


def test_show_table_has_value_and_source(capsys):
    assert (
        main(
            [
                "show",
                "+recipe=qwen_grpo",
                "-k",
                "actor_rollout_ref.rollout.n",
                "-k",
                "data.train_batch_size",
                "data.train_batch_size=16",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert out.startswith("choices: recipe=qwen_grpo engine=fsdp2 ")
    rows = {ln.split()[0]: ln for ln in out.splitlines()[2:]}
    assert rows["actor_rollout_ref.rollout.n"].split()[1] == "4"
    assert "recipe=qwen_grpo (recipes/qwen_grpo.yaml:" in rows["actor_rollout_ref.rollout.n"]
    assert rows["data.train_batch_size"].split()[1] == "16"
    assert rows["data.train_batch_size"].endswith("command line `data.train_batch_size=16`")


def test_show_yaml_and_json(capsys):
    assert main(["show", "qwen_grpo", "--format", "yaml", "-k", "trainer"]) == 0
    text = capsys.readouterr().out
    assert "nnodes: 1  # trainer=cpu (conf/trainer/cpu.yaml:" in text
    assert yaml.safe_load(text)["trainer"]["experiment_name"] == "qwen_grpo"
    assert main(["show", "--format", "json", "qwen_grpo", "rollout=vllm"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["choices"]["rollout"] == "vllm"
    assert doc["config"]["actor_rollout_ref"]["rollout"]["name"] == "vllm"
    assert doc["provenance"]["actor_rollout_ref.rollout.name"].startswith("rollout=vllm (conf/rollout/vllm.yaml:")


def test_show_accepts_a_recipe_file(tmp_path: Path, capsys):
    f = tmp_path / "mine.yaml"
    f.write_text("# @package _global_\ndefaults:\n  - qwen_grpo\n  - _self_\ndata:\n  train_batch_size: 12\n")
    assert main(["show", str(f), "-k", "data.train_batch_size", "-k", "trainer.experiment_name"]) == 0
    out = capsys.readouterr().out
    assert f"recipe=mine ({f.resolve()}:6)" in out or "recipe=mine (" in out
    line = next(ln for ln in out.splitlines() if ln.startswith("data.train_batch_size"))
    assert line.split()[1] == "12"
    # keys the parent recipe sets are attributed to the parent file, not to the root config
    line = next(ln for ln in out.splitlines() if ln.startswith("trainer.experiment_name"))
    assert "recipe=qwen_grpo (recipes/qwen_grpo.yaml:" in line


def test_show_mistakes_exit_without_traceback(capsys):
    assert main(["show", "qwen_grpo", "-k", "actor_rollout_ref.rolout.n"]) == 2
    assert "did you mean actor_rollout_ref.rollout.n?" in capsys.readouterr().err
    assert main(["show", "+recipe=qwen_grpo", "data.train_batch_sizes=3"]) == 1
    err = capsys.readouterr().err
    assert "did you mean data.train_batch_size=3?" in err and "Traceback" not in err


SCRIPTS = Path(__file__).resolve().parents[1] / "check" / "scripts"


def test_show_and_diff_take_a_run_script(capsys):
    """``fsdpcfg show run.sh`` and ``fsdpcfg diff`` read a verl run script as ``fsdpcfg check run.sh`` composes it
    (read, not run), each value sourced to its script line; overrides after it apply (issue 24 item 3)."""
    script = SCRIPTS / "grpo_arrays.sh"
    line = next(i for i, t in enumerate(script.read_text().splitlines(), 1) if "data.train_batch_size=" in t)
    assert main(["show", str(script), "--key", "data.train_batch_size"]) == 0
    out = capsys.readouterr().out
    assert re.search(rf"data\.train_batch_size +256 +{re.escape(str(script))}:{line}\n", out), out
    assert "launcher=verl" in out.splitlines()[0]
    assert main(["diff", "--a", str(script), "--b", f"{script} data.train_batch_size=64"]) == 0
    assert re.search(r"data\.train_batch_size +256 +64\n", capsys.readouterr().out)
    assert main(["show", str(script), "qwen_grpo"]) == 2
    assert "a run script (" in capsys.readouterr().err


def test_show_of_a_script_with_two_trainer_commands_names_the_others(capsys):
    script = SCRIPTS / "corpus" / "arrays_device_probe_0.sh"  # two paths: DEVICE=npu, DEVICE=gpu
    assert main(["show", str(script), "--key", "data.train_batch_size"]) == 0
    err = capsys.readouterr().err
    assert f"note: {script} has 2 trainer commands or paths; this is {script}:34 [DEVICE=npu]" in err
    assert f"(the others: {script}:34 [DEVICE=gpu]); `fsdpcfg import {script}` writes one recipe each" in err
