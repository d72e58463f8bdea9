"""The critic (GAE/PPO) and verl's non-FSDP engines (issue 12.2): every role-rule runs for the critic, a
Megatron engine gets FC111 and the engine-independent rules only, and the native launcher refuses both."""

from __future__ import annotations

import pytest
from rule_helpers import MODELS

from fsdpcfg.check import check_overrides as check

QWEN = str(MODELS / "qwen2_5_0_5b_instruct")
#: a GAE/PPO run with a critic on verl: 4 prompts x n=4 over 2 ranks
PPO = [
    "+recipe=qwen_grpo",
    "launcher=verl",
    "rollout=vllm",
    "algorithm.adv_estimator=gae",
    f"critic.model.path={QWEN}",
    "critic.optim.lr=1e-5",
    "critic.ppo_micro_batch_size_per_gpu=4",
]
#: rules that read FSDP sections only (fsdp_sections): none may fire for a Megatron role
FSDP_RULES = {"FC301", "FC364", "FC405", "FC703", "FC704", "FC110"}


def _errors(findings):
    return [f for f in findings if f.severity == "error"]


def test_gae_ppo_with_a_critic_passes_on_verl():
    findings = check(PPO)
    assert not _errors(findings), [f"{f.rule} {f.message}" for f in _errors(findings)]
    assert not [f for f in findings if f.rule in ("FC105", "FC101", "FC102")]


def test_critic_micro_batch_larger_than_its_per_rank_mini_batch_fails_naming_the_critic_key():
    # critic.ppo_mini_batch_size follows the actor's (4) through verl's ${oc.select:...}: 4 x n=4 / 2 ranks = 8
    findings = check(PPO + ["critic.ppo_micro_batch_size_per_gpu=16", "critic.forward_micro_batch_size_per_gpu=4"])
    errs = _errors(findings)
    assert [(f.rule, f.keys[0]) for f in errs] == [("FC205", "critic.ppo_micro_batch_size_per_gpu")]
    msg = errs[0].message
    assert msg.startswith(
        "critic update: per-rank mini batch (critic.ppo_mini_batch_size = 4 x n = 4 / 2 ranks) "
        "= 8 sequences is smaller than critic.ppo_micro_batch_size_per_gpu = 16"
    )
    assert "critic.ppo_micro_batch_size_per_gpu=8" in errs[0].fix


def test_the_critics_own_mini_batch_is_normalised_by_n_and_the_data_parallel_ranks():
    # critic.ppo_mini_batch_size=2 -> 2 x n=4 / (8 ranks / ulysses 2 = 4 dp ranks) = 2 sequences per rank
    findings = check(
        PPO
        + [
            "trainer.n_gpus_per_node=8",
            "data.train_batch_size=8",
            "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=1",
            "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=1",
            "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=1",
            "critic.ppo_mini_batch_size=2",
            "critic.ulysses_sequence_parallel_size=2",
            "critic.model.use_remove_padding=true",
            "critic.ppo_micro_batch_size_per_gpu=3",
            "critic.forward_micro_batch_size_per_gpu=1",
        ]
    )
    errs = [f for f in _errors(findings) if f.keys[0].startswith("critic.")]
    assert [(f.rule, f.keys[0]) for f in errs] == [("FC205", "critic.ppo_micro_batch_size_per_gpu")]
    assert "(critic.ppo_mini_batch_size = 2 x n = 4 / 4 ranks) = 2 sequences" in errs[0].message


def test_critic_without_a_micro_batch_is_fc203_naming_the_critic_keys():
    findings = check(PPO[:-1])
    f = next(f for f in _errors(findings) if f.rule == "FC203")
    assert f.keys[0] == "critic.ppo_micro_batch_size_per_gpu" and "critic update" in f.message


def test_fsdp_rules_run_for_the_critic():
    findings = check(PPO + ["trainer.n_gpus_per_node=8", "data.train_batch_size=8", "critic.fsdp.fsdp_size=3"])
    assert [f.keys[0] for f in findings if f.rule == "FC301"] == ["critic.fsdp.fsdp_size"]
    findings = check(PPO + ["engine=fsdp", "critic.fsdp.fsdp_size=1"])
    assert [f.keys for f in findings if f.rule == "FC364"] == [["critic.fsdp.fsdp_size", "critic.strategy"]]


def test_engine_sets_the_critics_strategy():
    findings = check(PPO + ["engine=fsdp2", "critic.fsdp.param_offload=true"])
    # FSDP2 has no param_offload (verl reads offload_policy): the trap rule runs on the critic's section
    assert "critic.fsdp.param_offload" in [f.keys[0] for f in findings if f.rule == "FC703"]


def test_megatron_engine_gets_fc111_and_no_fsdp_rule():
    findings = check(PPO + ["engine=megatron"])
    infos = [f for f in findings if f.rule == "FC111"]
    assert len(infos) == 1 and infos[0].severity == "info"
    assert infos[0].message.startswith(
        "fsdpcfg checks FSDP engines; engine-independent rules ran (actor: megatron, ref: megatron, critic: megatron)"
    )
    assert not _errors(findings) and not [f for f in findings if f.rule in FSDP_RULES]


