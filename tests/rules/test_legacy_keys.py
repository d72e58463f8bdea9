"""FC701 and the table of moved keys (fsdpcfg.rules.legacy_keys); verl's own verdict on every target is
tests/check/verl_opinion/test_migration_oracle.py."""

from rule_helpers import errors, run, warnings

from fsdpcfg import verlref
from fsdpcfg.check import check_overrides
from fsdpcfg.rules import legacy_keys as L

BASE = ["+recipe=qwen_grpo", "launcher=verl", "rollout=vllm", "trainer=gpu_8x"]


def test_targets_follow_migrate_legacy_reward_impl():
    got = {k: (t.key, t.plus) for k in _legacy_examples() if (t := L.target(k)) is not None}
    assert got == {
        "reward_model.reward_manager": ("reward.reward_manager.name", False),
        "reward_model.reward_kwargs.max_resp_len": ("reward.reward_kwargs.max_resp_len", True),
        "reward_model.reward_kwargs.overlong_buffer_cfg.len": ("reward.reward_kwargs.overlong_buffer_cfg.len", True),
        "reward_model.overlong_buffer.enable": ("reward.reward_kwargs.overlong_buffer_cfg.enable", True),
        "reward_model.model.path": ("reward.reward_model.model_path", False),
        "reward_model.num_workers": ("reward.num_workers", False),
        "reward_model.reward_loop_source": ("reward.reward_manager.source", False),
        "reward_model.reward_loop_module_path": ("reward.reward_manager.module.path", False),
        "reward_model.rollout.gpu_memory_utilization": ("reward.reward_model.rollout.gpu_memory_utilization", False),
        "reward_model.sandbox_fusion.url": ("reward.sandbox_fusion.url", False),
        "sandbox_fusion.max_concurrent": ("reward.sandbox_fusion.max_concurrent", False),
        "custom_reward_function.path": ("reward.custom_reward_function.path", False),
        "custom_reward_function.reward_kwargs.k": ("reward.custom_reward_function.reward_kwargs.k", True),
        # the removed reward-model worker's settings have no home
        "reward_model.micro_batch_size_per_gpu": (None, False),
        "reward_model.model.use_remove_padding": (None, False),
        "reward_model.rollout.no_such_key": (None, False),
    }


def _legacy_examples():
    return [
        "reward_model.reward_manager",
        "reward_model.reward_kwargs.max_resp_len",
        "reward_model.reward_kwargs.overlong_buffer_cfg.len",
        "reward_model.overlong_buffer.enable",
        "reward_model.model.path",
        "reward_model.num_workers",
        "reward_model.reward_loop_source",
        "reward_model.reward_loop_module_path",
        "reward_model.rollout.gpu_memory_utilization",
        "reward_model.sandbox_fusion.url",
        "sandbox_fusion.max_concurrent",
        "custom_reward_function.path",
        "custom_reward_function.reward_kwargs.k",
        "reward_model.micro_batch_size_per_gpu",
        "reward_model.model.use_remove_padding",
        "reward_model.rollout.no_such_key",
    ]


def test_every_plain_target_is_a_key_of_verl_091():
    for m in L.REWARD_MOVES + L.RENAMES:
        if m.new is None or m.get_mapping:
            continue
        known = verlref.keys("ppo") | verlref.prefixes("ppo")
        assert m.new.removesuffix(".*") in known, m
    for m in L.SFT_MOVES:
        if m.new is not None:
            assert m.new.removesuffix(".*") in verlref.keys("sft") | verlref.prefixes("sft"), m


def test_renames_between_05_and_091():
    assert L.target("ray_init.num_cpus").key == "ray_kwargs.ray_init.num_cpus"
    assert L.target("trainer.profile_steps").key == "global_profiler.steps"
    assert L.target("critic.model.fsdp_config.param_offload").key == "critic.fsdp.param_offload"
    assert L.target("model.partial_pretrain", L.SFT_MOVES, "sft").key == "model.path"
    assert L.target("data.prompt_key", L.SFT_MOVES, "sft").key is None


def test_fc701_names_the_key_verl_091_reads():
    f = errors(run(L.legacy_reward_keys, "+reward_model.reward_manager=dapo"))
    assert [x.keys for x in f] == [["reward_model.reward_manager", "reward.reward_manager.name"]]
    assert f[0].fix == "rename it to reward.reward_manager.name=dapo"
    assert "runs reward.reward_manager.name = naive instead" in f[0].message
    f = errors(run(L.legacy_reward_keys, "+reward_model.reward_kwargs.max_resp_len=2048"))
    assert f[0].fix == "rename it to +reward.reward_kwargs.max_resp_len=2048"


def test_fc701_is_a_warning_when_verl_091_uses_the_same_value():
    fs = run(L.legacy_reward_keys, "+reward_model.reward_manager=naive", "+reward_model.enable=false")
    assert not errors(fs)
    assert sorted(f.keys[0] for f in warnings(fs)) == ["reward_model.enable", "reward_model.reward_manager"]
    # set in both places, the same value: the legacy one is only redundant
    fs = run(L.legacy_reward_keys, "+reward_model.reward_manager=dapo", "reward.reward_manager.name=dapo")
    assert [f.severity for f in fs] == ["warning"]


def test_fc701_a_setting_of_the_removed_reward_model_worker_is_deleted():
    f = errors(run(L.legacy_reward_keys, "+reward_model.micro_batch_size_per_gpu=4"))
    assert f[0].keys == ["reward_model.micro_batch_size_per_gpu"]
    assert f[0].fix == "delete reward_model.micro_batch_size_per_gpu"
    assert "no reward-model worker" in f[0].message


def test_the_suggested_form_checks_clean():
    fixed = [
        "reward.reward_manager.name=dapo",
        "+reward.reward_kwargs.overlong_buffer_cfg.enable=true",
        "+reward.reward_kwargs.overlong_buffer_cfg.len=512",
        "+reward.reward_kwargs.max_resp_len=2048",
        "+reward.custom_reward_function.reward_kwargs.scale=2",
    ]
    fs = check_overrides(BASE + fixed)
    assert not [f for f in fs if f.rule.startswith(("FC1", "FC7"))], [(f.rule, f.message) for f in fs]


def _judged(*overrides: str) -> list[tuple[str, str]]:
    base = ["+recipe=qwen_grpo", "launcher=verl", "rollout=vllm"]
    found = check_overrides([*base, *overrides])
    return [(f.rule, f.severity) for f in found if f.rule[:3] in ("FC1", "FC7") and f.severity != "info"]


def test_a_removed_key_added_with_plus_is_fc701_not_an_unread_or_foreign_key():
    """verl's veomni example adds ``+trainer.use_legacy_worker_impl=disable``: verl 0.9.1 accepts the `+` key and
    nothing reads it (verl #6067 removed the legacy workers; 0.9.1 always runs the engine ones, which `disable`
    chose): a warning naming the removal, not FC102 "nothing reads it" nor FC113 "verl rejects it"."""
    for engine in ("fsdp2", "veomni"):
        assert _judged(f"engine={engine}", "+trainer.use_legacy_worker_impl=disable") == [("FC701", "warning")]
    # asking for the legacy workers gets the engine workers all the same: an error
    assert _judged("+trainer.use_legacy_worker_impl=enable") == [("FC701", "error")]
    # a key no verl ever had is still FC102, and not FC113 (it belongs to no engine's composition)
    assert _judged("engine=veomni", "+trainer.use_legacy_workr_impl=x") == [("FC102", "error")]
