"""The typed model the native trainers read (issue 13 item 1): :func:`fsdpcfg.schema.parse_config` of a resolved
config of either kind, and the plan computed from it equal to the plan of the dicts ``fsdpcfg check`` plans."""

from __future__ import annotations

import pytest

from fsdpcfg.compose import compose
from fsdpcfg.errors import ConfigError
from fsdpcfg.plan import make_plan, total_training_steps
from fsdpcfg.plan.sft import make_sft_plan, total_sft_steps
from fsdpcfg.schema import RunConfig, attr_path, parse_config, parse_sft_config
from fsdpcfg.schema.sft import SftRunConfig


def test_grpo_config_parses_to_the_run_config_and_plans_alike():
    resolved = compose(["+recipe=qwen_grpo", "trainer.total_training_steps=3"]).to_container()
    typed = parse_config(resolved)
    assert isinstance(typed, RunConfig)
    assert typed.actor_rollout_ref.rollout.name == "hf"
    assert typed.trainer.total_training_steps == 3
    assert make_plan(typed) == make_plan(resolved)
    assert total_training_steps(typed, 1000) == total_training_steps(resolved, 1000) == 3


def test_sft_config_parses_to_the_sft_schema_and_plans_alike():
    resolved = compose(["+recipe=qwen_sft"]).to_container()
    typed = parse_config(resolved)
    assert isinstance(typed, SftRunConfig)
    assert typed.data.micro_batch_size_per_gpu == resolved["data"]["micro_batch_size_per_gpu"]
    assert make_sft_plan(typed) == make_sft_plan(resolved)
    assert make_sft_plan(typed).grad_accum == 2
    rows = 10 * resolved["data"]["train_batch_size"]
    assert total_sft_steps(typed, rows) == total_sft_steps(resolved, rows)


def test_an_invalid_sft_config_names_the_key():
    resolved = compose(["+recipe=qwen_sft"]).to_container()
    resolved["data"]["micro_batch_size_per_gpu"] = "4"
    with pytest.raises(ConfigError) as e:
        parse_sft_config(resolved)
    assert e.value.key == "data.micro_batch_size_per_gpu"


def test_attr_path_reads_dotted_keys_by_attribute():
    typed = parse_config(compose(["+recipe=qwen_grpo"]).to_container())
    assert (
        attr_path(typed, "actor_rollout_ref.model.use_remove_padding")
        is typed.actor_rollout_ref.model.use_remove_padding
    )
    assert attr_path(typed, "actor_rollout_ref.rollout.val_kwargs.n") == 1
    assert attr_path(typed, "actor_rollout_ref.model.no_such_key", "absent") == "absent"
    assert attr_path(typed, "trainer.n_gpus_per_node.below", "absent") == "absent"
