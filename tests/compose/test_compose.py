"""Composition: recipe + groups + overrides in verl's key names, provenance, and errors without tracebacks."""

from __future__ import annotations

import pytest

from fsdpcfg.compose import compose
from fsdpcfg.compose._compose import GROUPS, available_options, groups
from fsdpcfg.errors import ConfigError, UsageError


def test_groups_come_from_the_root_defaults_list():
    assert groups("ppo") == ("engine", "patches", "rollout", "algorithm", "model", "data", "reward", "trainer",
                             "launcher")
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
    c = compose(["+recipe=qwen_grpo", "+actor_rollout_ref.rollout.max_num_seqs_x=3",
                 "~actor_rollout_ref.rollout.tensor_model_parallel_size"])
    assert c.added == ["actor_rollout_ref.rollout.max_num_seqs_x"]
    assert c.deleted == ["actor_rollout_ref.rollout.tensor_model_parallel_size"]
    assert "tensor_model_parallel_size" not in c.to_container()["actor_rollout_ref"]["rollout"]


def test_unknown_key_gets_did_you_mean():
    with pytest.raises(ConfigError) as e:
        compose(["+recipe=qwen_grpo", "actor_rollout_ref.actor.ppo_micro_batch_size_pergpu=4"])
    assert e.value.key == "actor_rollout_ref.actor.ppo_micro_batch_size_pergpu"
    assert "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu" in e.value.fix
    assert "Traceback" not in str(e.value)


def test_verl_key_outside_the_tree_says_how_to_add_it():
    with pytest.raises(ConfigError) as e:
        compose(["actor_rollout_ref.rollout.max_num_seqs_nope=1"])
    with pytest.raises(ConfigError) as e:
        compose(["actor_rollout_ref.rollout.multi_turn.enable=true"])
    assert "+actor_rollout_ref.rollout.multi_turn.enable=VALUE" in e.value.fix


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
        "# @package _global_\ndefaults:\n  - /recipe/qwen_grpo@_global_\n\ndata:\n  train_batch_size: 8\n")
    c = compose(["+recipe=mine"], extra_recipe_dirs=[tmp_path])
    cfg = c.to_container()
    assert cfg["data"]["train_batch_size"] == 8
    assert cfg["actor_rollout_ref"]["rollout"]["n"] == compose(["+recipe=qwen_grpo"]).to_container()[
        "actor_rollout_ref"]["rollout"]["n"]
