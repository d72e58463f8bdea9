"""What verl 0.9.1, asked as the oracle of generated overrides (tests/check/verl_opinion/
test_generated_overrides_oracle.py), showed fsdpcfg check had wrong, held here without verl: one check of a verl
command that carries each override.

* a field of verl's config dataclasses that its YAML leaves out is verl's key (``+`` adds it; ``key=`` is FC105),
  was a false FC102, unless verl sets the field itself (then FC102 says where);
* ``trainer.save_freq``/``test_freq`` at 0 or below, and a negative ``fsdp_size``, are what verl reads as -1 (were
  false FC103);
* the keys below the nsys option mappings are nsys's (were false FC102);
* a name of a dict field where verl has none, or below a section of its with a dataclass of its own, was silently
  accepted (verl ignores it or crashes on it);
* a deleted key whose ``${oc.select:...,[]}`` default verl's in-place resolve cannot take stopped verl silently.
"""

from __future__ import annotations

import pytest

from fsdpcfg import verlref
from fsdpcfg.check import check_overrides
from fsdpcfg.schema import keys as K

BASE = ["launcher=verl", "trainer=gpu_8x", "engine=fsdp", "patches=remove_padding", "actor_rollout_ref.model.path=/m"]
ACCEPTED = [
    "+critic.optim.grad_clip=0.5",
    "+actor_rollout_ref.model.load_tokenizer=true",
    "+critic.fsdp.use_dynamic_bsz=true",
    "+global_profiler.global_tool_config.nsys.controller_nsight_options.gpu-metrics-devices=all",
    "trainer.save_freq=-2",
    "trainer.test_freq=0",
    "actor_rollout_ref.actor.fsdp_config.fsdp_size=-2",
]
REFUSED = {
    "actor_rollout_ref.rollout.repetition_penalty=1.0": "FC105",  # a dataclass field: verl needs the + too
    "+actor_rollout_ref.model.local_path=/x": "FC102",  # HFModelConfig.__post_init__ sets it
    "+actor_rollout_ref.ref.use_dynamic_bsz=false": "FC102",  # the worker sets it from log_prob_use_dynamic_bsz
    "+critic.qat.group_size=16": "FC102",  # verl's qat is critic.fsdp.qat
    "+actor_rollout_ref.actor.fsdp_config.qat.ode=1": "FC102",  # QATEngineConfig has no ode: verl crashes
    "+distillation.teacher_models.teacher_model.inference.limt_images=1": "FC102",  # a RolloutConfig there
    "+actor_rollout_ref.actor.qat.activationobserver=1": "FC102",  # actor.qat is a QATConfig (no _target_), no dict
    "+actor_rollout_ref.actor.megatron.full_determinism=true": "FC113",  # a field of Megatron's only
    # free below override_transformer_config, but that mapping is Megatron's: FSDPActorConfig has no `megatron`
    "+actor_rollout_ref.actor.megatron.override_transformer_config.foo_bar=1": "FC113",
    "~actor_rollout_ref.actor.profiler.tool_config": "FC100",  # rollout.profiler's oc.select list defaults
    "actor_rollout_ref.ref.fsdp_config.fsdp_size=0": "FC103",  # verl divides the world size by it
}


def _key(o: str) -> str:
    return o.lstrip("+~").split("=", 1)[0]


@pytest.fixture(scope="module")
def findings():
    return check_overrides([*BASE, *ACCEPTED, *REFUSED])


def _on(findings, key: str) -> list:
    return [f for f in findings if f.severity == "error" and any(k == key or k.startswith(key + ".") for k in f.keys)]


@pytest.mark.parametrize("override", ACCEPTED)
def test_what_verl_accepts_and_reads_is_no_error(findings, override):
    assert not _on(findings, _key(override)), [(f.rule, f.message) for f in _on(findings, _key(override))]


@pytest.mark.parametrize("override", list(REFUSED))
def test_what_verl_refuses_or_ignores_is_an_error(findings, override):
    rules = {f.rule for f in _on(findings, _key(override))}
    assert REFUSED[override] in rules, rules


def test_the_messages_say_where_verl_sets_it_and_what_stops_it(findings):
    (f,) = [f for f in _on(findings, "actor_rollout_ref.model.local_path") if f.rule == "FC102"]
    assert "verl 0.9.1 sets itself (HFModelConfig.__post_init__" in f.message
    fc100 = [f for f in _on(findings, "actor_rollout_ref.actor.profiler.tool_config") if f.rule == "FC100"]
    assert {f.keys[0] for f in fc100} == {
        "actor_rollout_ref.rollout.profiler.tool_config.npu.contents",
        "actor_rollout_ref.rollout.profiler.tool_config.torch.contents",
    }
    assert "OmegaConf.resolve" in fc100[0].message


def test_the_native_launcher_resolves_without_verl_so_the_deletion_is_not_fc100():
    found = check_overrides(["+recipe=qwen_grpo", "~actor_rollout_ref.actor.profiler.tool_config"])
    assert not [f for f in found if f.rule == "FC100"]


def test_dataclass_fields_are_data_read_from_verl():
    fields = verlref.fields("ppo")
    assert {"critic.optim.grad_clip", "algorithm.gdpo_reward_keys", "actor_rollout_ref.model.local_path"} <= fields
    assert not verlref.fields("ppo_trainer") & verlref.keys("ppo_trainer")  # only what its YAML leaves out
    assert verlref.value_kinds("critic.optim.grad_clip") == {"float", "null"}
    assert K.classify("critic.optim.grad_clip") == "verl"
    assert K.set_by_verl("actor_rollout_ref.model.tokenizer.x") is not None  # below a field verl sets
    engines = K._engine_fields()  # every engine section's batch fields, those an engine lacks included
    for pattern in set(K.VERL_SET_BY_VERL) - set(engines):  # every other pattern names fields verl has
        assert any(K.fnmatch.fnmatchcase(f, pattern) for f in verlref.fields("ppo")), pattern
    assert sum(key in verlref.fields("ppo") for key in engines) >= 20
