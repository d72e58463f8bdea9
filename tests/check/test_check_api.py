"""check_config / check_overrides: unknown and unread keys, launcher support, interpolations, rule crashes."""

from __future__ import annotations

import pytest

from fsdpcfg.check import check_config, check_overrides, has_errors, load_rule_modules
from fsdpcfg.compose import compose
from fsdpcfg.errors import UsageError
from fsdpcfg.rules.registry import RULES, rule

BASE = ["+recipe=qwen_grpo"]
VERL = [
    "launcher=verl",
    "rollout=vllm",
    "trainer=gpu_8x",
    "data.train_batch_size=16",
    "actor_rollout_ref.actor.ppo_mini_batch_size=16",
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=8",
    "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=8",
    "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=8",
]


def _rules(findings, severity="error"):
    return sorted({f.rule for f in findings if f.severity == severity})


def test_shipped_recipe_has_no_error():
    assert not has_errors(check_overrides(BASE))


def test_verl_baseline_has_no_error():
    assert not has_errors(check_overrides(BASE + VERL)), check_overrides(BASE + VERL)


def test_rule_modules_are_discovered():
    names = {m for m, err in load_rule_modules()}
    assert {"fsdpcfg.rules.schema_rules", "fsdpcfg.rules.launcher_rules"} <= names
    assert all(err is None for _, err in load_rule_modules())


def test_typo_with_plus_names_the_real_key():  # case c20
    [f] = [
        f
        for f in check_overrides(BASE + ["+actor_rollout_ref.actor.ppo_micro_batch_size_pergpu=4"])
        if f.severity == "error"
    ]
    assert f.rule == "FC102"
    assert f.keys == [
        "actor_rollout_ref.actor.ppo_micro_batch_size_pergpu",
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu",
    ]
    assert "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4" in f.fix


def test_wrong_section_with_plus_names_the_real_key():  # case c09, without the model
    fs = [f for f in check_overrides(BASE + ["+model.trust_remote_code=true"]) if f.rule == "FC102"]
    assert fs and fs[0].keys[1] == "actor_rollout_ref.model.trust_remote_code"
    assert "actor_rollout_ref.model.trust_remote_code=true" in fs[0].fix


def test_unknown_key_without_plus():
    [f] = check_overrides(BASE + ["trainer.nnode=2"])
    assert f.rule == "FC101" and f.keys == ["trainer.nnode"] and "trainer.nnodes" in f.fix


def test_unknown_key_in_a_file(tmp_path):
    rec = tmp_path / "mine.yaml"
    rec.write_text(
        "# @package _global_\ndefaults:\n  - qwen_grpo\n  - _self_\ntrainer:\n  nnode: 2\n"
        "actor_rollout_ref:\n  actr:\n    strategy: fsdp2\n"
    )
    fs = check_overrides(["+recipe=mine"], extra_recipe_dirs=[tmp_path])
    got = {f.keys[0]: f for f in fs if f.rule == "FC101"}
    assert set(got) == {"trainer.nnode", "actor_rollout_ref.actr"}
    assert got["trainer.nnode"].keys[1] == "trainer.nnodes"
    assert got["actor_rollout_ref.actr"].keys[1] == "actor_rollout_ref.actor"
    assert "mine.yaml:6" in got["trainer.nnode"].provenance["trainer.nnode"]


def test_legacy_reward_keys_are_left_to_fc701():  # case c24: one report, by the trap rule
    fs = check_overrides(BASE + VERL + ["+custom_reward_function.path=my_reward.py"])
    assert not [f for f in fs if f.rule.startswith("FC1")]


def test_known_key_missing_from_tree_needs_plus_and_other_rules_still_run():
    # ray.init's address: verl's YAML lists only two ray_init keys, so verl (and fsdpcfg) need `+` for it
    fs = check_overrides(
        BASE
        + [
            "ray_kwargs.ray_init.address=auto",
            "actor_rollout_ref.rollout.multi_turn.enable=true",
            "actor_rollout_ref.rollout.n=1",
        ]
    )
    assert [f.keys[0] for f in fs if f.rule == "FC105"] == ["ray_kwargs.ray_init.address"]
    assert "FC802" in _rules(fs)  # multi_turn is verl only
    assert any(f.rule.startswith("FC6") for f in fs)  # the group-estimator rule ran too


def test_strategy_typo():  # case c23
    [f] = [f for f in check_overrides(BASE + ["actor_rollout_ref.actor.strategy=fsdp3"]) if f.severity == "error"]
    assert f.rule == "FC103" and f.keys == ["actor_rollout_ref.actor.strategy"]
    assert f.message == (
        "actor_rollout_ref.actor.strategy: 'fsdp3' is not one of fsdp, fsdp2, fsdp_turbo, megatron, "
        "veomni, torchtitan, automodel"
    )
    assert "command line" in f.provenance["actor_rollout_ref.actor.strategy"]


@pytest.mark.parametrize(
    "overrides,needle",
    [
        (["rollout=vllm"], "launcher=verl"),
        (["rollout=sglang"], "launcher=verl"),
        (VERL + ["rollout=hf"], "launcher=native"),
    ],
)
def test_backend_launcher(overrides, needle):
    fs = [f for f in check_overrides(BASE + overrides) if f.rule == "FC801"]
    assert fs and needle in fs[0].message + fs[0].fix
    assert fs[0].keys == ["actor_rollout_ref.rollout.name", "fsdpcfg.launcher"]


