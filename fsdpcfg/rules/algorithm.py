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


KC = "algorithm.kl_ctrl"


@rule(
    "FC604",
    "an adaptive KL controller needs a positive target_kl and the in-reward KL it controls",
    keys=[f"{KC}.type", f"{KC}.target_kl", f"{KC}.horizon", "algorithm.use_kl_in_reward"],
    example=["algorithm.use_kl_in_reward=true", "algorithm.kl_ctrl.type=adaptive", "algorithm.kl_ctrl.target_kl=0"],
)
def adaptive_kl(ctx: Context) -> Iterable[Finding]:
    """``algorithm.kl_ctrl.type=adaptive`` builds verl's ``AdaptiveKLController``, whose ``update`` computes
    ``clip(current_kl / target_kl - 1, -0.2, 0.2)`` after every step:

    - ``target_kl = 0``: ``current_kl / 0`` raises ZeroDivisionError (``current_kl`` is a Python float, from
      ``.item()``) at the end of the first step, after the first rollout (error); ``target_kl = null``: a
      TypeError at the same place (error);
    - ``target_kl < 0``: the ratio is below -1 for any KL >= 0, the error is clipped to -0.2 every step, and the
      coefficient only ever shrinks (``x (1 - 0.2 x batch / horizon)`` per step): the "target" is never
      approached (warning);
    - ``use_kl_in_reward = false``: verl builds the controller only for the in-reward KL penalty
      (``RayPPOTrainer.__init__``: ``if use_kl_in_reward: get_kl_controller(...)``); the KL loss
      (``actor.use_kl_loss``) uses the fixed ``actor.kl_loss_coef``, so the adaptive settings never move
      anything (warning).

    ``horizon <= 0`` is verl's own assertion (``get_kl_controller``), reported by FC180's range table.

    Source: verl/trainer/ppo/core_algos.py ``AdaptiveKLController.update`` and ``get_kl_controller``;
    verl/trainer/ppo/ray_trainer.py ``apply_kl_penalty`` (``kl_ctrl.update(current_kl=..., n_steps=batch_size)``)
    and ``RayPPOTrainer.__init__``; the controller is Ziegler et al. 2019 (arXiv:1909.08593), as verl cites.
    """
    if str(val(ctx, f"{KC}.type")) != "adaptive":
        return
    tk, uk = f"{KC}.target_kl", "algorithm.use_kl_in_reward"
    if not flag(val(ctx, uk)):
        yield ctx.finding(
            "FC604",
            [f"{KC}.type", uk],
            f"{KC}.type = adaptive but {uk} = false: verl builds the KL controller only for the in-reward KL "
            f"penalty, so the adaptive coefficient (target_kl, horizon) never changes anything "
            f"(actor.use_kl_loss uses the fixed {A}.actor.kl_loss_coef)",
            f"set {uk}=true to penalise the reward with an adaptive coefficient, or {KC}.type=fixed",
            severity="warning",
        )
        return
    target = val(ctx, tk)
    if target is None or (isinstance(target, (int, float)) and not isinstance(target, bool) and target == 0):
        what = "ZeroDivisionError" if target is not None else "TypeError"
        yield ctx.finding(
            "FC604",
            [tk, f"{KC}.type"],
            f"{tk} = {target} with {KC}.type = adaptive: AdaptiveKLController.update divides the step's KL by "
            f"target_kl and raises {what} at the end of the first training step",
            f"set {tk} to the KL per token you want to hold (verl's default 0.1), or {KC}.type=fixed",
        )
    elif isinstance(target, (int, float)) and not isinstance(target, bool) and target < 0:
        yield ctx.finding(
            "FC604",
            [tk, f"{KC}.type"],
            f"{tk} = {target} with {KC}.type = adaptive: a KL >= 0 is always above a negative target, so the "
            f"controller's error is clipped to -0.2 every step and the coefficient only shrinks towards 0",
            f"set {tk} to a positive KL per token (verl's default 0.1)",
            severity="warning",
        )


RK = "reward.reward_kwargs"
OB = f"{RK}.overlong_buffer_cfg"


def _real(x: object) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


