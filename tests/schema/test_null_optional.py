"""A null where verl 0.9.1's annotation is Optional is no type error (issue 20: ``optim.lr_warmup_steps: null`` was a
false FC103, verl's ``OptimizerConfig.lr_warmup_steps: Optional[int]``), and a null verl reads only under a condition is
judged under it (``reward.custom_reward_function.name: null`` with ``path: null`` was a false FC103: verl's
``get_custom_reward_fn`` reads the name only for a path). Where verl itself fails on the null, a rule says where."""

from __future__ import annotations

import pytest

from fsdpcfg import verlref
from fsdpcfg.check import check_overrides
from fsdpcfg.schema import keys as K

#: schema keys verl annotates as Optional whose null the schema still refuses, and why (verl fails on it)
NULL_REFUSED = {
    # required (???): verl/workers/rollout/replica.py get_rollout_replica_class picks the server class by the name
    "actor_rollout_ref.rollout.name": "ppo_trainer",
    # PEFT fills a null target_modules only for the model types of its own table (else "Please specify
    # `target_modules`"); which ones needs peft, which the check does not import
    "actor_rollout_ref.model.target_modules": "ppo_trainer",
    "model.target_modules": "sft_trainer_engine",
}


def _schema_leaves():
    for key, info in K._schema_index()[0].items():
        yield key, info, "ppo"
    for key, info in K._sft_fields().items():
        yield key, info, "sft_trainer_engine"


def test_every_schema_key_takes_a_null_where_verls_annotation_does():
    refused = []
    for key, info, config in _schema_leaves():
        declared = verlref.value_kinds(key, config)
        kinds = K._annotation_kinds(info.annotation)
        if declared and "null" in declared and kinds is not None and "null" not in kinds:
            refused.append(key)
    assert sorted(refused) == sorted(NULL_REFUSED)


PPO = ["+recipe=qwen_grpo", "launcher=verl", "rollout=vllm"]


def _rules(overrides, key):
    return [(f.rule, f.severity) for f in check_overrides(overrides) if key in f.keys and f.severity != "info"]


@pytest.mark.parametrize("role", ["actor_rollout_ref.actor", "critic"])
def test_a_null_warmup_is_judged_by_the_engine_that_reads_it(role):
    key = f"{role}.optim.lr_warmup_steps"
    critic = ["algorithm.adv_estimator=gae"] if role == "critic" else []
    # verl's FSDP engine compares it with 0 (TypeError on None): FC180 says so, not FC103's "not an integer"
    found = [f for f in check_overrides([*PPO, *critic, f"{key}=null"]) if key in f.keys]
    assert [(f.rule, f.severity) for f in found] == [("FC180", "error")]
    assert "`None <= 0`" in found[0].message
    # verl's Megatron engine reads null as the ratio; the native trainer too
    assert not _rules([*PPO, *critic, "engine=megatron", f"{key}=null"], key)
    assert not _rules(["+recipe=qwen_grpo", *critic, f"{key}=null"], key)


def test_sft_warmup_null():
    assert _rules(["+recipe=qwen_sft", "launcher=verl", "optim.lr_warmup_steps=null"], "optim.lr_warmup_steps") == [
        ("FC180", "error")
    ]
    assert not _rules(["+recipe=qwen_sft", "optim.lr_warmup_steps=null"], "optim.lr_warmup_steps")


def test_the_reward_function_name_is_judged_only_with_a_path():
    name, path = "reward.custom_reward_function.name", "reward.custom_reward_function.path"
    assert not _rules([*PPO, f"{name}=null"], name)
    # a path (on the cluster, not here): the name is required, as verl asserts
    found = [f for f in check_overrides([*PPO, f"{name}=null", f"{path}=/cluster/reward.py"]) if name in f.keys]
    assert [(f.rule, f.severity) for f in found] == [("FC415", "error")]
    assert found[0].message.startswith(f"{name} is null while {path} is set")
