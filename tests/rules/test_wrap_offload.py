"""The FSDP wrap threshold and the manual offload flags: what the native engine runs of them
(fsdpcfg/train/engine/fsdp.py, fsdpcfg/native/support.py) is what check accepts.

FC706 warns that ``wrap_policy.min_num_params`` does nothing under FSDP2 (verl's apply_fsdp2, and the native engine,
wrap by layer class); FC707 refuses it under FSDP1 on a tied-embedding model (size-based units untie the embedding
and the LM head); FC802 refuses ``param_offload``/``optimizer_offload`` under launcher=native (declared NotNative),
one finding per key, FC704 keeping ``offload_policy`` on a CPU run."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from rule_helpers import MODELS, errors, run, warnings

from fsdpcfg.check import check_overrides
from fsdpcfg.rules import traps

A = "actor_rollout_ref"
ACTOR_MIN = f"{A}.actor.fsdp_config.wrap_policy.min_num_params"
GPU_VERL = ["launcher=verl", "rollout=vllm", "trainer=gpu_1x", f"{A}.rollout.tensor_model_parallel_size=1"]
#: a GAE/PPO run with a critic on verl (the critic's FSDP section is critic.fsdp)
PPO = [
    *GPU_VERL,
    "algorithm.adv_estimator=gae",
    f"critic.model.path={MODELS / 'qwen2_5_0_5b_instruct'}",
    "critic.optim.lr=1e-5",
    "critic.ppo_micro_batch_size_per_gpu=4",
]


def _own(findings, rule_id):
    return [f for f in findings if f.rule == rule_id]


# -- FC706: min_num_params under FSDP2 ----------------------------------------------------------------------


@pytest.mark.parametrize("launcher", [[], GPU_VERL])
def test_fc706_min_num_params_under_fsdp2_warns_with_key_value_source_and_fix(launcher):
    w = warnings(run(traps.min_num_params_under_fsdp2, *launcher, "engine=fsdp2", f"{ACTOR_MIN}=1000"))
    assert [(f.rule, f.keys) for f in w] == [("FC706", [ACTOR_MIN, f"{A}.actor.strategy"])]
    msg, fix = w[0].message, w[0].fix
    assert msg.startswith(f"{ACTOR_MIN} = 1000 ") and "fsdp2" in msg and "apply_fsdp2" in msg
    assert f"{A}.actor.strategy=fsdp" in fix and "transformer_layer_cls_to_wrap" in fix and f"{ACTOR_MIN}=0" in fix


def test_fc706_is_silent_under_fsdp_and_at_zero():
    assert not run(traps.min_num_params_under_fsdp2, "engine=fsdp", f"{ACTOR_MIN}=1000")
    assert not run(traps.min_num_params_under_fsdp2, "engine=fsdp2", f"{ACTOR_MIN}=0")
    assert not run(traps.min_num_params_under_fsdp2, "engine=fsdp2")


def test_fc706_covers_the_reference_the_critic_and_sft():
    ref = f"{A}.ref.fsdp_config.wrap_policy.min_num_params"
    w = warnings(run(traps.min_num_params_under_fsdp2, "engine=fsdp2", f"{ref}=1000"))
    assert [f.keys[0] for f in w] == [ref]
    crit = "critic.fsdp.wrap_policy.min_num_params"
    w = [f for f in check_overrides(["+recipe=qwen_grpo", *PPO, "engine=fsdp2", f"{crit}=1000"]) if f.rule == "FC706"]
    assert [(f.keys, f.severity) for f in w] == [([crit, "critic.strategy"], "warning")]
    sft = check_overrides(["+recipe=qwen_sft", "engine=fsdp2", "engine.wrap_policy.min_num_params=1000"])
    assert [(f.rule, f.keys) for f in sft if f.severity != "info"] == [
        ("FC706", ["engine.wrap_policy.min_num_params", "engine.strategy"])
    ]
    assert not _own(check_overrides(["+recipe=qwen_sft", "engine=fsdp2"]), "FC706")


# -- FC707: min_num_params under FSDP1 on a tied model -------------------------------------------------------


def test_fc707_fsdp1_size_units_on_a_tied_model_are_an_error_on_both_launchers():
    # tiny-qwen2 ties its 151936 x 64 = 9,723,904-parameter embedding to the LM head
    for launcher in ([], GPU_VERL):
        e = errors(run(traps.min_num_params_unties_embeddings, *launcher, "engine=fsdp", f"{ACTOR_MIN}=1000"))
        assert [(f.rule, f.keys) for f in e] == [("FC707", [ACTOR_MIN, f"{A}.actor.strategy", f"{A}.model.path"])]
        assert e[0].message.startswith(f"{ACTOR_MIN} = 1000 ") and "tie_word_embeddings" in e[0].message
        assert "embedding and the LM head each a unit" in e[0].message and f"{ACTOR_MIN}=0" in e[0].fix
        assert "9,723,904" in e[0].derivation
    # above every layer, within the model: the model body (embedding included) is one unit apart from the head
    e = errors(run(traps.min_num_params_unties_embeddings, "engine=fsdp", f"{ACTOR_MIN}=9798208"))
    assert e and "model body" in e[0].message
    assert not run(traps.min_num_params_unties_embeddings, "engine=fsdp", f"{ACTOR_MIN}=9798209")  # the root only


def test_fc707_is_silent_without_a_tie_under_fsdp2_at_zero_and_for_the_frozen_reference(shared_models):
    untied = f"{A}.model.path={shared_models / 'meta-llama__Llama-2-7b-hf'}"
    assert not run(traps.min_num_params_unties_embeddings, "engine=fsdp", untied, f"{ACTOR_MIN}=1000000")
    assert not run(traps.min_num_params_unties_embeddings, "engine=fsdp2", f"{ACTOR_MIN}=1000")
    assert not run(traps.min_num_params_unties_embeddings, "engine=fsdp", f"{ACTOR_MIN}=0")
    ref = f"{A}.ref.fsdp_config.wrap_policy.min_num_params"
    assert not run(traps.min_num_params_unties_embeddings, "engine=fsdp", f"{ref}=1000")


def test_fc707_sft():
    f = check_overrides(["+recipe=qwen_sft", "engine=fsdp", "engine.wrap_policy.min_num_params=1000"])
    assert [(x.rule, x.keys[0]) for x in errors(f)] == [("FC707", "engine.wrap_policy.min_num_params")]


def test_tied_embedding_split_follows_torchs_size_policy():
    """At most the embedding: it is a unit; above every layer and at most the model: the body is one; above the
    model: the root only; in between the embedding and the largest layer the layers' structure decides."""
    counts = SimpleNamespace(embedding=100, largest_layer=1000, total=5000)
    assert [traps.tied_embedding_split(n, counts) for n in (1, 100, 101, 1000, 1001, 5000, 5001)] == [
        True, True, None, None, True, True, False,
    ]  # fmt: skip