def test_native_ignored_key_away_from_default_is_an_error():
    [f] = [
        f for f in check_overrides(BASE + ["actor_rollout_ref.rollout.gpu_memory_utilization=0.6"]) if f.rule == "FC802"
    ]
    assert "launcher=verl" in f.fix and "0.6" in f.message and "0.5" in f.message


def test_native_ignored_key_at_default_is_fine():
    fs = check_overrides(
        BASE
        + [
            "actor_rollout_ref.rollout.gpu_memory_utilization=0.5",
            "actor_rollout_ref.rollout.tensor_model_parallel_size=2",
        ]
    )
    assert not [f for f in fs if f.rule == "FC802"]


def test_same_keys_are_fine_under_verl():
    fs = check_overrides(
        BASE
        + VERL
        + ["actor_rollout_ref.rollout.gpu_memory_utilization=0.6", "actor_rollout_ref.rollout.multi_turn.enable=true"]
    )
    assert not [f for f in fs if f.rule.startswith(("FC8", "FC1"))]


def test_native_partial_values():
    fs = check_overrides(BASE + ["algorithm.adv_estimator=rloo"])
    assert [f.keys[0] for f in fs if f.rule == "FC803"] == ["algorithm.adv_estimator"]


def test_dynamic_bsz_under_native_reported_once():
    fs = [f for f in check_overrides(BASE + ["actor_rollout_ref.actor.use_dynamic_bsz=true"]) if f.rule == "FC802"]
    assert [f.keys[0] for f in fs] == ["actor_rollout_ref.actor.use_dynamic_bsz"]


def test_bad_interpolation_is_a_finding():
    fs = check_overrides(BASE + ["data.max_prompt_length=${data.nope}"])
    f100 = [f for f in fs if f.rule == "FC100"]
    assert [f.keys for f in f100] == [["data.max_prompt_length"]]
    assert "command line" in f100[0].provenance["data.max_prompt_length"]


def test_missing_required_value():
    fs = check_overrides(BASE + ["~actor_rollout_ref.rollout.name"])
    assert [f.keys for f in fs if f.rule == "FC104"] == [["actor_rollout_ref.rollout.name"]]


def test_unknown_group_option_is_a_finding():
    [f] = check_overrides(BASE + ["rollout=vlm"])
    assert f.rule == "FC100" and "vllm" in f.fix


@pytest.mark.parametrize("override", ["trainer=0", "rollout=[hf,vllm]", "engine=null"])
def test_odd_group_values_are_findings(override):  # found by the property test: Hydra raised a ValueError
    fs = check_overrides(BASE + [override])
    assert has_errors(fs) and all(f.message for f in fs)


def test_unparsable_override_is_a_usage_error():
    with pytest.raises(UsageError):
        check_overrides(BASE + ["a=["])


def test_model_path_offline_inspection(tmp_path):
    fs = check_overrides(BASE + ["actor_rollout_ref.model.path=/cluster/models/qwen-7b"])
    [f] = [f for f in fs if f.rule == "FC106"]
    assert f.severity == "info" and "cannot be inspected" in f.message
    (tmp_path / "weights.bin").write_text("")
    fs = check_overrides(BASE + [f"actor_rollout_ref.model.path={tmp_path}"])
    assert [f.severity for f in fs if f.rule == "FC106"] == ["error"]


def test_a_crashing_rule_becomes_a_finding():
    @rule("FC899", "test-only rule that crashes")
    def crash(ctx):
        """Test only."""
        raise ZeroDivisionError("boom")

    try:
        fs = check_config(compose(BASE))
        [f] = [f for f in fs if f.rule == "FC000"]
        assert f.severity == "warning" and "FC899" in f.message and "boom" in f.message
    finally:
        del RULES["FC899"]


def test_findings_sorted_errors_first():
    fs = check_overrides(BASE + ["actor_rollout_ref.model.path=/cluster/x", "actor_rollout_ref.actor.strategy=x"])
    order = [f.severity for f in fs]
    assert order == sorted(order, key=["error", "warning", "info"].index)


def test_validation_runs_under_both_launchers_and_needs_val_files():
    """The native loop validates as verl does (fsdpcfg/train/validate.py): val_before_train and test_freq are
    accepted under both launchers; asking for validation without data.val_files is FC409."""
    for launcher in (["launcher=native"], ["launcher=verl", "rollout=vllm"]):
        fs = check_overrides(BASE + launcher + ["trainer.val_before_train=true", "trainer.test_freq=5"])
        assert not [f for f in fs if f.rule in ("FC802", "FC803", "FC409")], launcher
    fs = check_overrides(BASE + ["trainer.test_freq=5", "data.val_files=null"])
    (f,) = [f for f in fs if f.rule == "FC409"]
    # qwen_grpo validates before training too
    assert f.severity == "error" and f.keys == ["data.val_files", "trainer.val_before_train", "trainer.test_freq"]
    assert "trainer.val_before_train=True and trainer.test_freq=5 asks for validation" in f.message
    assert "trainer.test_freq=-1" in f.fix
