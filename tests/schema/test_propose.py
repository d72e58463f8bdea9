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
