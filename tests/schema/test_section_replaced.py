"""A scalar or a list set on a section of the config (issue 20: ``actor_rollout_ref.rollout.mtp=1``,
``actor_rollout_ref.model.lora=1`` passed the check). verl 0.9.1 (asked: ``check --verl``) takes a scalar at config
time and then fails where it reads a key of the section (``model.lora=1``: ``'int' object has no attribute 'get'``
in validate_config; ``rollout.mtp=1``: ``self.config.mtp.enable`` in the vLLM/SGLang server), and its Hydra refuses to
merge a list into a mapping ("Error merging override"). Every kind of section: verl's own (in its tree, or a field
its dataclass declares as a config: ``rollout.mtp``, filled by interpolation), the schema's, SFT's."""

from __future__ import annotations

import pytest

from fsdpcfg.check import check_overrides
from fsdpcfg.schema import keys as K

PPO = ["+recipe=qwen_grpo", "launcher=verl", "rollout=vllm"]


def _errors(overrides, key):
    return [f for f in check_overrides(overrides) if f.severity == "error" and key in f.keys]


@pytest.mark.parametrize(
    "key,value,first",
    [
        ("actor_rollout_ref.rollout.mtp", "1", "enable"),  # a dataclass field verl's YAML fills by interpolation
        ("actor_rollout_ref.model.lora", "1", "a2a_experimental"),  # verl's section (a free mapping here)
        ("actor_rollout_ref.model.mtp", "true", "enable"),
        ("actor_rollout_ref.rollout.engine_kwargs", "vllm", "sglang"),
        ("ray_kwargs.ray_init", "8", "num_cpus"),
        ("actor_rollout_ref.actor.optim", "adam", "betas"),  # a section of the schema
        ("actor_rollout_ref.actor.fsdp_config.mixed_precision", "bf16", "buffer_dtype"),  # an optional one
        ("actor_rollout_ref.rollout.mtp", "[1,2]", "enable"),  # verl's Hydra merges a list into the interpolation
    ],
)
def test_a_scalar_or_list_on_a_section_is_an_error_naming_key_value_and_fix(key, value, first):
    (f,) = _errors([*PPO, f"{key}={value}"], key)
    assert f.rule == "FC103"
    assert "is a section of verl 0.9.1's config" in f.message and "replaces the whole section" in f.message
    assert f.fix == f"set a key of the section instead ({key}.{first}=VALUE), or remove {key}={value}"


@pytest.mark.parametrize("key", ["actor_rollout_ref.model.lora", "actor_rollout_ref.actor.optim"])
def test_a_list_on_a_mapping_of_verls_tree_is_what_verls_hydra_refuses(key):
    (f,) = _errors([*PPO, f"{key}=[1]"], key)
    assert f.rule == "FC103" and "verl's Hydra refuses to merge a list into it" in f.message
    assert f.fix.endswith(f"remove {key}=[1]")


def test_an_interpolated_copy_is_not_reported_twice():
    # rollout.mtp is ${oc.select:actor_rollout_ref.model.mtp,null}: the value is reported where it was set
    found = [f for f in check_overrides([*PPO, "actor_rollout_ref.model.mtp=1"]) if f.rule == "FC103"]
    assert [f.keys for f in found] == [["actor_rollout_ref.model.mtp"]]


@pytest.mark.parametrize("override", ["model.lora=1", "checkpoint=1", "model.override_config=x"])
def test_sft_sections(override):
    key, value = override.split("=")
    (f,) = _errors(["+recipe=qwen_sft", override], key)
    assert f.rule == "FC150" and "is a section of verl 0.9.1's config" in f.message
    assert f.fix.endswith(f"or remove {key}={value}")
    (f,) = _errors(["+recipe=qwen_sft", f"{key}=[1]"], key)
    assert f.rule == "FC150" and "replaces the whole section" in f.message


def test_a_mapping_null_or_interpolation_on_a_section_and_a_scalar_on_a_leaf_pass():
    assert K.section_replaced("actor_rollout_ref.rollout.mtp", None) is None  # verl's server checks `mtp is not None`
    assert K.section_replaced("actor_rollout_ref.rollout.mtp", {"enable": True}) is None
    assert K.section_replaced("actor_rollout_ref.rollout.mtp", "${actor_rollout_ref.model.mtp}") is None
    assert K.section_replaced("actor_rollout_ref.rollout.n", 4) is None
    assert K.section_replaced("trainer.logger", ["console"]) is None
    assert not _errors([*PPO, "actor_rollout_ref.model.mtp.enable=true"], "actor_rollout_ref.model.mtp.enable")
