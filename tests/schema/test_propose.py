"""Suggestions that cannot hurt (issue 20 item 6): did-you-mean proposes only a real key whose leaf name is close and
whose type fits the value (:func:`fsdpcfg.schema.keys.propose`); otherwise the finding says there is no such key
in verl 0.9.1. The same proposal in every place that makes one: an unknown key on the command line (FC101, Hydra
refuses it), a ``+`` key nothing reads (FC102) and an unknown key in a file (FC101)."""

from __future__ import annotations

import pytest

from fsdpcfg.check import check_overrides
from fsdpcfg.check.sources import check_yaml_file
from fsdpcfg.schema import keys as K

BASE = ["+recipe=qwen_grpo"]


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("tau_pos", 0.5, "actor_rollout_ref.actor.tau_pos"),
        ("actor_rollout_ref.actor.policy_loss.tau_pos", 0.5, "actor_rollout_ref.actor.tau_pos"),
        ("rollout.n", 64, "actor_rollout_ref.rollout.n"),
        ("trainer.nnode", 2, "trainer.nnodes"),
        ("actor.ppo_micro_batch_size_pergpu", 4, "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu"),
        ("model.trust_remote_code", True, "actor_rollout_ref.model.trust_remote_code"),
        ("data.max_prompt_len", 512, "data.max_prompt_length"),
        # the bad proposals: the value would have gone into a key of another type or meaning
        ("rollout.dtype", True, None),  # the dtype is a string (bfloat16)
        ("trainer.test_fre", "/data/x.parquet", None),  # test_freq is an integer
        ("actor_rollout_ref.actor.policy_los", 1.0, None),  # policy_loss is a section
        ("actor_rollout_ref.actor.foo", 1, None),  # nothing with a leaf like `foo` (was: the section `actor`)
        ("nope.key", K.UNKNOWN_VALUE, None),  # a common leaf in an unrelated section
        ("rollout.n", "abc", None),  # n is an integer
    ],
)
def test_propose_only_a_close_key_of_a_fitting_type(key, value, expected):
    assert K.propose(key, value) == expected


def test_value_fits_by_the_schema_annotation_and_verls_default():
    assert K.value_fits("actor_rollout_ref.rollout.n", 64)
    assert not K.value_fits("actor_rollout_ref.rollout.n", True)  # a bool is no count
    assert K.value_fits("actor_rollout_ref.actor.optim.lr", 1)  # an int fits a float
    assert not K.value_fits("trainer.test_freq", "/data/x.parquet")
    assert K.value_fits("trainer.test_freq", None)  # null: the type does not decide
    assert not K.value_fits("actor_rollout_ref.actor.policy_loss", 1.0)
    assert K.value_fits("actor_rollout_ref.actor.policy_loss", {"loss_mode": "vanilla"})


def test_an_unknown_command_line_key_gets_no_proposal_of_the_wrong_type():
    [f] = [f for f in check_overrides(BASE + ["rollout.dtype=true"]) if "rollout.dtype" in f.keys]
    assert f.rule == "FC101"
    assert "no such key in verl 0.9.1 (an older verl's or a fork's key?)" in f.message
    assert "did you mean" not in f.fix


def test_an_unknown_command_line_key_gets_the_close_key_with_its_value():
    [f] = [f for f in check_overrides(BASE + ["rollout.n=64"]) if "rollout.n" in f.keys]
    assert f.fix == "did you mean actor_rollout_ref.rollout.n=64?"


def test_a_plus_key_gets_no_proposal_that_moves_its_value_into_an_unrelated_key():
    [f] = [f for f in check_overrides(BASE + ["+trainer.test_fre=/data/x.parquet"]) if f.rule == "FC102"]
    assert f.keys == ["trainer.test_fre"]
    assert f.message.endswith("no such key in verl 0.9.1 (an older verl's or a fork's key?)")
    [g] = [f for f in check_overrides(BASE + ["+policy_loss.tau_pos=0.5"]) if f.rule == "FC102"]
    assert g.keys == ["policy_loss.tau_pos", "actor_rollout_ref.actor.tau_pos"]
    assert "actor_rollout_ref.actor.tau_pos=0.5" in g.fix


