"""The value kinds verl's config dataclasses declare (fsdpcfg/verlref/field_types.py, shipped in
verl_reference.json): read without verl, they widen the type check of verl-only keys to what verl's annotation
takes (a verl example's ``rollout_is_threshold=0.5_4.0`` was a false FC103)."""

from __future__ import annotations


def test_value_kinds_come_from_verls_dataclass_annotations():
    from fsdpcfg import verlref

    # verl/trainer/config/algorithm.py RolloutCorrectionConfig: rollout_is_threshold: str | float = 2.0
    assert verlref.value_kinds("algorithm.rollout_correction.rollout_is_threshold") == {"float", "str"}
    assert verlref.value_kinds("actor_rollout_ref.actor.ppo_mini_batch_size") == {"int"}
    assert verlref.value_kinds("actor_rollout_ref.actor.checkpoint.save_contents") == {"list"}
    assert verlref.value_kinds("trainer.logger") is None  # trainer is a plain section: no dataclass declares it


def test_a_value_verls_annotation_allows_is_not_a_type_error():
    from fsdpcfg.check import check_overrides

    base = ["+recipe=qwen_grpo", "launcher=verl", "rollout=vllm"]
    key = "algorithm.rollout_correction.rollout_is_threshold"
    ok = check_overrides([*base, f"{key}=0.5_4.0"])  # verl's "lower_upper" threshold form
    assert not [f for f in ok if f.rule == "FC103" and key in f.keys]
    bad = [f for f in check_overrides([*base, f"{key}=[1,2]"]) if f.rule == "FC103" and key in f.keys]
    assert len(bad) == 1 and "[1, 2] is a list" in bad[0].message
