"""verl 0.9.1 as the oracle of issue 20 items 2 and 6, asked with its own Hydra compose of ``ppo_trainer`` and the
overrides (then ``validate_config`` and the dataclasses), all in one process (verl's worker, kept by
:func:`fsdpcfg.check.verl_opinion.run_worker` for the whole module and started by the first fixture):

* every override ``fsdpcfg check`` reports as refused when it is given with others (item 2) is refused by verl
  on its own, and the overrides it composed around are accepted by verl;
* every key ``fsdpcfg check`` proposes for a misspelled one (item 6), with the user's value, is one verl accepts.
"""

from __future__ import annotations

import importlib.util

import pytest
import yaml
from _overrides_oracle_worker import VALID_ONE_GPU

from fsdpcfg.check import check_overrides, compose_for_check
from fsdpcfg.check.verl_opinion import verl_opinions_of_exports
from fsdpcfg.launch.verl import VERL_SEARCHPATH
from fsdpcfg.schema import keys as K

pytestmark = [
    pytest.mark.xdist_group("verl_refused_keys"),  # one worker: the shared fixture (tests/conftest.py)
    pytest.mark.verl,
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("verl") is None, reason="verl 0.9.1 is not installed"),
]

#: what verl's own example scripts set so that validate_config passes on one GPU (the overrides under test are added;
#: the model path is the tiny offline model's, added by the fixture)
BASE = VALID_ONE_GPU
REFUSED = ["trainer.nnode=2", "~trainer.nope", "+actor_rollout_ref.actor.ppo_epochs=2", "actor_rollout_ref.rolout.n=4"]
#: misspelled keys with values, as public verl scripts write them
MISSPELLED = {
    "trainer.nnode": 2,
    "rollout.n": 8,
    "actor_rollout_ref.actor.policy_loss.tau_pos": 0.5,
    "actor_rollout_ref.actor.ppo_micro_batch_size_pergpu": 2,
    "data.max_prompt_len": 512,
    "actor_rollout_ref.rollout.gpu_memory_utilisation": 0.5,
}


@pytest.fixture(scope="module")
def valid(tiny_model_path):
    return [*BASE, f"actor_rollout_ref.model.path={tiny_model_path}"]


@pytest.fixture(scope="module")
def verl_dir(tmp_path_factory):
    from fsdpcfg.check.verl_opinion import start_worker

    start_worker()  # verl's import runs while the tests compose and check their overrides
    d = tmp_path_factory.mktemp("verl_config")
    (d / "config.yaml").write_text(
        yaml.safe_dump({"defaults": ["ppo_trainer", "_self_"], "hydra": {"searchpath": [VERL_SEARCHPATH]}})
    )
    return d


def _text(v) -> str:
    return str(v).lower() if isinstance(v, bool) else str(v)


def test_verl_refuses_each_override_fsdpcfg_reports_refused_and_accepts_the_rest(verl_dir, valid):
    composed, failed = compose_for_check(["+recipe=qwen_grpo", *REFUSED])
    assert failed == []
    reported = {f.keys[0] for f in composed.refused} | set(composed.plus_refused)
    assert reported == {
        "trainer.nnode",
        "trainer.nope",
        "actor_rollout_ref.actor.ppo_epochs",
        "actor_rollout_ref.rolout.n",
    }
    jobs = [("ppo", verl_dir, valid + [o]) for o in REFUSED] + [("ppo", verl_dir, valid)]
    ops = verl_opinions_of_exports(jobs)
    for o, op in zip(REFUSED, ops, strict=False):
        assert not op.accepted and op.stage == "compose", (o, op)
    assert ops[-1].accepted, ops[-1]  # what was left composes and validates in verl


def test_every_proposal_is_a_key_verl_accepts_with_the_users_value(verl_dir, valid):
    proposed = {}
    for key, value in MISSPELLED.items():
        real = K.propose(key, value)
        assert real is not None, key
        proposed[real] = value
        # the finding's fix carries the same proposal
        found = check_overrides(["+recipe=qwen_grpo", f"+{key}={_text(value)}"])
        assert any(real in f.keys for f in found if f.rule in ("FC101", "FC102")), (key, real)
    ops = verl_opinions_of_exports([("ppo", verl_dir, valid + [f"{k}={_text(v)}"]) for k, v in proposed.items()])
    for (k, v), op in zip(proposed.items(), ops, strict=True):
        assert op.accepted, (k, v, op.stage, op.error)


def test_a_free_mapping_of_another_engine_is_refused_by_both(verl_dir, valid):
    """Keys below Megatron's ``override_transformer_config`` are free (Megatron's TransformerConfig takes them),
    but on verl's FSDP composition the whole ``megatron`` section is foreign: FC113, and verl refuses it."""
    override = "+actor_rollout_ref.actor.megatron.override_transformer_config.foo_bar=1"
    found = check_overrides(["+recipe=qwen_grpo", "launcher=verl", "rollout=vllm", override])
    (f,) = [f for f in found if f.rule == "FC113"]
    assert "is a section of verl's ppo_megatron_trainer, not of ppo_trainer" in f.message
    assert "engine=megatron" in f.fix
    (op,) = verl_opinions_of_exports([("ppo", verl_dir, valid + [override])])
    assert not op.accepted, op
