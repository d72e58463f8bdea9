"""``fsdpcfg explain KEY`` and ``fsdpcfg explain RULE_ID``: pages built from the schema, verlref, the tree
and the rule table."""

from __future__ import annotations

import pytest

from fsdpcfg.catalog import keyinfo, ruleinfo
from fsdpcfg.cli.main import main


def _page(capsys, *argv) -> str:
    assert main(["explain", *argv]) == 0
    return capsys.readouterr().out


def test_key_page_has_type_defaults_tree_and_rules(capsys):
    out = _page(capsys, "actor_rollout_ref.rollout.n")
    assert out.startswith("actor_rollout_ref.rollout.n\n  responses per prompt")
    assert "  type:        integer, >= 1, <= 4096\n" in out  # MAX_SAMPLES (fsdpcfg/schema/_base.py)
    # the default run's value (algorithm=grpo sets it), not verl's (issue 13 item 2)
    assert "  default:     8  (algorithm=grpo (conf/algorithm/grpo.yaml:" in out and "  verl 0.9.1:  1\n" in out
    assert "recipes/qwen_grpo.yaml:" in out and "conf/config.yaml:" in out
    rules = {rid for rid, _ in keyinfo.rules_reading("actor_rollout_ref.rollout.n")}
    assert "FC601" in rules
    for rid in rules:
        assert f"  {rid}  " in out


def test_key_page_allowed_values_and_native_launcher(capsys):
    out = _page(capsys, "actor_rollout_ref.actor.strategy")
    assert "  allowed:     fsdp, fsdp2, fsdp_turbo, megatron, veomni, torchtitan, automodel\n" in out
    out = _page(capsys, "actor_rollout_ref.rollout.gpu_memory_utilization")
    assert "not implemented by the native launcher" in out and "launcher=verl" in out


def test_key_page_current_value_with_overrides(capsys):
    out = _page(capsys, "actor_rollout_ref.rollout.n", "+recipe=qwen_grpo", "actor_rollout_ref.rollout.n=8")
    assert "with +recipe=qwen_grpo actor_rollout_ref.rollout.n=8:" in out
    assert "actor_rollout_ref.rollout.n = 8    (command line `actor_rollout_ref.rollout.n=8`)" in out


def test_section_page_lists_its_keys(capsys):
    out = _page(capsys, "actor_rollout_ref.rollout")
    assert "  kind:        section" in out
    assert "  actor_rollout_ref.rollout.n " in out and "responses per prompt" in out


def test_verl_only_key_page(capsys):
    out = _page(capsys, "critic.fsdp.qat.enable")  # the critic's batch keys are in the schema (issue 12.2)
    assert "verl 0.9.1 key the schema does not model" in out
    out = _page(capsys, "critic.ppo_mini_batch_size")
    assert "${oc.select:actor_rollout_ref.actor.ppo_mini_batch_size,256}" in out


def test_rule_page_runs_its_example(capsys):
    out = _page(capsys, "FC601")
    assert out.startswith("FC601  group-relative advantage estimators need rollout.n >= 2  (error)")
    assert "Source: verl/trainer/ppo/core_algos.py" in out
    assert "defined in: fsdpcfg/rules/algorithm.py:" in out
    assert "fsdpcfg check algorithm.adv_estimator=grpo actor_rollout_ref.rollout.n=1" in out
    assert "ERROR FC601: algorithm.adv_estimator = grpo is group-relative but actor_rollout_ref.rollout.n = 1" in out
    assert "    -> set actor_rollout_ref.rollout.n to 2 or more" in out


def test_rule_ids_are_case_insensitive_and_no_run_skips_the_check(capsys):
    out = _page(capsys, "fc201", "--no-run")
    assert out.startswith("FC201  ") and "ERROR FC201" not in out


def test_every_rule_has_a_page(capsys):
    for rid in ruleinfo.rules():
        out = _page(capsys, rid, "--no-run")
        assert out.startswith(f"{rid}  ")


def test_example_placeholders_name_shipped_model_folders():
    assert ruleinfo.model_folder("Qwen/Qwen-7B").name == "Qwen__Qwen-7B"
    assert ruleinfo.model_folder("Llama-2-7b-hf").name == "meta-llama__Llama-2-7b-hf"
    rule = ruleinfo.rules()["FC402"]
    got = ruleinfo.example_overrides(rule)
    assert got[0] == "+recipe=qwen_grpo" and got[1].endswith("model_configs/Qwen__Qwen-7B")


@pytest.mark.parametrize(
    "topic, message",
    [
        ("actor_rollout_ref.rolout.n", "did you mean actor_rollout_ref.rollout.n"),
        ("FC299", "did you mean FC201"),
        ("zzz_nothing", "no config key or rule `zzz_nothing`"),
    ],
)
def test_unknown_topics_exit_2_with_suggestions(capsys, topic, message):
    assert main(["explain", topic]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_free_form_entry_names_its_mapping(capsys):
    out = _page(capsys, "actor_rollout_ref.model.override_config.rope_scaling")
    assert "an entry of the free-form mapping actor_rollout_ref.model.override_config" in out
