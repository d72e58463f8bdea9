"""``fsdpcfg check --fix`` / ``--diff`` (fsdpcfg.check.fix): rewrites with one right answer, in place, atomically."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fsdpcfg.check.fix import fix_script, fix_yaml
from fsdpcfg.check.sources import check_run_script

REPO = Path(__file__).resolve().parents[2]

DAPO = """#!/usr/bin/env bash
set -euo pipefail
max_response_length=2048
kw=reward_model.reward_kwargs
python3 -m verl.trainer.main_ppo \\
    algorithm.adv_estimator=grpo \\
    data.train_batch_size=64 \\
    data.max_response_length=${max_response_length} \\
    actor_rollout_ref.model.path=Qwen/Qwen2.5-0.5B-Instruct \\
    actor_rollout_ref.actor.ppo_mini_batch_size=16 \\
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2 \\
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=2 \\
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=2 \\
    actor_rollout_ref.rollout.name=vllm \\
    actor_rollout_ref.rollout.n=4 \\
    actor_rollout_ref.rollout.tensor_model_parallel_size=1 \\
    reward_model.reward_manager=dapo \\
    "+reward_model.reward_kwargs.overlong_buffer_cfg.enable=True" \\
    +reward_model.reward_kwargs.overlong_buffer_cfg.len=512 \\
    ++reward_model.reward_kwargs.max_resp_len=${max_response_length} \\
    +$kw.overlong_buffer_cfg.log=False \\
    trainer.n_gpus_per_node=8 trainer.nnodes=1 "$@"  # the end
"""


def test_script_override_words_are_edited_in_place():
    fix = fix_script(DAPO)
    changed = [(a, b) for a, b in zip(DAPO.splitlines(), fix.new.splitlines(), strict=True) if a != b]
    assert changed == [
        ("    reward_model.reward_manager=dapo \\", "    reward.reward_manager.name=dapo \\"),
        (
            '    "+reward_model.reward_kwargs.overlong_buffer_cfg.enable=True" \\',
            '    "+reward.reward_kwargs.overlong_buffer_cfg.enable=True" \\',
        ),
        (
            "    +reward_model.reward_kwargs.overlong_buffer_cfg.len=512 \\",
            "    +reward.reward_kwargs.overlong_buffer_cfg.len=512 \\",
        ),
        (
            "    ++reward_model.reward_kwargs.max_resp_len=${max_response_length} \\",
            "    ++reward.reward_kwargs.max_resp_len=${max_response_length} \\",
        ),
    ]
    # the key built from a variable has no literal text to edit: left to the user, and said so
    assert [x for x in fix.left if "overlong_buffer_cfg.log" in x and "variable" in x]
    assert fix_script(fix.new).new == fix.new  # idempotent


def test_a_target_already_set_is_not_one_right_answer():
    text = DAPO.replace("algorithm.adv_estimator=grpo", "reward.reward_manager.name=naive")
    fix = fix_script(text)
    assert "reward_model.reward_manager=dapo" in fix.new
    assert any("reward.reward_manager.name is also set" in x for x in fix.left)


def test_the_fixed_script_checks_clean(tmp_path):
    p = tmp_path / "run.sh"
    p.write_text(fix_script(DAPO.replace("+$kw.overlong_buffer_cfg.log=False", "")).new)
    findings = [f for c in check_run_script(p) for f in c.findings]
    assert not [f for f in findings if f.severity != "info"], [
        (f.rule, f.message) for f in findings if f.severity != "info"
    ]


RECIPE = """# my DAPO recipe
defaults:
  - qwen_grpo
  - _self_

# reward settings, as in verl 0.4
reward_model:
  reward_manager: dapo   # the DAPO manager
  reward_kwargs:
    max_resp_len: 2048

custom_reward_function:
  path: ./my_reward.py  # my scorer

reward:
  num_workers: 4

trainer:
  total_epochs: 2  # keep
