"""``fsdpcfg check`` end to end: JSON shape, exit codes, human report, files, verl dumps, run scripts."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml

from fsdpcfg import verlref
from fsdpcfg.check.sources import parse_run_script

GOOD_SCRIPT = """#!/usr/bin/env bash
set -x
MODEL=Qwen/Qwen2.5-0.5B-Instruct   # a hub id
export N_GPUS=8
python3 -m verl.trainer.main_ppo \\
    algorithm.adv_estimator=grpo \\
    data.train_files=$HOME/data/gsm8k/train.parquet \\
    data.train_batch_size=256 \\
    actor_rollout_ref.model.path=$MODEL \\
    actor_rollout_ref.actor.ppo_mini_batch_size=64 \\
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4 \\
    actor_rollout_ref.actor.use_kl_loss=True \\
    actor_rollout_ref.rollout.name=vllm \\
    actor_rollout_ref.rollout.n=4 \\
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4 \\
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=4 \\
    actor_rollout_ref.rollout.multi_turn.enable=false \\
    trainer.logger='["console","wandb"]' \\
    trainer.n_gpus_per_node=${N_GPUS} trainer.nnodes=1 $@ 2>&1 | tee verl.log
"""


def test_json_shape_and_exit_codes(run_check):
    rc, findings = run_check("+recipe=qwen_grpo")
    assert rc == 0 and not [f for f in findings if f["severity"] == "error"]
    rc, findings = run_check("+recipe=qwen_grpo", "actor_rollout_ref.actor.strategy=fsdp3")
    assert rc == 1
    assert findings[0] == {
        "rule": "FC103",
        "severity": "error",
        "keys": ["actor_rollout_ref.actor.strategy"],
        "message": "actor_rollout_ref.actor.strategy: 'fsdp3' is not one of fsdp, fsdp2, fsdp_turbo, "
        "megatron, veomni, torchtitan, automodel",
        "fix": findings[0]["fix"],
        "file": None,
        "line": None,  # set on the command line
        "input": "+recipe=qwen_grpo actor_rollout_ref.actor.strategy=fsdp3",
    }
    assert all(list(f) == ["rule", "severity", "keys", "message", "fix", "file", "line", "input"] for f in findings)


@pytest.mark.slow  # end to end: a fresh Python process
def test_exact_json_document():
    out = subprocess.run(
        [sys.executable, "-m", "fsdpcfg", "check", "--format", "json", "+recipe=qwen_grpo", "+trainer.nnode=2"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 1 and out.stderr == ""
    doc = json.loads(out.stdout)
    assert list(doc) == ["exit_code", "inputs", "findings"] and doc["exit_code"] == 1
    assert doc["findings"][0]["rule"] == "FC102"
    [one] = doc["inputs"]
    assert one["input"] == "+recipe=qwen_grpo +trainer.nnode=2" and one["status"] == "fails"
    assert one["counts"]["error"] == sum(f["severity"] == "error" for f in one["findings"]) >= 1


@pytest.mark.parametrize(
    "args",
    [
        ["a=["],
        ["missing.yaml"],
        ["x.yaml", "data.train_batch_size=4"],
        ["--format", "xml"],
        ["-m", "+recipe=qwen_grpo"],
    ],
)
def test_usage_errors_exit_2(args, capsys):
    from fsdpcfg.cli.main import main

    try:
        rc = main(["check", *args])
    except SystemExit as e:  # argparse's own usage errors
        rc = e.code
    assert rc == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err


def test_human_report(run_check):
    rc, text = run_check(
        "+recipe=qwen_grpo",
        "actor_rollout_ref.actor.strategy=fsdp3",
        "actor_rollout_ref.model.path=/cluster/models/x",
        fmt="human",
    )
    assert rc == 1
    assert text.index("ERROR") < text.index("INFO")
    assert (
        "FC103 actor_rollout_ref.actor.strategy: 'fsdp3' is not one of fsdp, fsdp2, fsdp_turbo, megatron, veomni, "
        "torchtitan, automodel"
    ) in text
    assert "-> did you mean actor_rollout_ref.actor.strategy=fsdp?" in text
    assert "actor_rollout_ref.actor.strategy from command line `actor_rollout_ref.actor.strategy=fsdp3`" in text
    assert "check fails (1 error, 0 warnings, " in text


def test_human_report_shows_derived_numbers(run_check):
    rc, text = run_check("+recipe=qwen_grpo", fmt="human")
    assert rc == 0 and "DERIVED NUMBERS" in text
    assert "world_size: 2 = trainer.nnodes 1 x trainer.n_gpus_per_node 2" in text
    assert "grad_accum:" in text and "optimizer_steps_per_step:" in text
    rc, text = run_check("+recipe=qwen_grpo", "--no-plan", fmt="human")
    assert "DERIVED NUMBERS" not in text


def test_recipe_files(tmp_path, run_check):
    good = tmp_path / "good.yaml"
    good.write_text("# @package _global_\ndefaults:\n  - qwen_grpo\n  - _self_\ndata:\n  train_batch_size: 8\n")
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "# @package _global_\ndefaults:\n  - qwen_grpo\n  - _self_\nactor_rollout_ref:\n  actor:\n    strategy: fsdp3\n"
    )
    assert run_check(str(good))[0] == 0
    rc, findings = run_check(str(good), str(bad))
    assert rc == 1 and [f["rule"] for f in findings if f["severity"] == "error"] == ["FC103"]
    rc, text = run_check(str(bad), fmt="human")
    assert f"{bad}:7 actor_rollout_ref.actor.strategy" in text or "bad.yaml:7" in text


def test_recipe_file_named_like_a_shipped_recipe(tmp_path, run_check):
    mine = tmp_path / "qwen_grpo.yaml"  # the user's own, extending the shipped one
    mine.write_text(
        "# @package _global_\ndefaults:\n  - /recipe/qwen_grpo@_global_\n  - _self_\n"
        "actor_rollout_ref:\n  actor:\n    strategy: fsdp3\n"
    )
    rc, findings = run_check(str(mine))
    assert rc == 1 and [f["rule"] for f in findings if f["severity"] == "error"] == ["FC103"]


def test_broken_yaml_file(tmp_path, run_check):
    f = tmp_path / "broken.yaml"
    f.write_text("data:\n  train_batch_size: [1,\n")
    rc, findings = run_check(str(f))
    assert rc == 1 and findings[0]["rule"] == "FC100" and "not valid YAML" in findings[0]["message"]


def _verl_dump() -> dict:
    flat = dict(verlref.defaults())
    flat.update(
        {
            "actor_rollout_ref.rollout.name": "vllm",
            "actor_rollout_ref.model.path": "Qwen/Qwen2.5-7B-Instruct",
            "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu": 4,
            "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu": 4,
            "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu": 4,
            "critic.ppo_micro_batch_size_per_gpu": 4,
            "algorithm.adv_estimator": "grpo",
            "actor_rollout_ref.rollout.n": 4,
            "actor_rollout_ref.actor.use_kl_loss": True,
        }
    )
    tree: dict = {}
    # verl 0.9.1's dump also holds the legacy top-level reward sections (nulls); they are FC701's business
    flat = {k: v for k, v in flat.items() if not k.startswith(("custom_reward_function.", "reward_model."))}
    for k, v in flat.items():
        node = tree
        parts = k.split(".")
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = v
    return tree


def test_verl_dump_is_checked_as_launcher_verl(tmp_path, run_check):
    f = tmp_path / "config.yaml"
    f.write_text(yaml.safe_dump(_verl_dump()))
    rc, findings = run_check(str(f))
    assert rc == 0, findings
    dump = _verl_dump()
    dump["actor_rollout_ref"]["actor"]["strategy"] = "fsdp3"
    dump["actor_rollout_ref"]["actor"]["ppo_micro_batch_size_pergpu"] = 4
    f.write_text(yaml.safe_dump(dump))
    rc, findings = run_check(str(f))
    errs = {f["rule"]: f for f in findings if f["severity"] == "error"}
    assert rc == 1 and {"FC101", "FC103"} <= set(errs)
    assert "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu" in errs["FC101"]["keys"]


def test_parse_run_script():
    _, [cmd] = parse_run_script(GOOD_SCRIPT, environ={})
    got = {w.text: w.line for w in cmd.overrides}
    assert "actor_rollout_ref.model.path=Qwen/Qwen2.5-0.5B-Instruct" in got  # $MODEL from the script
    assert "trainer.n_gpus_per_node=8" in got  # ${N_GPUS} from `export N_GPUS=8`
    assert 'trainer.logger=["console","wandb"]' in got
    assert [w.text for w in cmd.overrides if not w.known] == ["data.train_files=$HOME/data/gsm8k/train.parquet"]
    assert got["actor_rollout_ref.rollout.name=vllm"] == 13


def test_run_script(tmp_path, run_check, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    good = tmp_path / "run_grpo.sh"
    good.write_text(GOOD_SCRIPT)
    rc, findings = run_check(str(good))
    assert rc == 0, [f for f in findings if f["severity"] == "error"]
    infos = [f for f in findings if f["rule"] == "FC120"]  # $HOME from the check's environment, named
    assert infos and infos[0]["keys"] == ["data.train_files"] and f"HOME={tmp_path}" in infos[0]["message"]
    bad = tmp_path / "run_bad.sh"
    bad.write_text(
        GOOD_SCRIPT.replace(
            "actor_rollout_ref.actor.use_kl_loss=True",
            "actor_rollout_ref.actor.strategy=fsdp3 +actor_rollout_ref.actor.ppo_epoch=2",
        )
    )
    rc, text = run_check(str(bad), fmt="human")
    assert rc == 1
    assert "FC103" in text and f"{bad}:12" in text
    assert "actor_rollout_ref.actor.ppo_epochs" in text


def test_script_without_main_ppo_is_a_usage_error(tmp_path, run_check):
    f = tmp_path / "x.sh"
    f.write_text("echo hello\n")
    rc, out = run_check(str(f))
    assert rc == 2