def test_megatron_engine_still_runs_the_engine_independent_rules():
    findings = check(PPO + ["engine=megatron", "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=16"])
    assert [(f.rule, f.keys[0]) for f in _errors(findings)] == [
        ("FC201", "data.train_batch_size"),
        ("FC205", "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu"),
    ]
    # verl 0.9.1's validate_config: real_train_batch_size (16) must be divisible by megatron_dp (2) x 16
    fc201 = next(f for f in findings if f.rule == "FC201")
    assert "16 sequences cannot be split evenly over 2 data-parallel ranks" in fc201.message
    assert "x actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu = 16 (32 sequences)" in fc201.message


@pytest.mark.parametrize(
    "tp, pp, cp, dp",
    [(1, 1, 1, 16), (4, 1, 1, 4), (2, 2, 1, 4), (2, 2, 2, 2), (8, 2, 1, 1)],
)
def test_megatron_data_parallel_size_is_the_world_over_tp_pp_cp(tp, pp, cp, dp):
    from fsdpcfg.rules._common import data_parallel
    from fsdpcfg.rules.context import Context

    M = "actor_rollout_ref.actor.megatron"
    cfg = {
        "trainer": {"nnodes": 2, "n_gpus_per_node": 8},
        "actor_rollout_ref": {
            "actor": {
                "strategy": "megatron",
                "megatron": {
                    "tensor_model_parallel_size": tp,
                    "pipeline_model_parallel_size": pp,
                    "context_parallel_size": cp,
                },
            }
        },
    }
    got = data_parallel(Context(None, cfg), "actor_rollout_ref.actor")  # type: ignore[arg-type]
    assert got is not None and got.size == dp
    assert got.keys == (
        "trainer.n_gpus_per_node",
        "trainer.nnodes",
        f"{M}.tensor_model_parallel_size",
        f"{M}.pipeline_model_parallel_size",
        f"{M}.context_parallel_size",
    )
    cfg["actor_rollout_ref"]["actor"]["megatron"]["tensor_model_parallel_size"] = 3  # 16 % 3: verl asserts
    assert data_parallel(Context(None, cfg), "actor_rollout_ref.actor") is None  # type: ignore[arg-type]
    cfg["actor_rollout_ref"]["actor"]["strategy"] = "torchtitan"  # a layout fsdpcfg does not model: no guess
    assert data_parallel(Context(None, cfg), "actor_rollout_ref.actor") is None  # type: ignore[arg-type]


def test_megatron_engine_reports_an_fsdp_key_the_user_set():
    findings = check(PPO + ["engine=megatron", "actor_rollout_ref.actor.fsdp_config.param_offload=true"])
    got = [(f.rule, f.keys[0]) for f in _errors(findings)]
    assert got == [("FC113", "actor_rollout_ref.actor.fsdp_config.param_offload")]
    assert "ppo_megatron_trainer" in _errors(findings)[0].message


@pytest.mark.parametrize("engine", ["veomni", "torchtitan"])
def test_other_engines_are_verls_compositions(engine):
    findings = check(["+recipe=qwen_grpo", "launcher=verl", "rollout=vllm", f"engine={engine}"])
    assert [f.rule for f in findings if f.severity != "info" or f.rule == "FC111"] == ["FC111"]


def test_fsdp_turbo_keeps_verls_fsdp_config_and_is_not_a_bad_strategy():
    # verl 0.9.1's FSDPEngineConfig takes strategy fsdp, fsdp2 or fsdp_turbo; the role's fsdp_config follows it
    on_verl = ["+recipe=qwen_grpo", "launcher=verl", "rollout=vllm"]
    for strategy in ("actor_rollout_ref.actor.strategy", "actor_rollout_ref.actor.fsdp_config.strategy"):
        findings = check([*on_verl, f"{strategy}=fsdp_turbo"])
        assert not _errors(findings), [f"{f.rule} {f.message}" for f in _errors(findings)]
    assert [f.rule for f in check([*on_verl, "actor_rollout_ref.actor.strategy=fsdp_turbo"]) if f.rule == "FC111"]
    # a name FSDPEngineConfig refuses is still FC103, and the native launcher shards with fsdp/fsdp2 only
    typo = _errors(check([*on_verl, "actor_rollout_ref.actor.fsdp_config.strategy=fsdp_turb0"]))
    assert [(f.rule, f.keys[0]) for f in typo] == [("FC103", "actor_rollout_ref.actor.fsdp_config.strategy")]
    native = _errors(check(["+recipe=qwen_grpo", "actor_rollout_ref.actor.strategy=fsdp_turbo"]))
    assert [(f.rule, f.keys[0]) for f in native] == [("FC803", "actor_rollout_ref.actor.strategy")]


@pytest.mark.parametrize(
    "extra,key,value",
    [
        (["algorithm.adv_estimator=gae"], "algorithm.adv_estimator", "gae"),
        (["critic.enable=true"], "critic.enable", "true"),
        (["engine=megatron"], "actor_rollout_ref.actor.strategy", "megatron"),
    ],
)
def test_native_refuses_the_critic_and_other_engines_naming_launcher_verl(extra, key, value):
    findings = check(["+recipe=qwen_grpo", "critic.ppo_micro_batch_size_per_gpu=4", *extra])
    refused = [f for f in _errors(findings) if f.rule == "FC803" and f.keys[0] == key]
    assert len(refused) == 1, [f"{f.rule} {f.message}" for f in _errors(findings)]
    assert f"use launcher=verl to run {key}={value}" in refused[0].fix
