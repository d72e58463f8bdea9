"""Every rule's example (shown by `fsdpcfg explain RULE_ID`) must trigger that rule, at the rule's severity."""

from __future__ import annotations

import pytest

from fsdpcfg.catalog import ruleinfo

RULES = ruleinfo.rules()


@pytest.mark.parametrize("rule_id", sorted(r for r, rule in RULES.items() if rule.example))
def test_example_triggers_its_rule(rule_id):
    rule = RULES[rule_id]
    run = ruleinfo.run_example(rule)
    assert run is not None and run.error is None, run.error if run else "no example"
    assert run.own, (
        f"{rule_id} example {ruleinfo.example_overrides(rule)} did not trigger {rule_id}; "
        f"it gave {[f.rule for f in run.others]}"
    )
    assert any(f.severity == rule.severity for f in run.own)


#: Rules whose trigger cannot be built from the shipped real model configs, with the reason.
NO_EXAMPLE = {
    # every architecture of the shipped real configs is in vLLM's and SGLang's native tables; the rule is
    # exercised with a synthetic config.json in tests/rules/test_parallel_model.py
    "FC406": "needs an architecture outside both engines' tables",
    # a finding about a run script's command: tests/check/scripts/other_entries.sh triggers it
    "FC125": "needs a run script (examples are command-line overrides)",
    "FC132": "needs a run script (a `\\ # comment` continuation cuts a command of the script)",
    "FC133": "needs a run script (saved with Windows line ends)",
    "FC134": "needs a run script (one that stops before its verl command)",
    "FC708": "needs a run script (a removed trainer module is named on its command line, not in a config)",
    # no shipped real config names a class transformers lacks, or caps attention logits (no Gemma 2 config.json
    # is available offline): both are exercised on edited copies of the real Llama-2 config and on the
    # tiny-unknown-arch asset in tests/rules/test_architecture_rules.py
    "FC470": "needs a config.json whose architectures names a class no transformers module defines",
    "FC471": "needs a config.json with attn_logit_softcapping (Gemma 2)",
    # every shipped config.json lists one architecture; tests/rules/test_verl_values.py writes one that does not
    "FC416": "needs a config.json without exactly one architecture",
    "FC420": "needs a config.json of a model that is not a causal LM (tests/rules/test_model_traps.py)",
    "FC421": "needs a model folder without weights (tests/rules/test_model_traps.py)",
    "FC422": "needs a tokenizer whose ids pass the model's vocab_size (tests/rules/test_model_traps.py)",
}


def test_every_error_and_warning_rule_has_an_example():
    missing = sorted(
        r
        for r, rule in RULES.items()
        if not rule.example and rule.severity != "info" and r not in NO_EXAMPLE and rule.stage == "check"
    )
    assert not missing, f"rules without a failing example for `fsdpcfg explain`: {missing}"


def test_launch_time_machine_checks_are_in_the_table_but_not_run_by_check():
    """FC850-FC853 check the machine a verl run starts on: `fsdpcfg explain` knows them, `fsdpcfg check` (which
    must accept a cluster config on a laptop) does not run them, the launcher does."""
    from fsdpcfg.check import check_overrides
    from fsdpcfg.compose import compose
    from fsdpcfg.launch import verl_launch
    from fsdpcfg.rules.context import Context

    # FC731 (the run folder's contents) is the other launch-time check: tests/launch/test_run_folder_claim.py
    assert {r for r, rule in RULES.items() if rule.stage == "launch"} == {"FC731", "FC850", "FC851", "FC852", "FC853"}
    gpu = ["+recipe=qwen_grpo", "launcher=verl", "rollout=vllm"]
    assert not [f for f in check_overrides(gpu) if f.rule.startswith("FC85")]
    # the table's entry reports what launch_findings reports for this machine (no GPU here: FC850)
    c = compose(gpu)
    ctx = Context(c, c.to_container())
    direct = {f.rule for f in verl_launch.launch_findings(ctx.cfg)}
    via_table = {f.rule for rid in ("FC850", "FC851", "FC852", "FC853") for f in RULES[rid].fn(ctx)}
    assert via_table == direct