def test_a_files_unknown_key_gets_no_section_as_proposal(tmp_path):
    f = tmp_path / "mine.yaml"
    f.write_text(
        "# @package _global_\ndefaults:\n  - qwen_grpo\n  - _self_\nactor_rollout_ref:\n  actor:\n    foo: 1\n"
    )
    [got] = [x for x in check_yaml_file(f).findings if x.rule == "FC101"]
    assert got.keys == ["actor_rollout_ref.actor.foo"]  # no second key: nothing proposed
    assert "no such key in verl 0.9.1" in got.message


def test_a_deletion_of_a_missing_key_proposes_no_unrelated_key():
    [f] = [f for f in check_overrides(BASE + ["~nope.key"]) if "nope.key" in f.keys]
    assert "did you mean" not in f.fix


@pytest.mark.parametrize(
    ("key", "value"),
    [
        # issue 20: megatron-lite's actor.engine.* keys were given a section, Adam's eps and another engine's key
        ("actor_rollout_ref.actor.engine.tp", 2),  # was the section actor_rollout_ref.rollout.mtp
        ("actor_rollout_ref.actor.engine.ep", 4),  # was torchtitan's actor_rollout_ref.actor.optim.eps
        ("actor_rollout_ref.actor.engine.param_offload", False),  # was veomni's actor.veomni.param_offload
        ("actor_rollout_ref.actor.engine.impl_cfg.optimizer", "fsdp2"),  # was actor.optim.optimizer
        ("actor_rollout_ref.rollout.mtpp", 1),  # a section takes keys, not a value
        ("actor_rollout_ref.rollout.mtp_x", K.UNKNOWN_VALUE),
        ("actor_rollout_ref.rollout.mtp.enabled", True),  # was rollout.disaggregation.enabled: another section
    ],
)
def test_no_section_no_other_section_no_other_engine(key, value):
    assert K.propose(key, value, config="ppo_trainer") is None


def test_a_section_is_proposed_for_a_mapping_only():
    assert K.propose("actor_rollout_ref.rollout.mtpp", {"enable": True}) == "actor_rollout_ref.rollout.mtp"


def test_only_the_configs_engine_keys_are_proposed():
    typo = "actor_rollout_ref.actor.megatron.tensor_model_paralel_size"
    assert (
        K.propose(typo, 2, config="ppo_megatron_trainer")
        == "actor_rollout_ref.actor.megatron.tensor_model_parallel_size"
    )
    assert K.propose(typo, 2, config="ppo_trainer") is None
    typo = "actor_rollout_ref.actor.fsdp_config.param_ofload"
    assert K.propose(typo, True, config="ppo_trainer") == "actor_rollout_ref.actor.fsdp_config.param_offload"
    assert K.propose(typo, True, config="ppo_megatron_trainer") is None
    assert K.propose("actor_rollout_ref.actor.optim.ep", 1e-8, config="ppo_torchtitan_trainer") == (
        "actor_rollout_ref.actor.optim.eps"
    )


def test_a_mistyped_middle_section_is_still_found():
    assert K.propose("actor_rollout_ref.acter.ppo_epochs", 2) == "actor_rollout_ref.actor.ppo_epochs"
    assert K.propose("actor_rollout_ref.rolout.n", 4) == "actor_rollout_ref.rollout.n"


def test_the_command_line_proposal_is_the_configs_engines():
    # an FSDP config: veomni's key is not proposed for a misspelt one (it was, while composing)
    [f] = [f for f in check_overrides(BASE + ["actor_rollout_ref.actor.veomni.param_ofload=true"]) if f.rule == "FC101"]
    assert "did you mean" not in f.fix and "no such key in verl 0.9.1" in f.message
    [g] = [
        f
        for f in check_overrides(BASE + ["actor_rollout_ref.actor.fsdp_config.param_ofload=true"])
        if f.rule == "FC101"
    ]
    assert g.fix == "did you mean actor_rollout_ref.actor.fsdp_config.param_offload=true?"


def test_an_sft_key_gets_the_same_proposal_rules():
    # FC150's did-you-mean: a close leaf of a fitting type (was difflib over the whole key)
    found = [f for f in check_overrides(["+recipe=qwen_sft", "+data.micro_batch_size_per_gpuu=2"]) if f.rule == "FC150"]
    assert [f.keys for f in found] == [["data.micro_batch_size_per_gpuu", "data.micro_batch_size_per_gpu"]]
    found = [
        f for f in check_overrides(["+recipe=qwen_sft", "+data.micro_batch_size_per_gpuu=abc"]) if f.rule == "FC150"
    ]
    assert [f.keys for f in found] == [["data.micro_batch_size_per_gpuu"]] and "no such key" in found[0].message
