"""FC6xx: algorithm settings — advantage estimators, KL, loss aggregation.

verl 0.9.1 sources: ``verl/trainer/ppo/core_algos.py`` (``AdvantageEstimator``, the ``register_adv_est``
estimators), ``verl/workers/config/actor.py`` ``ActorConfig.__post_init__`` (loss_agg_mode),
``verl/utils/config.py`` ``validate_config`` (in-reward KL and KL loss together).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import get_args

from fsdpcfg.rules._common import A, flag, num, val
from fsdpcfg.rules.context import Context
from fsdpcfg.rules.finding import Finding
from fsdpcfg.rules.registry import rule
from fsdpcfg.schema.actor import LossAggMode
from fsdpcfg.schema.algorithm import GROUP_ESTIMATORS, AdvEstimator

ADV, N = "algorithm.adv_estimator", f"{A}.rollout.n"

#: Every estimator verl 0.9.1 registers, and those whose baseline is the group of ``n`` samples of one prompt:
#: one home, the schema (``fsdpcfg/schema/algorithm.py``, from verl/trainer/ppo/core_algos.py).
ESTIMATORS = get_args(AdvEstimator)
#: verl/workers/config/actor.py ``ActorConfig.__post_init__``; one home, the schema (``fsdpcfg/schema/actor.py``).
LOSS_AGG_MODES = get_args(LossAggMode)


@rule(
    "FC601",
    "group-relative advantage estimators need rollout.n >= 2",
    keys=[N, ADV],
    example=["algorithm.adv_estimator=grpo", "actor_rollout_ref.rollout.n=1"],
)
def group_needs_samples(ctx: Context) -> Iterable[Finding]:
    """GRPO, RLOO, OPO, GPG, pass@k GRPO, REINFORCE++-baseline and the token-baseline estimators compare the
    ``n`` samples of each prompt. With ``n = 1`` there is no group: verl 0.9.1 uses a baseline of 0 for a group
    of one (GRPO: mean 0, std 1; RLOO, OPO, GPG, the vectorized forms: mean 0), so the advantage is the raw score,
    REINFORCE without a baseline, and the run silently stops being what it says. (An error, as case c18 expects;
    verl itself runs it.)

    Not when on-policy distillation replaces the task reward (``distillation.enabled`` with
    ``distillation.distillation_loss.use_task_rewards=false``): the distillation loss then stands in for the
    policy loss and no group advantage is used, so one sample per prompt is what verl's distillation examples run.

    Source: verl/trainer/ppo/core_algos.py (``compute_grpo_outcome_advantage``: ``len(id2score[idx]) == 1``
    -> mean 0, std 1; the other group estimators). Case c18. verl/trainer/distillation/losses.py (no policy loss
    without task rewards), examples/on_policy_distillation_trainer/.
    """
    est, n = str(ctx.get(ADV)), num(ctx.get(N))
    if ctx.get("distillation.enabled") is True and ctx.get("distillation.distillation_loss.use_task_rewards") is False:
        return
    if est in GROUP_ESTIMATORS and n is not None and n < 2:
        yield ctx.finding(
            "FC601",
            [N, ADV],
            f"{ADV} = {est} is group-relative but {N} = {n}: one sample per prompt has no group baseline; "
            "verl 0.9.1 then uses a baseline of 0, so the advantage is the raw score (REINFORCE without a baseline)",
            f"set {N} to 2 or more (4-16 is usual), or use {ADV}=reinforce_plus_plus or gae for one sample per prompt",
        )


@rule(
    "FC602",
    "advantage estimator and loss aggregation must be ones verl implements",
    keys=[ADV, f"{A}.actor.loss_agg_mode", "critic.loss_agg_mode"],
    example=["algorithm.adv_estimator=grpoo"],
)
def known_names(ctx: Context) -> Iterable[Finding]:
    """``algorithm.adv_estimator`` must be registered (verl/trainer/ppo/core_algos.py
    ``get_adv_estimator_fn`` raises otherwise, after rollout); ``loss_agg_mode`` must be one of verl's modes
    (verl/workers/config/actor.py ``ActorConfig.__post_init__``).
    """
    est = ctx.get(ADV)
    if isinstance(est, str) and est not in ESTIMATORS:
        yield ctx.finding(
            "FC602",
            [ADV],
            f"{ADV} = {est} is not an estimator verl 0.9.1 registers",
            f"use one of: {', '.join(ESTIMATORS)} (or register a custom one via an external_lib)",
        )
    for key in (f"{A}.actor.loss_agg_mode", "critic.loss_agg_mode"):
        mode = val(ctx, key)
        if isinstance(mode, str) and mode not in LOSS_AGG_MODES:
            yield ctx.finding(
                "FC602",
                [key],
                f"{key} = {mode} is not a loss aggregation mode of verl 0.9.1",
                f"use one of: {', '.join(LOSS_AGG_MODES)}",
            )


@rule(
    "FC603",
    "KL in the reward and KL as a loss are both on",
    severity="info",
    keys=["algorithm.use_kl_in_reward", f"{A}.actor.use_kl_loss"],
)
def double_kl(ctx: Context) -> Iterable[Finding]:
    """verl prints a notice when both KL penalties are enabled; the policy is then pulled to the reference
    twice.

    Source: verl/utils/config.py ``validate_config`` ("You have both enabled in-reward kl and kl loss").
    """
    if flag(ctx.get("algorithm.use_kl_in_reward")) and flag(ctx.get(f"{A}.actor.use_kl_loss")):
        yield ctx.finding(
            "FC603",
            ["algorithm.use_kl_in_reward", f"{A}.actor.use_kl_loss"],
            "both algorithm.use_kl_in_reward and actor.use_kl_loss are true: KL is applied twice",
            "keep one (GRPO usually uses the KL loss)",
            severity="info",
        )
