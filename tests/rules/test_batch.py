"""FC2xx unit tests: the numbers and the derivations."""

import pytest
from rule_helpers import errors, run

from fsdpcfg.rules import batch

GPU = ["launcher=verl", "rollout=vllm", "trainer=gpu_8x"]
A = "actor_rollout_ref"


def test_fc201_numbers_and_fix():
    f = errors(
        run(batch.train_batch_divisible, *GPU, "trainer.nnodes=2", "data.train_batch_size=4", f"{A}.rollout.n=2")
    )
    assert len(f) == 1 and "= 8 sequences" in f[0].message and "16 ranks" in f[0].message
    assert "multiple of 8" in f[0].fix and "16 ranks = 2 node(s) x 8 GPUs" in f[0].derivation
    assert not run(batch.train_batch_divisible, *GPU, "data.train_batch_size=4", f"{A}.rollout.n=2")


def test_fc202_mini_larger_and_not_dividing():
    f = errors(
        run(
            batch.mini_vs_train,
            *GPU,
            "data.train_batch_size=64",
            f"{A}.rollout.n=8",
            f"{A}.actor.ppo_mini_batch_size=512",
        )
    )
    assert f and "512 is larger than data.train_batch_size = 64" in f[0].message and "512 / 8 = 64" in f[0].fix
    f = errors(run(batch.mini_vs_train, *GPU, "data.train_batch_size=64", f"{A}.actor.ppo_mini_batch_size=48"))
    assert f and "not a multiple" in f[0].message


def test_fc203_each_role():
    for key in (
        f"{A}.actor.ppo_micro_batch_size",
        f"{A}.rollout.log_prob_micro_batch_size",
        f"{A}.ref.log_prob_micro_batch_size",
    ):
        f = errors(run(batch.micro_batch_forms, *GPU, f"{key}=16"))
        assert [x for x in f if key in x.keys], key
    f = errors(run(batch.micro_batch_forms, *GPU, f"{A}.rollout.log_prob_micro_batch_size_per_gpu=null"))
    assert f and "neither" in f[0].message
    # dynamic batch size needs no micro batch
    assert not errors(
        run(
            batch.micro_batch_forms,
            *GPU,
            f"{A}.actor.ppo_micro_batch_size_per_gpu=null",
            f"{A}.actor.use_dynamic_bsz=true",
            f"{A}.rollout.log_prob_micro_batch_size_per_gpu=null",
            f"{A}.ref.log_prob_micro_batch_size_per_gpu=null",
        )
    )


def test_fc204_smallest_mini():
    f = errors(
        run(
            batch.normalised_mini,
            *GPU,
            "data.train_batch_size=8",
            f"{A}.rollout.n=1",
            f"{A}.actor.ppo_mini_batch_size=2",
            f"{A}.actor.ppo_micro_batch_size_per_gpu=1",
        )
    )
    assert f and "0.25 per rank" in f[0].message and "rounds down to 0" in f[0].message
    assert f"{A}.actor.ppo_mini_batch_size=8" in f[0].fix
    # n=4 with micro 2: 4 prompts x 4 = 16 = 8 ranks x 2
    f = errors(
        run(
            batch.normalised_mini,
            *GPU,
            "data.train_batch_size=64",
            f"{A}.rollout.n=4",
            f"{A}.actor.ppo_mini_batch_size=3",
            f"{A}.actor.ppo_micro_batch_size_per_gpu=2",
        )
    )
    assert f and f"{A}.actor.ppo_mini_batch_size=4" in f[0].fix


def test_fc205_per_rank_micro():
    f = errors(
        run(
            batch.per_rank_micro,
            *GPU,
            "data.train_batch_size=16",
            f"{A}.rollout.n=1",
            f"{A}.actor.ppo_mini_batch_size=16",
            f"{A}.actor.ppo_micro_batch_size_per_gpu=4",
            f"{A}.rollout.log_prob_micro_batch_size_per_gpu=2",
            f"{A}.ref.log_prob_micro_batch_size_per_gpu=2",
        )
    )
    assert len(f) == 1 and "= 2 sequences is smaller than" in f[0].message and "=2 (divides 2)" in f[0].fix
    f = errors(
        run(
            batch.per_rank_micro,
            *GPU,
            "data.train_batch_size=48",
            f"{A}.rollout.n=1",
            f"{A}.actor.ppo_mini_batch_size=48",
            f"{A}.actor.ppo_micro_batch_size_per_gpu=4",
            f"{A}.rollout.log_prob_micro_batch_size_per_gpu=2",
            f"{A}.ref.log_prob_micro_batch_size_per_gpu=2",
        )
    )
    assert f and "6 sequences is not a multiple" in f[0].message and "=3" in f[0].fix


def test_fc206_fc207():
    assert errors(
        run(
            batch.dynamic_bsz_agreement,
            f"{A}.actor.use_dynamic_bsz=true",
            f"{A}.rollout.log_prob_use_dynamic_bsz=false",
        )
    )
    assert not run(batch.dynamic_bsz_agreement, f"{A}.actor.use_dynamic_bsz=true")  # follows the actor
    f = errors(
        run(
            batch.token_budget,
            *GPU,
            f"{A}.actor.use_dynamic_bsz=true",
            f"{A}.actor.ppo_max_token_len_per_gpu=1024",
            "data.max_prompt_length=1024",
            "data.max_response_length=2048",
        )
    )
    assert f and "1024 x ulysses_sp 1 = 1024" in f[0].message and "3072" in f[0].message
    # Ulysses multiplies the budget: 1024 x 4 >= 3072
    f = run(
        batch.token_budget,
        *GPU,
        "patches=ulysses",
        f"{A}.actor.ulysses_sequence_parallel_size=4",
        f"{A}.actor.use_dynamic_bsz=true",
        f"{A}.actor.ppo_max_token_len_per_gpu=1024",
        "data.max_prompt_length=1024",
        "data.max_response_length=2048",
    )
    assert not f


def test_divisor_helpers_are_exact_and_bounded():
    from fsdpcfg.rules._common import divisors, largest_divisor_at_most

    assert divisors(12) == [1, 2, 3, 4, 6, 12] and divisors(1) == [1] and divisors(0) == []
    assert divisors(97) == [1, 97]
    assert largest_divisor_at_most(18, 5) == 3 and largest_divisor_at_most(7, 100) == 7
    big = 2**63 - 1  # a typo-sized batch: the search stops early but returns true divisors
    assert all(big % d == 0 for d in divisors(big))


@pytest.mark.timeout(60)
def test_a_huge_batch_size_is_checked_quickly_not_hung():
    """A batch of 2**63-1 used to make FC205 build a list over range(per_rank) (found by trying bad input)."""
    from fsdpcfg.check import check_overrides

    fs = check_overrides(["+recipe=qwen_grpo", f"data.train_batch_size={2**63 - 1}"])
    assert {f.rule for f in fs if f.severity == "error"} >= {"FC202", "FC205"}
