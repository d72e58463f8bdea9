"""A rank started directly (``torchrun -m fsdpcfg.train CONFIG``, no launcher) runs the checker's rules on its
config file, and the plan asks the rules rather than carrying copies of them."""

from __future__ import annotations

import pytest

from fsdpcfg.compose import compose
from fsdpcfg.errors import ConfigError
from fsdpcfg.launch.native import write_run_config
from fsdpcfg.train.entry import check_config_file


def _written(tmp_path, *overrides):
    cfg = compose(["+recipe=qwen_grpo", f"fsdpcfg.run_dir={tmp_path}/run", *overrides]).to_container()
    return str(write_run_config(cfg))


def test_the_launchers_config_file_passes(tmp_path):
    check_config_file(_written(tmp_path))  # no error: what the launcher writes is what it checked


def test_a_config_file_no_rule_accepts_is_refused_with_every_error(tmp_path):
    path = _written(
        tmp_path,
        "data.train_batch_size=3",
        "actor_rollout_ref.rollout.n=1",
        "actor_rollout_ref.actor.ppo_mini_batch_size=1",
        "algorithm.adv_estimator=rloo",
    )
    with pytest.raises(ConfigError) as e:
        check_config_file(path)
    msg = str(e.value)
    assert "does not pass `fsdpcfg check`" in msg
    assert "FC201 data.train_batch_size x actor_rollout_ref.rollout.n = 3 x 1 = 3 sequences" in msg
    assert "FC803 algorithm.adv_estimator=rloo is not implemented by the native launcher" in msg
    assert f"python -m fsdpcfg check {path}" in msg


def test_the_plan_names_the_rule_that_refuses(tmp_path):
    from fsdpcfg.plan import make_plan

    cfg = compose(["+recipe=qwen_grpo", "actor_rollout_ref.actor.fsdp_config.fsdp_size=3"]).to_container()
    cfg["trainer"]["n_gpus_per_node"] = 4
    cfg["data"]["train_batch_size"] = 8
    cfg["actor_rollout_ref"]["actor"]["ppo_mini_batch_size"] = 8
    with pytest.raises(ConfigError) as e:
        make_plan(cfg)
    assert e.value.key == "actor_rollout_ref.actor.fsdp_config.fsdp_size"
    assert "does not divide the 4 ranks, so the (replicate, shard) mesh (4 // 3, 3) cannot be built (FC301" in str(
        e.value
    )
