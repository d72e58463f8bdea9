"""``algorithm``: advantage estimation and in-reward KL (verl's ``AlgoConfig``)."""

from __future__ import annotations

from typing import Literal

from fsdpcfg.schema._base import F, KLType, Section, Sub

#: ``verl.trainer.ppo.core_algos.AdvantageEstimator`` (0.9.1).
AdvEstimator = Literal[
    "gae",
    "grpo",
    "reinforce_plus_plus",
    "reinforce_plus_plus_baseline",
    "remax",
    "rloo",
    "opo",
    "grpo_passk",
    "gpg",
    "rloo_vectorized",
    "grpo_vectorized",
    "optimal_token_baseline",
    "tir_optimal_token_baseline",
    "gdpo",
]
#: estimators whose baseline is the group of ``rollout.n`` samples of one prompt (need n >= 2).
GROUP_ESTIMATORS = frozenset(
    {
        "grpo",
        "rloo",
        "opo",
        "grpo_passk",
        "gpg",
        "rloo_vectorized",
        "grpo_vectorized",
        "reinforce_plus_plus_baseline",
        "gdpo",
        "optimal_token_baseline",
        "tir_optimal_token_baseline",
    }
)


class KLCtrl(Section):
    """Controller of the in-reward KL coefficient."""

    type: Literal["fixed", "adaptive"] = F("fixed", description="fixed coefficient or adaptive to a target KL")
    kl_coef: float = F(0.001, ge=0, description="KL coefficient (initial one when adaptive)")


class AlgorithmSection(Section):
    """How rewards become advantages."""

    gamma: float = F(1.0, ge=0, le=1, description="discount factor (GAE)")
    lam: float = F(1.0, ge=0, le=1, description="GAE lambda")
    adv_estimator: AdvEstimator = F(
        "gae", description="advantage estimator (gae needs a critic; grpo is group-relative)"
    )
    norm_adv_by_std_in_grpo: bool = F(True, description="divide group-relative advantages by the group's std")
    use_kl_in_reward: bool = F(False, description="subtract a KL penalty from the reward")
    kl_penalty: KLType = F("kl", description="KL estimator of the in-reward penalty")
    kl_ctrl: KLCtrl = Sub(KLCtrl, "in-reward KL controller")
