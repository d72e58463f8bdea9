"""GRPO advantages and the clipped policy loss against numbers derived by hand (verl 0.9.1 semantics)."""

from __future__ import annotations

import math

import pytest
import torch

from fsdpcfg.train.algorithm.grpo import (
    ActorLossConfig,
    grpo_advantages,
    policy_loss_vanilla,
    ppo_actor_loss,
    token_level_rewards,
)
from fsdpcfg.train.algorithm.losses import agg_loss, entropy_from_logits, kl_penalty


def test_token_level_rewards_sit_on_the_last_valid_token():
    mask = torch.tensor([[1, 1, 1, 0], [1, 0, 0, 0]])
    r = token_level_rewards(torch.tensor([2.0, -1.0]), mask)
    assert r.tolist() == [[0, 0, 2.0, 0], [-1.0, 0, 0, 0]]


def test_grpo_advantages_by_hand():
    # Three groups (uids 7, 8, 9):
    #   uid 7: scores 1, 0, 0, 1 -> mean 0.5, unbiased std sqrt(4 * 0.25 / 3) = sqrt(1/3) = 0.5773503;
    #          advantages +-0.5 / (0.5773503 + 1e-6) = +-0.8660239
    #   uid 8: scores 2, 2       -> mean 2, std 0 -> 0 / (0 + 1e-6) = 0
    #   uid 9: one score 3       -> a group of one: mean 0, std 1 -> 3 / (1 + 1e-6) = 2.999997
    scores = torch.tensor([1.0, 0.0, 0.0, 1.0, 2.0, 2.0, 3.0])
    uids = [7, 7, 7, 7, 8, 8, 9]
    mask = torch.tensor([[1, 1, 1], [1, 1, 0], [1, 0, 0], [1, 1, 1], [1, 1, 1], [1, 0, 0], [1, 1, 0]])
    adv = grpo_advantages(token_level_rewards(scores, mask), mask, uids)
    a = 0.8660239
    expected_seq = [a, -a, -a, a, 0.0, 0.0, 2.999997]
    for i, e in enumerate(expected_seq):
        assert adv[i][mask[i].bool()].tolist() == pytest.approx([e] * int(mask[i].sum()), abs=1e-6)
        assert adv[i][~mask[i].bool()].abs().sum() == 0  # zero outside the response
    # Dr.GRPO (no std normalisation): score - group mean -> +-0.5, 0, 3
    adv2 = grpo_advantages(token_level_rewards(scores, mask), mask, uids, norm_adv_by_std=False)
    assert adv2[:, 0].tolist() == pytest.approx([0.5, -0.5, -0.5, 0.5, 0.0, 0.0, 3.0], abs=1e-7)


def _two_sequences():
    # Sequence 1, response length 5, 4 valid tokens; clip 0.2/0.2, dual clip c = 3:
    #   t1: A=+1, ratio 1.5 -> l1 = -1.5, l2 = -1 * 1.2 = -1.2, max = -1.2   (clipped: l2 > l1)
    #   t2: A=+1, ratio 0.5 -> l1 = -0.5, l2 = -1 * 0.8 = -0.8, max = -0.5   (not clipped)
    #   t3: A=-1, ratio 0.5 -> l1 =  0.5, l2 =  0.8, max = 0.8; dual min(3, 0.8) = 0.8   (clipped)
    #   t4: A=-1, ratio 5.0 -> l1 =  5.0, l2 =  1.2, max = 5.0; dual min(3, 5.0) = 3.0   (dual clip acts)
    #   t5: masked out.          sum over seq 1 = -1.2 - 0.5 + 0.8 + 3.0 = 2.1 over 4 tokens
    # Sequence 2, 2 valid tokens: A=+0.5, ratio 1 -> -0.5 each; sum -1.0 over 2 tokens
    old = torch.zeros(2, 5)
    lp = torch.tensor([[math.log(1.5), math.log(0.5), math.log(0.5), math.log(5.0), 0.0], [0.0, 0.0, 0.0, 0.0, 0.0]])
    adv = torch.tensor([[1.0, 1.0, -1.0, -1.0, -1.0], [0.5, 0.5, 0.0, 0.0, 0.0]])
    mask = torch.tensor([[1, 1, 1, 1, 0], [1, 1, 0, 0, 0]])
    return old, lp, adv, mask


@pytest.mark.parametrize(
    "mode,expected",
    [
        ("token-mean", (2.1 - 1.0) / 6),  # all valid tokens: 1.1 / 6 = 0.18333
        ("seq-mean-token-mean", (2.1 / 4 + -1.0 / 2) / 2),  # (0.525 - 0.5) / 2 = 0.0125
        ("seq-mean-token-sum", (2.1 - 1.0) / 2),  # 0.55
        ("seq-mean-token-sum-norm", (2.1 - 1.0) / 2 / 5),  # 0.55 / response length 5 = 0.11
    ],
)
def test_clipped_dual_clip_loss_by_hand(mode, expected):
    old, lp, adv, mask = _two_sequences()
    loss, m = policy_loss_vanilla(
        old, lp, adv, mask, clip_ratio_low=0.2, clip_ratio_high=0.2, clip_ratio_c=3.0, loss_agg_mode=mode
    )
    assert loss.item() == pytest.approx(expected, abs=1e-6)
    # clipped tokens: t1 and t3 of 6 valid tokens; the dual clip acts on t4 only
    assert m["actor/pg_clipfrac"] == pytest.approx(2 / 6)
    assert m["actor/pg_clipfrac_lower"] == pytest.approx(1 / 6)