# -- FC802 / FC704 / FC703: the manual offload flags ---------------------------------------------------------


@pytest.mark.parametrize(
    "role,flag", [("actor", "param_offload"), ("actor", "optimizer_offload"), ("ref", "param_offload")]
)
def test_native_cuda_refuses_the_manual_offload_flags_with_fc802(role, flag):
    key = f"{A}.{role}.fsdp_config.{flag}"
    found = check_overrides(["+recipe=qwen_grpo", "trainer.device=cuda", f"{key}=true"])
    e = errors(found)
    assert [(f.rule, f.keys) for f in e] == [("FC802", [key, "fsdpcfg.launcher"])]
    assert e[0].message.startswith(f"{key}=True is not implemented by the native launcher")
    assert "launcher=verl" in e[0].fix and f"{key}=false" in e[0].fix
    # FC703's warning (case c16: the flags would not lower the update's peak under verl's FSDP2 either) stays
    assert [f.severity for f in _own(found, "FC703")] == ["warning"]


def test_native_cpu_gives_one_error_per_offload_key():
    key = f"{A}.actor.fsdp_config.param_offload"
    e = errors(check_overrides(["+recipe=qwen_grpo", f"{key}=true"]))
    assert [(f.rule, f.keys[0]) for f in e] == [("FC802", key)]
    pol = f"{A}.actor.fsdp_config.offload_policy"
    e = errors(check_overrides(["+recipe=qwen_grpo", f"{key}=true", f"{pol}=true"]))
    assert sorted((f.rule, f.keys[0]) for f in e) == [("FC704", pol), ("FC802", key)]


