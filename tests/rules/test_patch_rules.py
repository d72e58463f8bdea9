"""FC361/FC364/FC861 on composed configs (rules read config.json as JSON)."""

from rule_helpers import errors, run

from fsdpcfg.check import check_overrides
from fsdpcfg.rules import patch_rules

A = "actor_rollout_ref"
VERL_GPU = ["launcher=verl", "rollout=vllm", "trainer=gpu_8x"]


def test_fc361_patch_and_model_type(shared_models):
    f = errors(run(patch_rules.patch_model_type, "patches=remove_padding", model="Qwen__Qwen-7B"))
    assert f and "'qwen'" in f[0].message and f[0].keys[0] == f"{A}.model.use_remove_padding"
    assert not run(patch_rules.patch_model_type, "patches=remove_padding", model="Qwen__Qwen3-8B")
    f = errors(run(patch_rules.patch_model_type, "patches=liger", *VERL_GPU, model="deepseek-ai__DeepSeek-V2-Lite"))
    assert f and "'deepseek_v2'" in f[0].message
    assert not run(
        patch_rules.patch_model_type, "patches=liger", *VERL_GPU, model="microsoft__Phi-3-mini-128k-instruct"
    )


def test_fc364_fsdp1_hybrid_with_shard_groups_of_one():
    f = errors(run(patch_rules.fsdp1_hybrid_size_one, "engine=fsdp", f"{A}.actor.fsdp_config.fsdp_size=1"))
    assert f and "NO_SHARD" in f[0].message and "fsdp2" in f[0].fix
    assert not run(patch_rules.fsdp1_hybrid_size_one, "engine=fsdp2", f"{A}.actor.fsdp_config.fsdp_size=1")
    assert not run(patch_rules.fsdp1_hybrid_size_one, "engine=fsdp", f"{A}.actor.fsdp_config.fsdp_size=2")


def test_fc861_liger_on_cpu_and_check_knows_every_option():
    f = errors(run(patch_rules.patch_device, "patches=liger"))
    assert f and "cuda" in f[0].message and "trainer.device" in f[0].keys
    assert not run(patch_rules.patch_device, "patches=liger", *VERL_GPU)
    for option, rules in {
        "none": set(),
        "remove_padding": set(),
        "gradient_checkpointing": set(),
        "liger": {"FC802", "FC861"},
        "ulysses": {"FC802"},
    }.items():
        found = {f.rule for f in check_overrides(["+recipe=qwen_grpo", f"patches={option}"]) if f.severity == "error"}
        assert found == rules, (option, found)
    bad = check_overrides(["+recipe=qwen_grpo", "patches=flash"])
    assert [f.rule for f in bad if f.severity == "error"] == ["FC100"]
