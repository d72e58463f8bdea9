"""Every case of ../shared/cases/ gives its verdict through ``check_overrides`` (what ``fsdpcfg check
--format json`` runs), plus more cases of the same kinds (another role, the critic, another model).

Verdicts (../shared/cases/README.md): error -> an error naming one of ``expect.keys``; warn -> a warning
naming one; ok -> no error at all.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from fsdpcfg.check import check_overrides

REPO = Path(__file__).resolve().parents[2]
CASES = REPO.parent / "shared" / "cases"
MODELS = REPO.parent / "shared" / "data" / "model_configs"


def _load_cases() -> list[dict]:
    if not CASES.is_dir():
        return []
    return [yaml.safe_load(p.read_text()) | {"file": p.name} for p in sorted(CASES.glob("c*.yaml"))]


def _overrides(case: dict) -> list[str]:
    ov = [f"+recipe={case['base']}", *case.get("overrides", [])]
    if case.get("model"):
        ov.append(f"actor_rollout_ref.model.path={MODELS / case['model']}")
    return ov


def assert_verdict(findings, verdict: str, keys: list[str]) -> None:
    shown = [(f.rule, f.severity, f.keys, f.message) for f in findings]
    if verdict == "ok":
        assert not [f for f in findings if f.severity == "error"], shown
        return
    sev = {"error": "error", "warn": "warning"}[verdict]
    assert any(f.severity == sev and set(keys) & set(f.keys) for f in findings), shown


@pytest.mark.parametrize("case", _load_cases(), ids=lambda c: c["file"])
def test_shared_case(case: dict) -> None:
    exp = case["expect"]
    assert_verdict(check_overrides(_overrides(case)), exp["verdict"], exp.get("keys", []))


# More cases of the same kinds: (overrides on +recipe=qwen_grpo, model folder or None, verdict, keys).
A = "actor_rollout_ref"
GPU8 = ["launcher=verl", "rollout=vllm", "trainer=gpu_8x"]
VARIANTS = {
    "c01-n-not-dividing-8-gpus": (
        GPU8 + ["data.train_batch_size=3", f"{A}.rollout.n=2"],
        None,
        "error",
        ["data.train_batch_size"],
    ),
    "c02-critic-mini-larger": (
        GPU8
        + [
            "algorithm.adv_estimator=gae",
            "data.train_batch_size=64",
            "+critic.ppo_mini_batch_size=128",
            "+critic.ppo_micro_batch_size_per_gpu=2",
            f"{A}.actor.ppo_mini_batch_size=64",
        ],
        None,
        "error",
        ["critic.ppo_mini_batch_size"],
    ),
    "c03-ref-micro-larger-than-per-rank": (
        GPU8
        + [
            "data.train_batch_size=16",
            f"{A}.rollout.n=1",
            "algorithm.adv_estimator=reinforce_plus_plus",
            f"{A}.actor.ppo_mini_batch_size=16",
            f"{A}.actor.ppo_micro_batch_size_per_gpu=2",
            f"{A}.rollout.log_prob_micro_batch_size_per_gpu=2",
            f"{A}.ref.log_prob_micro_batch_size_per_gpu=4",
        ],
        None,
        "error",
        [f"{A}.ref.log_prob_micro_batch_size_per_gpu"],
    ),
    "c04-critic-normalised-mini-zero": (
        GPU8
        + [
            "algorithm.adv_estimator=gae",
            "data.train_batch_size=8",
            f"{A}.rollout.n=1",
            "+critic.ppo_mini_batch_size=2",
            "+critic.ppo_micro_batch_size_per_gpu=1",
            f"{A}.actor.ppo_mini_batch_size=8",
            f"{A}.actor.ppo_micro_batch_size_per_gpu=1",
            f"{A}.rollout.log_prob_micro_batch_size_per_gpu=1",
            f"{A}.ref.log_prob_micro_batch_size_per_gpu=1",
        ],
        None,
        "error",
        ["critic.ppo_mini_batch_size"],
    ),
    "c05-ref-both-forms": (
        GPU8 + [f"{A}.ref.log_prob_micro_batch_size=16"],
        None,
        "error",
        [f"{A}.ref.log_prob_micro_batch_size"],
    ),
    "c05-rollout-both-forms": (
        GPU8 + [f"{A}.rollout.log_prob_micro_batch_size=16"],
        None,
        "error",
        [f"{A}.rollout.log_prob_micro_batch_size"],
    ),
    "c06-tp4-on-2-gpus": (
        [
            "launcher=verl",
            "rollout=sglang",
            "trainer=gpu_1x",
            "trainer.n_gpus_per_node=2",
            f"{A}.rollout.tensor_model_parallel_size=4",
        ],
        None,
        "error",
        [f"{A}.rollout.tensor_model_parallel_size"],
    ),
    "c07-ulysses-qwen3-kv": (
        GPU8 + [f"{A}.actor.ulysses_sequence_parallel_size=16", "trainer.nnodes=2"],
        "Qwen__Qwen3-8B__resaved",
        "ok_or_error_not_heads",
        [],
    ),
    "c08-ulysses-via-fsdp-config": (
        GPU8 + [f"{A}.model.use_remove_padding=false", f"+{A}.actor.fsdp_config.ulysses_sequence_parallel_size=2"],
        None,
        "error",
        [f"{A}.model.use_remove_padding"],
    ),
    "c10-mistral-context": (
        ["data.max_prompt_length=16384", "data.max_response_length=20000"],
        "mistralai__Mistral-7B-Instruct-v0.3",
        "error",
        ["data.max_prompt_length"],
    ),
    "c13-mixtral-base-no-template": ([], "mistralai__Mixtral-8x7B-v0.1", "error", [f"{A}.model.custom_chat_template"]),
    "c13-custom-template-given": (
        # the case is the template; a real 7B model on the CPU trainer is past the memory gate (FC450), which
        # is switched to a warning here
        [f"{A}.model.custom_chat_template='{{{{ messages }}}}'", "fsdpcfg.memory_margin=null"],
        "meta-llama__Llama-2-7b-hf",
        "ok",
        [],
    ),
    "c14-mistral-no-pad": ([], "mistralai__Mistral-7B-Instruct-v0.2", "warn", [f"{A}.model.path"]),
    "c15-wrap-class-llama": (
        [f"+{A}.actor.fsdp_config.wrap_policy.transformer_layer_cls_to_wrap=[Qwen2DecoderLayer]"],
        "meta-llama__Llama-3.2-3B-Instruct",
        "error",
        [f"{A}.actor.fsdp_config.wrap_policy.transformer_layer_cls_to_wrap"],
    ),
    "c17-vllm-legacy-format": (
        GPU8 + [f"{A}.rollout.load_format=dummy_dtensor"],
        None,
        "error",
        [f"{A}.rollout.load_format"],
    ),
    "c18-rloo-one-sample": (["algorithm.adv_estimator=rloo", f"{A}.rollout.n=1"], None, "error", [f"{A}.rollout.n"]),
    "c22-ref-budget": (
        GPU8
        + [
            f"{A}.actor.use_dynamic_bsz=true",
            f"{A}.ref.log_prob_max_token_len_per_gpu=512",
            "data.max_prompt_length=512",
            "data.max_response_length=512",
        ],
        None,
        "error",
        [f"{A}.ref.log_prob_max_token_len_per_gpu"],
    ),
    "c24-legacy-reward-model": (GPU8 + ["+reward_model.enable=true"], None, "error", ["reward_model.enable"]),
    "c26-valid-gpu-1x": (
        ["trainer=gpu_1x", "launcher=verl", "rollout=vllm", f"{A}.rollout.tensor_model_parallel_size=1"],
        None,
        "ok",
        [],
    ),
    "plain-recipe": ([], None, "ok", []),
}


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_variant(name: str) -> None:
    ov, model, verdict, keys = VARIANTS[name]
    ov = ["+recipe=qwen_grpo", *ov] + ([f"actor_rollout_ref.model.path={MODELS / model}"] if model else [])
    if model and not (MODELS / model).is_dir():
        pytest.skip(f"{model} is not in ../shared/data/model_configs")
    findings = check_overrides(ov)
    if model:  # the stand-ins are config.json and tokenizer files only, by design: no weights to load (FC421)
        findings = [f for f in findings if f.rule != "FC421"]
    if verdict == "ok_or_error_not_heads":
        # Qwen3-8B: 32 heads, 8 KV heads; sp=16 divides 32 and 16 % 8 == 0 (KV heads repeated): no head error.
        assert not [f for f in findings if f.rule == "FC304"], findings
        return
    assert_verdict(findings, verdict, keys)


@pytest.mark.slow  # end to end: a fresh Python process
def test_cli_json_exit_codes() -> None:
    """The CLI gives exit 1 and the JSON shape for an error case, exit 0 for the plain recipe."""
    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "fsdpcfg",
            "check",
            "--format",
            "json",
            "+recipe=qwen_grpo",
            "actor_rollout_ref.rollout.n=1",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert bad.returncode == 1, bad.stderr
    doc = json.loads(bad.stdout)
    assert any(f["rule"] == "FC601" and "actor_rollout_ref.rollout.n" in f["keys"] for f in doc["findings"])
    assert set(doc["findings"][0]) == {"rule", "severity", "keys", "message", "fix", "file", "line", "input"}
    good = subprocess.run(
        [sys.executable, "-m", "fsdpcfg", "check", "+recipe=qwen_grpo"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert good.returncode == 0, good.stdout + good.stderr
