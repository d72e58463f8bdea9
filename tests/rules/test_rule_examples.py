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
    assert run.own, (f"{rule_id} example {ruleinfo.example_overrides(rule)} did not trigger {rule_id}; "
                     f"it gave {[f.rule for f in run.others]}")
    assert any(f.severity == rule.severity for f in run.own)


#: Rules whose trigger cannot be built from the shipped real model configs, with the reason.
NO_EXAMPLE = {
    # every architecture of the shipped real configs is in vLLM's and SGLang's native tables; the rule is
    # exercised with a synthetic config.json in tests/rules/test_parallel_model.py
    "FC406": "needs an architecture outside both engines' tables",
}


def test_every_error_and_warning_rule_has_an_example():
    missing = sorted(r for r, rule in RULES.items()
                     if not rule.example and rule.severity != "info" and r not in NO_EXAMPLE)
    assert not missing, f"rules without a failing example for `fsdpcfg explain`: {missing}"
