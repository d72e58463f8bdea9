"""The registries of the two extension points (fsdpcfg/native/backends.py) and the run-kind record
(fsdpcfg/runkind.py): one claim per name, and every table the other stages read is derived from them."""

from __future__ import annotations

import typing

import pytest

from fsdpcfg import runkind
from fsdpcfg.errors import ConfigError
from fsdpcfg.native import backends, support
from fsdpcfg.native.backends import Engine, Registry, RegistryConflict, RolloutBackend


def test_a_second_claim_on_a_name_is_rejected_naming_both():
    reg: Registry[Engine] = Registry("engine")
    reg.register(Engine("fsdp3", "one", fsdp=True))
    with pytest.raises(RegistryConflict, match="engine 'fsdp3' is registered twice") as e:
        reg.register(Engine("fsdp3", "two", fsdp=True))
    assert "'one'" in str(e.value) and "'two'" in str(e.value)
    assert reg.names() == ("fsdp3",)
    with pytest.raises(RegistryConflict, match="rollout backend 'hf'"):
        backends.ROLLOUTS.register(RolloutBackend("hf", "again", launchers=("native",), engine=False))


def test_the_registered_backends_and_engines():
    assert backends.ROLLOUTS.names() == ("hf", "vllm", "sglang", "trtllm")
    assert backends.native_rollouts() == ("hf",) and backends.engine_rollouts() == ("vllm", "sglang", "trtllm")
    assert backends.ENGINES.names() == ("fsdp", "fsdp2", "fsdp_turbo", "megatron", "veomni", "torchtitan", "automodel")
    assert backends.fsdp_engines() == backends.native_engines() == ("fsdp", "fsdp2")
    assert backends.fsdp_config_engines() == ("fsdp", "fsdp2", "fsdp_turbo")  # verl's FSDPEngineConfig.strategy
    with pytest.raises(ValueError, match="'vllm' has no native implementation"):
        backends.ROLLOUTS.get("vllm").load()  # type: ignore[union-attr]
    assert backends.ROLLOUTS.get(None) is None and backends.ROLLOUTS.get("nope") is None


def test_every_table_about_backends_and_engines_is_derived_from_the_registries():
    from fsdpcfg.cli.export import NATIVE_ONLY_ROLLOUTS
    from fsdpcfg.rules._common import ENGINE_ROLLOUTS, FSDP_STRATEGIES
    from fsdpcfg.runinfo.audit import ROLLOUT_BACKENDS
    from fsdpcfg.schema._base import FSDPEngineStrategy, FSDPStrategy, Strategy
    from fsdpcfg.schema.rollout import BACKEND_LAUNCHERS, RolloutName

    assert typing.get_args(RolloutName) == ("hf", "vllm", "sglang", "trtllm")
    assert typing.get_args(Strategy) == backends.ENGINES.names()
    assert typing.get_args(FSDPStrategy) == ("fsdp", "fsdp2")
    assert typing.get_args(FSDPEngineStrategy) == backends.fsdp_config_engines()
    assert BACKEND_LAUNCHERS == {"hf": ("native",), "vllm": ("verl",), "sglang": ("verl",), "trtllm": ("verl",)}
    assert NATIVE_ONLY_ROLLOUTS == ("hf",) and ENGINE_ROLLOUTS == ("vllm", "sglang", "trtllm")
    assert FSDP_STRATEGIES == ("fsdp", "fsdp2")
    assert ROLLOUT_BACKENDS == {"HFRollout": "hf", "LoraHFRollout": "hf"}
    assert support.NATIVE_VALUES["actor_rollout_ref.rollout.name"] == ("hf",)
    assert support.NATIVE_VALUES["actor_rollout_ref.actor.strategy"] == ("fsdp", "fsdp2")


def test_the_hf_builder_is_the_registered_one():
    build = backends.ROLLOUTS.get("hf").build  # type: ignore[union-attr]
    assert build == "fsdpcfg.train.rollout.hf_build:build_hf_rollout"
    module, _, attr = build.partition(":")
    import ast
    from pathlib import Path

    import fsdpcfg

    src = Path(fsdpcfg.__file__).parent.joinpath(*module.split(".")[1:]).with_suffix(".py").read_text()
    assert attr in {n.name for n in ast.walk(ast.parse(src)) if isinstance(n, ast.FunctionDef)}


def test_run_kind_records():
    assert list(runkind.KINDS) == ["ppo", "sft"]
    assert runkind.of({"fsdpcfg": {"kind": "sft"}}) is runkind.SFT
    assert runkind.of({"fsdpcfg": {}}) is runkind.PPO and runkind.of({}) is runkind.PPO
    with pytest.raises(ConfigError) as e:
        runkind.of({"fsdpcfg": {"kind": "dpo"}})
    assert e.value.key == "fsdpcfg.kind" and "ppo, sft" in (e.value.fix or "")
    cfg = {"fsdpcfg": {"kind": "sft"}, "model": {"path": "/m"}}
    assert runkind.model_of(cfg) == {"path": "/m"}
    assert runkind.model_of({"actor_rollout_ref": {"model": {"path": "/r"}}}) == {"path": "/r"}
    from fsdpcfg.plan.sft import make_sft_plan
    from fsdpcfg.schema.root import RunConfig
    from fsdpcfg.schema.validate import parse_run_config

    assert runkind.SFT.load("planner") is make_sft_plan
    assert runkind.PPO.load("schema") is RunConfig and runkind.PPO.load("parse") is parse_run_config
    with pytest.raises(ValueError, match="names no set field"):
        runkind.SFT.load("memory")  # SFT has no memory estimate
    with pytest.raises(ValueError):
        runkind.PPO.load("entry")  # a module name, not a "module:attr" to load


def test_each_kind_names_modules_and_objects_that_exist():
    import importlib.util

    from fsdpcfg import paths

    for kind in runkind.KINDS.values():
        assert importlib.util.find_spec(kind.entry) is not None and importlib.util.find_spec(kind.entry + ".__main__")
        assert (paths.conf_dir(kind.name) / "config.yaml").is_file()
        for part in ("schema", "parse", "planner"):
            assert callable(kind.load(part))
    assert paths.KINDS == {"ppo": ".", "sft": "sft"}
