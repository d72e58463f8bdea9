"""Composition: recipe + groups + overrides in verl's key names, provenance, and errors without tracebacks."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import fsdpcfg
from fsdpcfg.check.key_advice import KEY_ADVICE
from fsdpcfg.compose import GROUPS, ComposeError, available_options, compose, groups
from fsdpcfg.errors import ConfigError, UsageError


def test_groups_come_from_the_root_defaults_list():
    assert groups("ppo") == (
        "engine",
        "patches",
        "rollout",
        "algorithm",
        "model",
        "data",
        "reward",
        "trainer",
        "launcher",
    )
    assert GROUPS == groups("ppo")
    assert "fsdp2" in available_options("engine") and "fsdp" in available_options("engine")
    assert "qwen_grpo" in available_options("recipe")


def test_recipe_selects_groups_and_sets_values():
    c = compose(["+recipe=qwen_grpo"])
    assert c.kind == "ppo"
    assert c.choices["recipe"] == "qwen_grpo"
    assert c.choices["engine"] == "fsdp2" and c.choices["trainer"] == "cpu"
    cfg = c.to_container()
    assert cfg["actor_rollout_ref"]["actor"]["strategy"] == "fsdp2"
    # interpolations in verl's style resolve: the FSDP config follows the actor strategy
    assert cfg["actor_rollout_ref"]["actor"]["fsdp_config"]["strategy"] == "fsdp2"
    assert cfg["actor_rollout_ref"]["rollout"]["prompt_length"] == cfg["data"]["max_prompt_length"]
    assert cfg["trainer"]["n_gpus_per_node"] == 2 and cfg["trainer"]["device"] == "cpu"
    assert "hydra" not in cfg


def test_command_line_beats_group_beats_recipe_order():
    c = compose(["+recipe=qwen_grpo", "engine=fsdp", "data.train_batch_size=8"])
    cfg = c.to_container()
    assert cfg["actor_rollout_ref"]["actor"]["strategy"] == "fsdp"
    assert cfg["data"]["train_batch_size"] == 8


def test_provenance_names_file_line_group_and_command_line():
    c = compose(["+recipe=qwen_grpo", "data.max_response_length=16"])
    src = c.provenance.source_of
    assert str(src("data.train_batch_size")).startswith("recipe=qwen_grpo (recipes/qwen_grpo.yaml:")
    assert str(src("actor_rollout_ref.actor.strategy")).startswith("engine=fsdp2 (conf/engine/fsdp2.yaml:")
    assert str(src("data.max_response_length")) == "command line `data.max_response_length=16`"
    assert str(src("actor_rollout_ref.actor.clip_ratio")).startswith("conf/config.yaml:")
    # the line number points at the key itself
    path, line = str(src("data.train_batch_size")).split("(")[1].rstrip(")").split(":")
    text = open(path).read().splitlines()[int(line) - 1]
    assert text.strip().startswith("train_batch_size:")


def test_plus_and_tilde_are_recorded():
    c = compose(
        [
            "+recipe=qwen_grpo",
            "+actor_rollout_ref.rollout.max_num_seqs_x=3",
            "~actor_rollout_ref.rollout.tensor_model_parallel_size",
        ]
    )
    assert c.added == ["actor_rollout_ref.rollout.max_num_seqs_x"]
    assert c.deleted == ["actor_rollout_ref.rollout.tensor_model_parallel_size"]
    assert "tensor_model_parallel_size" not in c.to_container()["actor_rollout_ref"]["rollout"]


def test_unknown_key_gets_did_you_mean():
    with pytest.raises(ConfigError) as e:
        compose(["+recipe=qwen_grpo", "actor_rollout_ref.actor.ppo_micro_batch_size_pergpu=4"], keys=KEY_ADVICE)
    assert e.value.key == "actor_rollout_ref.actor.ppo_micro_batch_size_pergpu"
    assert "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu" in e.value.fix
    assert "Traceback" not in str(e.value)


def test_verl_key_outside_the_tree_says_how_to_add_it():
    with pytest.raises(ConfigError) as e:
        compose(["actor_rollout_ref.rollout.max_num_seqs_nope=1"], keys=KEY_ADVICE)
    # a key verl's dataclass reads without listing it in its YAML needs `+`, in verl as here
    with pytest.raises(ConfigError) as e:
        compose(["critic.fsdp.mixed_precision=x"], keys=KEY_ADVICE)
    assert "+critic.fsdp.mixed_precision=VALUE" in e.value.fix


def test_without_the_schemas_key_advice_an_unknown_key_is_named_and_nothing_proposed():
    """Composition comes before the schema: the did-you-mean and the `+` a key needs are the schema's answers,
    handed in by the caller (KEY_ADVICE); without them the error still names the key and the override."""
    for override in ("actor_rollout_ref.actor.ppo_micro_batch_size_pergpu=4", "critic.fsdp.mixed_precision=x"):
        with pytest.raises(ComposeError) as e:
            compose(["+recipe=qwen_grpo", override])
        assert e.value.key == override.split("=")[0] and e.value.override == override
        assert e.value.message == "is not a key of the config" and e.value.reason == "unknown"
        assert "did you mean" not in e.value.fix and "VALUE" not in e.value.fix


def test_every_caller_outside_compose_hands_it_the_schemas_key_advice():
    """Without ``keys=`` an unknown key gets no did-you-mean and no `+`: every call of compose() outside the compose
    stage (commands, check, sweeps, the doctor) passes KEY_ADVICE, so no command loses them by accident."""
    pkg = Path(fsdpcfg.__file__).parent
    missing = []
    for path in sorted(pkg.rglob("*.py")):
        if path.relative_to(pkg).parts[0] == "compose":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {
            a.asname or a.name
            for n in ast.walk(tree)
            if isinstance(n, ast.ImportFrom) and n.module == "fsdpcfg.compose"
            for a in n.names
            if a.name == "compose"
        }
        missing += [
            f"{path.relative_to(pkg)}:{n.lineno}"
            for n in ast.walk(tree)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in names
            if not any(k.arg == "keys" for k in n.keywords)
        ]
    assert missing == []


def test_the_tree_starts_from_verls_composition():
    # every key verl's ppo_trainer defines is in the tree with verl's default: key=value works, + is refused
    c = compose(["+recipe=qwen_grpo", "critic.optim.lr=3e-6", "actor_rollout_ref.rollout.multi_turn.enable=true"])
    cfg = c.to_container()
    assert cfg["critic"]["optim"]["lr"] == 3e-6 and cfg["actor_rollout_ref"]["rollout"]["multi_turn"]["enable"]
    # verl's interpolations are kept: the critic's mini batch follows the recipe's actor mini batch (4)
    assert c.to_container(resolve=False)["critic"]["ppo_mini_batch_size"].startswith("${oc.select:")
    assert cfg["critic"]["ppo_mini_batch_size"] == cfg["actor_rollout_ref"]["actor"]["ppo_mini_batch_size"] == 4
    assert cfg["transfer_queue"]["enable"] is False and cfg["model_engine"] == "dp"
    assert str(c.provenance.source_of("critic.optim.weight_decay")) == "verl 0.9.1 default"
    assert "verl_base" not in "".join(c.choices)
    with pytest.raises(ConfigError) as e:
        compose(["+recipe=qwen_grpo", "+critic.optim.lr=3e-6"])
    assert "already exists" in e.value.message


def test_engine_megatron_is_verls_megatron_composition():
    c = compose(["+recipe=qwen_grpo", "engine=megatron"])
    cfg = c.to_container()
    actor = cfg["actor_rollout_ref"]["actor"]
    assert (
        cfg["model_engine"] == "megatron"
        and actor["strategy"] == "megatron"
        and cfg["critic"]["strategy"] == "megatron"
    )
    assert actor["megatron"]["tensor_model_parallel_size"] == 1
    # fsdpcfg's own FSDP defaults are left out of a Megatron tree
    assert "fsdp_config" not in actor and "fsdp_config" not in cfg["actor_rollout_ref"]["ref"]
    assert "actor_rollout_ref.actor.fsdp_config.dtype" in c.pruned


def test_sft_engine_megatron_is_verls_sft_megatron_composition():
    """SFT engine=megatron is verl's sft_trainer_engine with engine=megatron optim=megatron: every engine.*/optim.*
    key of verl's Megatron configs with verl's default, none of fsdpcfg's FSDP engine keys."""
    from fsdpcfg import verlref
    from fsdpcfg.compose import verl_base

    c = compose(["+recipe=qwen_sft", "engine=megatron", "launcher=verl"])
    cfg = c.to_container()
    engine, optim = cfg["engine"], cfg["optim"]
    assert verl_base.composition_of(cfg, "sft") == "sft_megatron_trainer"
    assert engine["_target_"] == "verl.workers.config.McoreEngineConfig"
    assert optim["_target_"] == "verl.workers.config.McoreOptimizerConfig"
    assert (engine["tensor_model_parallel_size"], engine["pipeline_model_parallel_size"]) == (1, 1)
    assert engine["context_parallel_size"] == 1
    assert engine["override_transformer_config"]["attention_backend"] == "flash"
    # verl's Megatron defaults, not fsdpcfg's FSDP ones: verl's optimizer name, no FSDP engine keys
    assert optim["optimizer"] == verlref.defaults("sft_megatron_trainer")["optim.optimizer"] == "adam"
    assert optim["lr_decay_style"] == "constant" and "lr_scheduler_type" not in optim
    for key in ("strategy", "fsdp_size", "wrap_policy", "ulysses_sequence_parallel_size", "reshard_after_forward"):
        assert key not in engine, key
    assert {"engine.strategy", "engine.fsdp_size", "optim.lr_scheduler_type"} <= set(c.pruned)
    # every leaf of verl's engine/optim sections is in the tree
    flat = verlref.flatten(cfg)
    want = {k for k in verlref.keys("sft_megatron_trainer") if k.split(".")[0] in ("engine", "optim")}
    assert want <= set(flat)
    assert not [k for k in flat if k.split(".")[0] in ("engine", "optim") and k not in want]
    assert str(c.provenance.source_of("optim.optimizer")).startswith("verl 0.9.1 default")
    # the recipe's own value stays (qwen_sft sets optim.lr)
    assert optim["lr"] == 1.0e-3