def test_verl_still_runs_the_manual_offload_flags():
    key = f"{A}.actor.fsdp_config.param_offload"
    found = check_overrides(["+recipe=qwen_grpo", *GPU_VERL, "engine=fsdp", f"{key}=true"])
    assert not errors(found) and not _own(found, "FC802")
    found = check_overrides(["+recipe=qwen_grpo", *GPU_VERL, "engine=fsdp2", f"{key}=true"])
    assert not errors(found) and [f.keys[0] for f in _own(found, "FC703")] == [key]


# -- FC704: offload_policy under the native engine ------------------------------------------------------------


def test_fc704_native_offload_policy_needs_fsdp2_on_an_accelerator():
    pol = f"{A}.actor.fsdp_config.offload_policy"
    e = errors(check_overrides(["+recipe=qwen_grpo", "trainer.device=cuda", "engine=fsdp", f"{pol}=true"]))
    assert [(f.rule, f.keys) for f in e] == [("FC704", [pol, f"{A}.actor.strategy"])]
    assert "under actor_rollout_ref.actor.strategy = fsdp" in e[0].message and "strategy=fsdp2" in e[0].fix
    assert not errors(check_overrides(["+recipe=qwen_grpo", "trainer.device=cuda", "engine=fsdp2", f"{pol}=true"]))
    e = errors(check_overrides(["+recipe=qwen_grpo", f"{pol}=true"]))  # CPU: one finding, the CPU one
    assert [(f.rule, f.keys) for f in e] == [("FC704", [pol, "trainer.device"])]
    # verl ignores offload_policy under fsdp; FC704 is the native engine's
    assert not _own(check_overrides(["+recipe=qwen_grpo", *GPU_VERL, "engine=fsdp", f"{pol}=true"]), "FC704")


def test_fc704_and_fc802_sft():
    sft = ["+recipe=qwen_sft"]
    e = errors(check_overrides([*sft, "engine.offload_policy=true"]))
    assert [(f.rule, f.keys) for f in e] == [("FC704", ["engine.offload_policy", "trainer.device"])]
    e = errors(check_overrides([*sft, "trainer=gpu_1x", "engine=fsdp", "engine.offload_policy=true"]))
    assert [(f.rule, f.keys) for f in e] == [("FC704", ["engine.offload_policy", "engine.strategy"])]
    assert not errors(check_overrides([*sft, "trainer=gpu_1x", "engine=fsdp2", "engine.offload_policy=true"]))
    for gpu in ([], ["trainer=gpu_1x"]):
        e = errors(check_overrides([*sft, *gpu, "engine.param_offload=true", "engine.optimizer_offload=true"]))
        assert [(f.rule, f.keys) for f in e] == [
            ("FC802", ["engine.param_offload", "fsdpcfg.launcher"]),
            ("FC802", ["engine.optimizer_offload", "fsdpcfg.launcher"]),
        ]  # declared in fsdpcfg/native/support.py (SFT_FEATURES)
        assert e[0].message.startswith("engine.param_offload=True is not implemented by the native launcher")
        assert "launcher=verl" in e[0].fix and "engine.param_offload=false" in e[0].fix
    verl = [*sft, "launcher=verl", "data.use_dynamic_bsz=true", "engine.param_offload=true"]
    assert not _own(check_overrides(verl), "FC802")
