"""verl 0.9.1 itself answers for the rules from public reports: its AdaptiveKLController (FC604), its DAPO reward
manager's assertions and penalty (FC605), its critic default (FC418) and what its FSDP engine clips with (FC721).
The configs are built from fsdpcfg's composed config (the rule's input), so a rule and verl judge the same
values."""

from __future__ import annotations

import importlib.util

import pytest
from rule_helpers import make_ctx

from fsdpcfg.rules import algorithm, dead_keys, model_rules

pytestmark = [
    pytest.mark.verl,
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("verl") is None, reason="verl 0.9.1 is not installed"),
]

OB = "+reward.reward_kwargs.overlong_buffer_cfg"


def _verl_kl(ctx):
    from omegaconf import OmegaConf
    from verl.trainer.ppo.core_algos import get_kl_controller

    return get_kl_controller(OmegaConf.create(ctx.cfg["algorithm"]["kl_ctrl"]))


def test_fc604_verl_divides_by_target_kl_zero():
    ov = ["algorithm.use_kl_in_reward=true", "algorithm.kl_ctrl.type=adaptive", "algorithm.kl_ctrl.target_kl=0"]
    ctx = make_ctx(*ov)
    assert [f.severity for f in algorithm.adaptive_kl(ctx)] == ["error"]
    ctrl = _verl_kl(ctx)
    with pytest.raises(ZeroDivisionError):
        ctrl.update(current_kl=0.05, n_steps=64)  # what apply_kl_penalty calls after the first step


def test_fc604_verl_shrinks_the_coefficient_under_a_negative_target_and_moves_it_at_a_positive_one():
    ov = ["algorithm.use_kl_in_reward=true", "algorithm.kl_ctrl.type=adaptive", "algorithm.kl_ctrl.horizon=1000"]
    neg = make_ctx(*ov, "algorithm.kl_ctrl.target_kl=-0.05")
    assert [f.severity for f in algorithm.adaptive_kl(neg)] == ["warning"]
    ctrl = _verl_kl(neg)
    start = ctrl.value
    for kl in (0.0, 0.01, 0.5, 3.0):  # whatever the KL, the clipped error is -0.2
        ctrl.update(current_kl=kl, n_steps=100)
    assert ctrl.value == pytest.approx(start * (1 - 0.2 * 100 / 1000) ** 4)
    ok = make_ctx(*ov)  # verl's target 0.1: the coefficient follows the KL both ways
    assert not list(algorithm.adaptive_kl(ok))
    ctrl = _verl_kl(ok)
    ctrl.update(current_kl=0.2, n_steps=100)
    assert ctrl.value > 0.001


def _dapo(ctx):
    from omegaconf import OmegaConf
    from verl.experimental.reward_loop.reward_manager.dapo import DAPORewardManager

    cfg = OmegaConf.create({"reward": ctx.cfg["reward"]})
    return DAPORewardManager(cfg, tokenizer=None, compute_score=lambda **kw: 1.0)


@pytest.mark.parametrize(
    "extra",
    [
        [f"{OB}.len=16"],  # no max_resp_len
        [f"{OB}.len=64", "+reward.reward_kwargs.max_resp_len=32"],
        [f"{OB}.len=0", "+reward.reward_kwargs.max_resp_len=32"],
    ],
)
def test_fc605_errors_are_verls_assertions(extra):
    ctx = make_ctx("reward.reward_manager.name=dapo", f"{OB}.enable=true", f"{OB}.penalty_factor=1.0", *extra)
    assert [f.severity for f in algorithm.dapo_overlong_buffer(ctx)] == ["error"]
    with pytest.raises(AssertionError):
        _dapo(ctx)


def test_fc605_verl_accepts_the_warned_arithmetic_and_the_silent_one():
    for extra, sev in (
        (["+reward.reward_kwargs.max_resp_len=64", f"{OB}.len=16"], ["warning"]),  # starts at 48 > 32
        (["+reward.reward_kwargs.max_resp_len=32", f"{OB}.len=16"], []),  # DAPO's layout
    ):
        ctx = make_ctx("reward.reward_manager.name=dapo", f"{OB}.enable=true", f"{OB}.penalty_factor=1.0", *extra)
        assert [f.severity for f in algorithm.dapo_overlong_buffer(ctx)] == sev
        mgr = _dapo(ctx)  # verl builds it: the arithmetic, not an assertion, is what the warning is about
        assert mgr.max_resp_len == ctx.get("reward.reward_kwargs.max_resp_len")


def test_fc418_placeholder_is_verls_critic_default():
    from pathlib import Path

    import verl
    import yaml

    gen = Path(verl.__file__).parent / "trainer" / "config" / "_generated_ppo_trainer.yaml"
    verl_default = yaml.safe_load(gen.read_text())["critic"]["model"]["path"]
    assert model_rules._placeholder_path(make_ctx()) == verl_default == "~/models/deepseek-llm-7b-chat"


def test_fc721_verls_dataclasses_accept_the_dead_keys_and_the_engine_clips_with_optim_clip_grad():
    """verl's own config conversion keeps actor.grad_clip and optim.clip_grad apart; its FSDP engine reads the
    latter (the source of optimizer_step names it), so grad_clip = 0.5 leaves the clip at 1.0."""
    import inspect

    from omegaconf import OmegaConf
    from verl.utils.config import omega_conf_to_dataclass
    from verl.workers.engine.fsdp.transformer_impl import FSDPEngine

    ctx = make_ctx("actor_rollout_ref.actor.grad_clip=0.5")
    assert [f.rule for f in dead_keys.unread_verl_key(ctx)] == ["FC721"]
    optim = omega_conf_to_dataclass(OmegaConf.create(ctx.cfg["actor_rollout_ref"]["actor"]["optim"]))
    assert optim.clip_grad == 1.0
    src = inspect.getsource(FSDPEngine.optimizer_step)
    assert "optimizer_config.clip_grad" in src and "grad_clip" not in src