def test_sft_optim_follows_the_engine():
    c = compose(["+recipe=qwen_sft", "engine=automodel", "optim=automodel", "launcher=verl"])
    assert c.cfg.engine.strategy == "automodel" and c.cfg.optim._target_.endswith("AutomodelOptimizerConfig")
    assert compose(["+recipe=qwen_sft", "optim=fsdp"]).cfg.engine.strategy == "fsdp2"  # verl's FSDP optim
    with pytest.raises(ConfigError) as e:
        compose(["+recipe=qwen_sft", "engine=megatron", "optim=fsdp"])
    assert e.value.key == "optim" and "engine=megatron" in str(e.value) and "optim=megatron" in e.value.fix


def test_unknown_group_option_lists_the_options():
    with pytest.raises(ConfigError) as e:
        compose(["+recipe=qwen_grpo", "engine=fsdp3"])
    assert "fsdp, fsdp2" in str(e.value) and e.value.key == "engine"
    with pytest.raises(ConfigError) as e:
        compose(["+recipe=qwen_grp"])
    assert "recipe=qwen_grpo" in e.value.fix


def test_sweep_and_bad_syntax_are_usage_errors():
    with pytest.raises(UsageError):
        compose(["actor_rollout_ref.rollout.n=4,8"])
    with pytest.raises(UsageError):
        compose(["data.train_batch_size=[1,"])


def test_recipe_file_outside_the_tree(tmp_path):
    (tmp_path / "mine.yaml").write_text(
        "# @package _global_\ndefaults:\n  - /recipe/qwen_grpo@_global_\n\ndata:\n  train_batch_size: 8\n"
    )
    c = compose(["+recipe=mine"], extra_recipe_dirs=[tmp_path])
    cfg = c.to_container()
    assert cfg["data"]["train_batch_size"] == 8
    assert (
        cfg["actor_rollout_ref"]["rollout"]["n"]
        == compose(["+recipe=qwen_grpo"]).to_container()["actor_rollout_ref"]["rollout"]["n"]
    )
