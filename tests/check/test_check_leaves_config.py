"""Checking a composed config leaves it as it was: the run checks the config (``check_or_refuse``) and then launches
that same object (``run_config``), so a rule that changed it would launch something other than what was checked.
The property test relies on it too: its run path is handed the check's composed config
(``tests/check/property_inputs.py``, ``_OneCompose``)."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from fsdpcfg.check import check_config, compose_for_check


def _state(composed) -> tuple[str, ...]:
    return (
        OmegaConf.to_yaml(composed.cfg),
        repr(composed.choices),
        repr(composed.refused),
        repr(composed.plus_needed),
        repr(composed.plus_refused),
        repr(composed.added),
        repr(composed.deleted),
        repr(vars(composed.provenance)),
    )


@pytest.mark.parametrize(
    "overrides",
    [
        ["+recipe=qwen_grpo"],
        [
            "+recipe=arith_grpo",
            "data.train_batch_size=3",
            "trainer.nnode=2",
            "~trainer.nope",
        ],  # refused, composed around
        ["+recipe=qwen_sft", "optim.lr=${data.max_length}"],
        ["+recipe=qwen_grpo", "launcher=verl", "+foo.bar=1", "trainer.logger=[console,wandb]"],
        ["+recipe=qwen_grpo", "actor_rollout_ref.model.path=hf_abcdefghijklmnopqrstuvwxyz0123456789"],  # a secret
    ],
)
def test_check_config_leaves_the_composed_config_as_it_was(overrides):
    composed, failed = compose_for_check(overrides)
    assert composed is not None and failed == []
    before = _state(composed)
    findings = check_config(composed)
    assert _state(composed) == before
    assert findings == check_config(composed)  # and checking it again finds the same