@rule(
    "FC605",
    "DAPO overlong buffer: max_resp_len, buffer length and the rollout's response length must agree",
    keys=[
        f"{OB}.enable",
        f"{OB}.len",
        f"{RK}.max_resp_len",
        "reward.reward_manager.name",
        f"{A}.rollout.response_length",
    ],
    example=[
        "reward.reward_manager.name=dapo",
        "+reward.reward_kwargs.overlong_buffer_cfg.enable=true",
        "+reward.reward_kwargs.overlong_buffer_cfg.len=4096",
        "+reward.reward_kwargs.max_resp_len=2048",
    ],
)
def dapo_overlong_buffer(ctx: Context) -> Iterable[Finding]:
    """verl's DAPO reward manager (``reward.reward_manager.name=dapo``) with
    ``reward.reward_kwargs.overlong_buffer_cfg.enable`` penalises a response of ``L`` valid tokens by
    ``min(-(L - (max_resp_len - len)) / len x penalty_factor, 0)``:

    - ``max_resp_len`` missing, ``len <= 0`` or ``len > max_resp_len``: the manager's assertions fail when the
      reward workers start (error);
    - ``max_resp_len - len >= rollout.response_length``: no response can be longer than the rollout's
      ``response_length`` (``${data.max_response_length}``), so the penalty never applies (warning);
    - ``max_resp_len < rollout.response_length``: responses longer than ``max_resp_len`` are penalised past
      ``penalty_factor``, up to ``(response_length - max_resp_len + len) / len x penalty_factor`` for a
      truncated one (warning: DAPO's scheme ends at ``max_resp_len = max_response_length``).

    Source: verl/experimental/reward_loop/reward_manager/dapo.py ``DAPORewardManager.__init__`` (the three
    assertions) and ``run_single`` (the penalty); verl/workers/reward_manager/dapo.py (the same);
    verl/trainer/config/rollout/rollout.yaml (``response_length: ${oc.select:data.max_response_length,512}``);
    verl's DAPO examples pass ``+reward.reward_kwargs.max_resp_len=${max_response_length}``
    (examples/mtp_trainer/run_mimo_7b_mtp_megatron.sh); DAPO (arXiv:2503.14476), "overlong reward shaping".
    """
    if str(ctx.get("reward.reward_manager.name")) != "dapo" or not flag(ctx.get(f"{OB}.enable")):
        return
    lk, mk, rk = f"{OB}.len", f"{RK}.max_resp_len", f"{A}.rollout.response_length"
    blen, mrl = _real(ctx.get(lk)), _real(ctx.get(mk))
    if mrl is None:
        yield ctx.finding(
            "FC605",
            [mk, f"{OB}.enable"],
            f"{OB}.enable = true but {mk} = {ctx.get(mk)}: DAPORewardManager asserts max_resp_len is given when "
            "the overlong buffer is on",
            f"set +{mk}=${{data.max_response_length}}",
        )
        return
    if blen is None or blen <= 0 or blen > mrl:
        what = "must be positive" if blen is None or blen <= 0 else f"is larger than {mk} = {ctx.get(mk)}"
        yield ctx.finding(
            "FC605",
            [lk, mk],
            f"{lk} = {ctx.get(lk)} {what}: DAPORewardManager's assertion fails when the reward workers start",
            f"set {lk} to a positive length below {mk} (DAPO: 4096 of 20480), or {OB}.enable=false",
        )
        return
    resp = num(val(ctx, rk))
    if resp is None:
        return
    start = mrl - blen
    if start >= resp:
        yield ctx.finding(
            "FC605",
            [mk, lk, rk],
            f"the overlong penalty starts at {mk} - {lk} = {mrl:g} - {blen:g} = {start:g} tokens, but no response "
            f"is longer than {rk} = {resp}: the overlong buffer never penalises anything",
            f"set {mk}={resp} (the rollout's response length) so that the buffer covers the last {blen:g} tokens",
            severity="warning",
        )
    elif mrl < resp:
        factor = _real(ctx.get(f"{OB}.penalty_factor"))
        worst = (resp - start) / blen * (factor if factor is not None else 1.0)
        yield ctx.finding(
            "FC605",
            [mk, rk, lk],
            f"{mk} = {mrl:g} is below {rk} = {resp}: responses longer than {mrl:g} tokens are penalised past "
            f"penalty_factor, down to -{worst:g} for a truncated response",
            f"set {mk}={resp} (verl's DAPO examples pass max_resp_len=${{max_response_length}})",
            severity="warning",
        )