"""


def test_yaml_lines_are_edited_not_redumped():
    fix = fix_yaml(RECIPE)
    assert fix.new == (
        "# my DAPO recipe\n"
        "defaults:\n"
        "  - qwen_grpo\n"
        "  - _self_\n"
        "\n"
        "# reward settings, as in verl 0.4\n"
        "\n"
        "reward:\n"
        "  num_workers: 4\n"
        "  reward_manager:\n"
        "    name: dapo   # the DAPO manager\n"
        "  reward_kwargs:\n"
        "    max_resp_len: 2048\n"
        "  custom_reward_function:\n"
        "    path: ./my_reward.py  # my scorer\n"
        "\n"
        "trainer:\n"
        "  total_epochs: 2  # keep\n"
    )
    assert fix_yaml(fix.new).new == fix.new
    assert fix.applied == [
        "config.yaml:8 reward_model.reward_manager -> reward.reward_manager.name",
        "config.yaml:10 reward_model.reward_kwargs.max_resp_len -> reward.reward_kwargs.max_resp_len",
        "config.yaml:13 custom_reward_function.path -> reward.custom_reward_function.path",
    ]


def test_yaml_flow_style_and_homeless_keys_are_left():
    text = "reward_model: {reward_manager: dapo}\ntrainer:\n  total_epochs: 1\n"
    assert fix_yaml(text).new == text
    text = "reward_model:\n  micro_batch_size_per_gpu: 4\n"
    fix = fix_yaml(text)
    assert fix.new == text and "reward-model worker" in fix.left[0]


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "fsdpcfg", "check", *args], capture_output=True, text=True, env=env)


@pytest.mark.slow  # end to end: a fresh Python process
def test_cli_diff_then_fix(tmp_path):
    p = tmp_path / "run.sh"
    p.write_text(DAPO)
    p.chmod(0o755)
    r = _cli("--diff", str(p))
    assert r.returncode == 1 and "-    reward_model.reward_manager=dapo \\" in r.stdout
    assert "+    reward.reward_manager.name=dapo \\" in r.stdout and p.read_text() == DAPO
    r = _cli("--fix", "--no-plan", str(p))
    report = r.stdout.split("\n\n", 1)[1]
    assert r.stdout.count("FIXED ") == 4 and report.count("  FC701 ") == 1  # left: the key built from $kw
    assert "  FC701 " + str(p) + ":21 reward_model.reward_kwargs.overlong_buffer_cfg.log" in report
    assert p.read_text() == fix_script(DAPO).new and p.stat().st_mode & 0o777 == 0o755
    assert _cli("--diff", str(p)).returncode == 0  # nothing left with one right answer


def test_cli_fix_needs_a_file():
    r = _cli("--fix", "+recipe=qwen_grpo")
    assert r.returncode == 2 and "--fix and --diff rewrite files" in r.stderr + r.stdout


def test_a_failed_write_leaves_the_original(tmp_path, monkeypatch):
    p = tmp_path / "run.sh"
    p.write_text(DAPO)
    fix = fix_script(DAPO, p)

    def boom(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        fix.write()
    assert p.read_text() == DAPO and [x.name for x in tmp_path.iterdir()] == ["run.sh"]


SFT = """#!/bin/bash
torchrun --standalone --nnodes=1 --nproc_per_node=8 \\
     -m verl.trainer.fsdp_sft_trainer \\
    data.train_files=/data/train.parquet \\
    data.multiturn.messages_key=messages \\
    optim.lr=1e-4 \\
    data.micro_batch_size_per_gpu=4 \\
    model.partial_pretrain=Qwen/Qwen2.5-0.5B-Instruct \\
    trainer.total_epochs=1 \\
    ulysses_sequence_parallel_size=2 \\
    use_remove_padding=true
