"""The plan stage's memory estimate: arithmetic on a synthetic config, how settings move it, and its display in
``fsdpcfg check`` (without importing torch)."""

from __future__ import annotations

import copy
import subprocess
import sys

import pytest

from fsdpcfg.check import compose_for_check, resolve
from fsdpcfg.estimate.memory import GIB, describe_for_check, device_memory, estimate_memory
from fsdpcfg.estimate.param_count import UnsupportedArchitecture, count_parameters

LLAMA = {
    "model_type": "llama",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 1000,
    "tie_word_embeddings": False,
}


@pytest.fixture(scope="module")
def cfg():
    composed, findings = compose_for_check(["+recipe=qwen_grpo"])
    assert composed is not None, findings
    return resolve(composed)[0]


def _set(cfg, **kv):
    out = copy.deepcopy(cfg)
    for key, value in kv.items():
        node = out
        *parents, last = key.split("__")
        for p in parents:
            node = node.setdefault(p, {})
        node[last] = value
    return out


def test_llama_counts_by_hand():
    c = count_parameters(LLAMA)
    attn = 64 * 64 + 2 * 64 * 32 + 64 * 64
    mlp = 3 * 64 * 128
    assert c.layers == [attn + mlp + 2 * 64] * 2
    assert c.total == 2 * 1000 * 64 + 2 * (attn + mlp + 128) + 64
    assert c.kv_elements_per_token == 2 * 2 * 32


def test_unknown_architecture_is_named():
    with pytest.raises(UnsupportedArchitecture, match="'gpt2'"):
        count_parameters({**LLAMA, "model_type": "gpt2"})


def test_state_bytes_follow_dtype_and_sharding(cfg):
    est = estimate_memory(cfg, LLAMA)
    P = est.params.total
    assert est.components["actor params"] == P * 4 // 2  # fp32 master, 2 ranks
    assert est.components["optimizer"] == 2 * P * 4 // 2
    assert est.peak_bytes == max(est.phases.values())
    four = _set(cfg, trainer__n_gpus_per_node=4)
    assert estimate_memory(four, LLAMA).components["actor params"] == P * 4 // 4
    hsdp = _set(four, actor_rollout_ref__actor__fsdp_config__fsdp_size=2)
    assert estimate_memory(hsdp, LLAMA).components["optimizer"] == 2 * P * 4 // 2


def test_checkpointing_and_micro_batch_shrink_activations(cfg):
    base = estimate_memory(cfg, LLAMA).components
    ck = estimate_memory(_set(cfg, actor_rollout_ref__model__enable_gradient_checkpointing=True), LLAMA).components
    assert ck["activations"] < base["activations"]
    half = _set(cfg, actor_rollout_ref__actor__ppo_micro_batch_size_per_gpu=2)
    assert estimate_memory(half, LLAMA).components["logits"] * 2 == base["logits"]
    verl = estimate_memory(_set(cfg, fsdpcfg__launcher="verl"), LLAMA).components
    assert verl["logits"] > base["logits"]  # verl scores prompt tokens too


def test_offload_counts_only_on_an_accelerator(cfg):
    gpu = _set(cfg, trainer__device="cuda", fsdpcfg__device_memory_gb=80)
    on = _set(gpu, actor_rollout_ref__actor__fsdp_config__offload_policy=True)
    assert estimate_memory(on, LLAMA).components["optimizer"] == 0
    cpu_on = _set(cfg, actor_rollout_ref__actor__fsdp_config__offload_policy=True)
    assert estimate_memory(cpu_on, LLAMA).components["optimizer"] > 0


def test_reference_model_only_with_kl(cfg):
    assert estimate_memory(cfg, LLAMA).components["reference"] > 0
    no_kl = _set(cfg, actor_rollout_ref__actor__use_kl_loss=False)
    assert estimate_memory(no_kl, LLAMA).components["reference"] == 0


def test_vllm_reservation_and_kv_capacity(cfg):
    v = _set(
        cfg,
        trainer__device="cuda",
        fsdpcfg__launcher="verl",
        fsdpcfg__device_memory_gb=10,
        actor_rollout_ref__rollout__name="vllm",
        actor_rollout_ref__rollout__gpu_memory_utilization=0.5,
        actor_rollout_ref__rollout__tensor_model_parallel_size=1,
        actor_rollout_ref__rollout__dtype="bf16",
    )
    est = estimate_memory(v, LLAMA)
    assert est.components["rollout reservation"] == 5 * GIB
    assert est.device_bytes == 10 * GIB and est.device_source == "fsdpcfg.device_memory_gb"
    assert est.kv["demand_tokens"] == 8 * (256 + 32)  # 4 prompts x n 4 over 2 replicas, prompt + response
    kv_per_token = 2 * 2 * 32 * 2
    assert est.kv["capacity_tokens"] == (5 * GIB - est.params.total * 2) // kv_per_token
    big = _set(v, actor_rollout_ref__rollout__gpu_memory_utilization=0.9, fsdpcfg__device_memory_gb=1)
    e2 = estimate_memory(big, LLAMA)
    assert any("gpu_memory_utilization" in s for s, _ in e2.suggestions)


def test_suggestions_are_ranked_and_lower_the_peak(cfg):
    est = estimate_memory(cfg, LLAMA)
    saved = [s for _, s in est.suggestions]
    assert saved == sorted(saved, reverse=True) and all(s > 0 for s in saved)


def test_cpu_device_is_ram_shared_by_ranks(cfg):
    total, src = device_memory(cfg)
    assert total and "RAM" in src and "/ 2 ranks" in src


def test_describe_without_a_readable_config(cfg):
    assert describe_for_check(_set(cfg, actor_rollout_ref__model__path="/nonexistent/x")).startswith(
        "memory: not estimated"
    )


@pytest.mark.slow  # end to end: a fresh Python process
def test_check_shows_memory_without_importing_torch():
    code = (
        "import sys; from fsdpcfg.cli.main import main\n"
        "rc = main(['check', '+recipe=qwen_grpo'])\n"
        "assert 'torch' not in sys.modules and 'transformers' not in sys.modules, 'heavy import'\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert "memory (per rank, estimate): peak" in p.stdout and "phases:" in p.stdout


@pytest.mark.parametrize("path", ["???", "", None])
def test_read_model_config_without_a_model_path(path):
    """No model path (``???``, empty, null): ``None`` as documented, not an AttributeError on the None that
    ``inspect_model`` returns then (found by mypy)."""
    from fsdpcfg.estimate.memory import read_model_config

    assert read_model_config({"actor_rollout_ref": {"model": {"path": path}}}) is None
