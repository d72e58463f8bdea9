"""The native loop's reward function gets ``custom_reward_function.reward_kwargs`` as verl's does: the keyword
arguments set with ``+reward.custom_reward_function.reward_kwargs.NAME=VALUE`` travel through the typed config
(compose -> validate -> ``make_reward_fn``); before they were a schema field the typed config dropped them and the
function silently ran with its own defaults."""

from __future__ import annotations

from fsdpcfg.compose import compose
from fsdpcfg.schema.validate import parse_run_config
from fsdpcfg.train.reward import make_reward_fn


def test_reward_kwargs_reach_the_native_reward_function(tmp_path):
    f = tmp_path / "my_reward.py"
    f.write_text(
        "def score(data_source, solution_str, ground_truth, extra_info=None, bonus=0.0):\n"
        "    return float(solution_str == ground_truth) + bonus\n"
    )
    cfg = parse_run_config(
        compose(
            [
                "+recipe=qwen_grpo",
                f"reward.custom_reward_function.path={f}",
                "reward.custom_reward_function.name=score",
                "+reward.custom_reward_function.reward_kwargs.bonus=0.25",
            ]
        )
    )
    assert cfg.reward.custom_reward_function.reward_kwargs == {"bonus": 0.25}
    fn = make_reward_fn(cfg.reward)
    assert fn("x", "a", "a") == 1.25 and fn("x", "a", "b") == 0.25
    plain = parse_run_config(
        compose(
            ["+recipe=qwen_grpo", f"reward.custom_reward_function.path={f}", "reward.custom_reward_function.name=score"]
        )
    )
    assert make_reward_fn(plain.reward)("x", "a", "a") == 1.0