"""


def test_removed_sft_trainer_is_fc708_with_its_keys_mapped(tmp_path):
    p = tmp_path / "sft.sh"
    p.write_text(SFT)
    (c,) = check_run_script(p)
    (f,) = [f for f in c.findings if f.rule == "FC708"]
    assert f.severity == "error" and "torchrun ... -m verl.trainer.sft_trainer" in f.fix
    assert "model.partial_pretrain -> model.path" in f.message
    assert "ulysses_sequence_parallel_size -> engine.ulysses_sequence_parallel_size" in f.message
    p.write_text(fix_script(SFT).new)
    assert "-m verl.trainer.sft_trainer \\" in p.read_text()
    findings = [f for c in check_run_script(p) for f in c.findings]
    assert not [f for f in findings if f.severity == "error"], [(f.rule, f.message) for f in findings]


def test_removed_sft_trainer_with_a_key_of_no_home_is_not_rewritten():
    text = SFT.replace("data.multiturn.messages_key=messages", "data.prompt_key=extra_info")
    fix = fix_script(text)
    assert fix.new == text and any("data.prompt_key" in x for x in fix.left)


def test_main_ppo_sync_is_fc708_and_checked_as_main_ppo(tmp_path):
    p = tmp_path / "sync.sh"
    p.write_text(
        DAPO.replace("verl.trainer.main_ppo ", "verl.trainer.main_ppo_sync ").replace("rollout.n=4", "rollout.n=1")
    )
    (c,) = check_run_script(p)
    rules = {f.rule for f in c.findings}
    assert "FC708" in rules and "FC701" in rules and "FC601" in rules  # the PPO rules ran (n=1 with GRPO)
    assert "-m verl.trainer.main_ppo \\" in fix_script(p.read_text()).new


def test_fix_keeps_a_crlf_scripts_line_ends(tmp_path):
    # issue 20: --fix read the script with Python's universal newlines and wrote every line back with LF
    from fsdpcfg.check.fix import fix_file

    p = tmp_path / "run.sh"
    p.write_bytes(DAPO.replace("\n", "\r\n").encode())
    fix = fix_file(p)
    assert fix.old == DAPO.replace("\n", "\r\n")
    assert fix.new == fix_script(DAPO).new.replace("\n", "\r\n")  # the same rewrite, each line's CRLF kept
    assert fix.new.count("\r\n") == DAPO.count("\n") and "\n" not in fix.new.replace("\r\n", "")
    changed = [
        line for line in fix.diff().splitlines() if line.startswith(("-", "+")) and line[:3] not in ("---", "+++")
    ]
    assert len(changed) == 8  # the four rewritten lines, nothing else
    fix.write()
    assert p.read_bytes() == fix.new.encode()
    # a file with mixed line ends keeps each line's own
    mixed = DAPO.replace("set -euo pipefail\n", "set -euo pipefail\r\n")
    p.write_bytes(mixed.encode())
    assert fix_file(p).new == fix_script(DAPO).new.replace("set -euo pipefail\n", "set -euo pipefail\r\n")


def test_a_crlf_script_is_an_error_naming_the_file_and_dos2unix(tmp_path):
    p = tmp_path / "run.sh"
    p.write_bytes(DAPO.replace("\n", "\r\n").encode())
    results = check_run_script(p, environ={"HOME": "/home/user"})
    for r in results:  # every command of the script carries it, first
        f = r.findings[0]
        assert (f.rule, f.severity, f.location) == ("FC133", "error", (str(p), 1))
        assert "Windows line ends (CRLF) on 22 line(s)" in f.message
        assert "none of the 17 `\\` line continuations continues its command" in f.message
        assert f.fix == f"convert the line ends: dos2unix {p} (or sed -i 's/\\r$//' {p})"
    # read as meant: the rest of the script is still checked (the same findings as its LF copy, but FC133)
    q = tmp_path / "lf.sh"
    q.write_text(DAPO)
    lf = check_run_script(q, environ={"HOME": "/home/user"})
    assert [sorted(f.rule for f in r.findings) for r in lf] == [
        sorted(f.rule for f in r.findings if f.rule != "FC133") for r in results
    ]