def test_token_mean_over_ranks_and_micro_batches_equals_the_global_mean():
    # Rank 0 holds sequence 1 (4 tokens), rank 1 sequence 2 (2 tokens): with the global token count 6 and
    # dp_size 2 each rank's loss is 2 x (its token sum / 6); FSDP averages gradients over the 2 ranks, so the
    # mean of the rank losses is the global token mean (2.1 - 1.0) / 6.
    old, lp, adv, mask = _two_sequences()
    full, _ = policy_loss_vanilla(old, lp, adv, mask, clip_ratio_low=0.2, clip_ratio_high=0.2)
    parts = [
        policy_loss_vanilla(
            old[i : i + 1],
            lp[i : i + 1],
            adv[i : i + 1],
            mask[i : i + 1],
            clip_ratio_low=0.2,
            clip_ratio_high=0.2,
            dp_size=2,
            batch_num_tokens=6,
        )[0]
        for i in range(2)
    ]
    assert sum(p.item() for p in parts) / 2 == pytest.approx(full.item(), abs=1e-7)
    with pytest.raises(ValueError, match="batch_num_tokens"):
        agg_loss(lp, mask, "token-mean", dp_size=2)
    # one rank, two micro-batches, batch_num_tokens = 6: the micro losses sum to the full loss
    micro = [
        policy_loss_vanilla(
            old[i : i + 1],
            lp[i : i + 1],
            adv[i : i + 1],
            mask[i : i + 1],
            clip_ratio_low=0.2,
            clip_ratio_high=0.2,
            batch_num_tokens=6,
        )[0]
        for i in range(2)
    ]
    assert sum(p.item() for p in micro) == pytest.approx(full.item(), abs=1e-7)


def test_asymmetric_clip_and_bad_dual_clip():
    old, lp, adv, mask = _two_sequences()
    # clip_ratio_high 0.6: t1's ratio 1.5 is inside [0.8, 1.6] -> -1.5 instead of -1.2: sum 1.8 - 1.0 = 0.8 / 6
    loss, _ = policy_loss_vanilla(old, lp, adv, mask, clip_ratio_low=0.2, clip_ratio_high=0.6)
    assert loss.item() == pytest.approx(0.8 / 6, abs=1e-6)
    with pytest.raises(ValueError, match="clip_ratio_c"):
        policy_loss_vanilla(old, lp, adv, mask, clip_ratio_low=0.2, clip_ratio_high=0.2, clip_ratio_c=1.0)


def test_kl_estimators_and_entropy_by_hand():
    lp = torch.zeros(2)
    ref = torch.tensor([math.log(2.0), -math.log(2.0)])
    # k3: exp(ref - lp) - (ref - lp) - 1 -> 2 - 0.693147 - 1 = 0.306853 and 0.5 + 0.693147 - 1 = 0.193147
    assert kl_penalty(lp, ref, "low_var_kl").tolist() == pytest.approx([0.306853, 0.193147], abs=1e-6)
    assert kl_penalty(lp, ref, "kl").tolist() == pytest.approx([-0.693147, 0.693147], abs=1e-6)
    assert kl_penalty(lp, ref, "mse").tolist() == pytest.approx([0.240227, 0.240227], abs=1e-6)
    # uniform over 4 tokens: entropy ln 4 = 1.386294
    assert entropy_from_logits(torch.zeros(1, 4)).item() == pytest.approx(1.386294, abs=1e-6)
    with pytest.raises(ValueError):
        kl_penalty(lp, ref, "k9")
    with pytest.raises(ValueError):
        agg_loss(torch.zeros(1, 2), torch.ones(1, 2), "mean")


def test_actor_loss_adds_kl_and_entropy_terms():
    old, lp, adv, mask = _two_sequences()
    cfg = ActorLossConfig(
        clip_ratio_low=0.2,
        clip_ratio_high=0.2,
        clip_ratio_c=3.0,
        loss_agg_mode="token-mean",
        entropy_coeff=0.1,
        use_kl_loss=True,
        kl_loss_coef=0.5,
        kl_loss_type="low_var_kl",
    )
    ref = lp - math.log(2.0)  # ref - lp = -ln 2 everywhere -> k3 = 0.193147 on every token
    entropy = torch.full((2, 5), 2.0)
    loss, m = ppo_actor_loss(cfg, lp, entropy, old, adv, mask, ref)
    # pg 1.1/6 = 0.183333; kl 0.193147; entropy 2.0 -> 0.183333 + 0.5 * 0.193147 - 0.1 * 2.0 = 0.079907
    assert m["actor/pg_loss"] == pytest.approx(0.183333, abs=1e-6)
    assert m["actor/kl_loss"] == pytest.approx(0.193147, abs=1e-6)
    assert loss.item() == pytest.approx(0.183333 + 0.5 * 0.193147 - 0.2, abs=1e-6)


def test_actor_loss_config_rejects_what_the_native_loop_cannot_do():
    from fsdpcfg.compose import compose
    from fsdpcfg.schema import parse_run_config

    actor = parse_run_config(compose(["+recipe=qwen_grpo"]).to_container()).actor_rollout_ref.actor
    cfg = ActorLossConfig.from_actor_cfg(actor)
    assert (cfg.clip_ratio_low, cfg.clip_ratio_high, cfg.loss_agg_mode) == (0.2, 0.2, "token-mean")
