"""Hand-over to verl for each of verl's engines: the written config extends the engine's own composition, and
the keys verl composes itself (its untouched defaults) are left to verl, interpolations live."""

from __future__ import annotations

import pytest
import yaml

from fsdpcfg.compose import compose
from fsdpcfg.errors import ConfigError
from fsdpcfg.launch.verl import build_verl_invocation

BASE = ["+recipe=qwen_grpo", "launcher=verl", "rollout=vllm"]


def _doc(tmp_path, *extra):
    inv = build_verl_invocation(compose(BASE + list(extra)), tmp_path)
    return inv, yaml.safe_load(inv.yaml_text)


@pytest.mark.parametrize(
    "engine,defaults",
    [
        ("fsdp2", ["ppo_trainer", "_self_"]),
        ("megatron", ["ppo_megatron_trainer", "_self_"]),
        ("veomni", ["ppo_trainer", {"override model_engine": "veomni"}, "_self_"]),
        ("torchtitan", ["ppo_trainer", {"override model_engine": "torchtitan"}, "_self_"]),
    ],
)
def test_export_extends_the_engines_composition(tmp_path, engine, defaults):
    inv, doc = _doc(tmp_path, f"engine={engine}")
    assert doc["defaults"] == defaults and inv.entry_point == "verl.trainer.main_ppo"
    assert doc["actor_rollout_ref"]["actor"]["strategy"] == engine
    if engine != "fsdp2":
        assert "fsdp_config" not in doc["actor_rollout_ref"]["actor"]  # fsdpcfg's FSDP defaults left out


def test_untouched_verl_defaults_are_left_to_verl(tmp_path):
    _, doc = _doc(
        tmp_path, "algorithm.adv_estimator=gae", "critic.optim.lr=2e-5", "critic.ppo_micro_batch_size_per_gpu=4"
    )
    # only what fsdpcfg's files and the command line set: verl keeps critic.ppo_mini_batch_size following the
    # actor's through its own ${oc.select:...}
    assert doc["critic"] == {"strategy": "fsdp2", "optim": {"lr": 2e-5}, "ppo_micro_batch_size_per_gpu": 4}
    assert "transfer_queue" not in doc and "global_profiler" not in doc


@pytest.mark.parametrize(
    "override,engine",
    [("model_engine=megatron", "megatron"), ("model_engine=veomni", "veomni"), ("model_engine=dp", "fsdp2")],
)
def test_verls_model_engine_override_selects_the_engine(override, engine):
    c = compose(["+recipe=qwen_grpo", override])
    assert c.choices["engine"] == engine
    assert c.to_container()["model_engine"] == {"fsdp2": "dp"}.get(engine, engine)


def test_unknown_model_engine_names_verls_options():
    with pytest.raises(ConfigError) as e:
        compose(["+recipe=qwen_grpo", "model_engine=mindspeed"])
    assert e.value.key == "model_engine" and "dp, megatron, veomni, torchtitan" in e.value.fix
