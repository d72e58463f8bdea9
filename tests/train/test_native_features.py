"""Features the native loop implements (fsdpcfg/native/support.py), accepted by ``check`` under launcher=native
and run: the KL penalty in the reward (``algorithm.use_kl_in_reward``) and LoRA's ``rollout.layered_summon``.

- the penalty of ``Trainer._advantages`` against hand-computed numbers and against verl 0.9.1's own
  ``apply_kl_penalty`` (verl/trainer/ppo/ray_trainer.py) on the same tensors;
- a 2-rank run with the penalty: step 1 (actor == reference) has a penalty of exactly 0, step 2's token rewards
  equal ``score - kl_coef * sum(old_log_probs - ref_log_prob)`` recomputed from the step's dumped log-probs, and
  the logged ``actor/reward_kl_penalty`` (``_coeff``) are verl's metrics of the same numbers;
- a 2-rank LoRA run with ``layered_summon=true`` (base preloaded: ``load_format=safetensors``) gives the same
  numbers, step for step, as ``layered_summon=false``: the rollout replica received the same adapter.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

REPO = Path(__file__).resolve().parents[2]
BETA = 0.2
# arith_grpo: its warm-started model earns mixed rewards, so step 1 has advantages and moves the actor (lr 1e-2)
KL_RUN = [
    "+recipe=arith_grpo",
    "algorithm.use_kl_in_reward=true",
    f"algorithm.kl_ctrl.kl_coef={BETA}",
    "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=32",  # the actor's: the same numbers at step 1
]
LAYERED_RUN = [
    "+recipe=arith_grpo",
    "actor_rollout_ref.model.lora_rank=4",
    "actor_rollout_ref.model.lora_alpha=8",
    "actor_rollout_ref.rollout.load_format=safetensors",
]
COMMON = ["trainer.total_training_steps=2", "trainer.save_freq=-1", "trainer.val_before_train=false",
          "trainer.test_freq=-1", "trainer.logger=[console]"]  # fmt: skip


def _fsdpcfg(args: list[str], env: dict | None = None, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "fsdpcfg", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONWARNINGS": "ignore", **(env or {})},
    )


def _check_errors(args: list[str]) -> list:
    """The error findings of ``fsdpcfg check ARGS`` (its exit code is 1 exactly when there is one), from the same
    function in this process: the check's verdict is the point here, not a fresh Python start-up."""
    from fsdpcfg.check import check_overrides

    return [f for f in check_overrides(args) if f.severity == "error"]


class _OneRank:
    """A one-process gloo group for ``Trainer._advantages`` (its gathers are collectives)."""

    def __init__(self, tmp_path: Path) -> None:
        self.store = tmp_path / "pg"

    def __enter__(self):
        import torch.distributed as dist

        dist.init_process_group("gloo", init_method=f"file://{self.store}", rank=0, world_size=1)

    def __exit__(self, *exc):
        import torch.distributed as dist

        dist.destroy_process_group()


def _advantages(tmp_path: Path, scores, rmask, old, ref, *, kl_penalty: str = "kl", beta: float = 0.5):
    import torch

    from fsdpcfg.schema.algorithm import AlgorithmSection, KLCtrl
    from fsdpcfg.train.loop import Trainer

    algorithm = AlgorithmSection(
        use_kl_in_reward=True, kl_ctrl=KLCtrl(type="fixed", kl_coef=beta), kl_penalty=kl_penalty
    )
    cfg = SimpleNamespace(algorithm=algorithm)  # the part of the typed RunConfig _advantages reads
    fake = SimpleNamespace(
        cfg=cfg, plan=SimpleNamespace(sequences_per_rank=len(scores)), rank=0, device=torch.device("cpu")
    )
    t = [torch.tensor(x, dtype=torch.float32) for x in (scores, rmask, old, ref)]
    with _OneRank(tmp_path):
        return Trainer._advantages(fake, [0] * len(scores), t[0], t[1], t[2], t[3])  # type: ignore[arg-type]


def test_kl_in_reward_hand_computed(tmp_path):
    # kl = old - ref on response tokens: row 0 [0.5, -1.0, (pad)] sums to -0.5, row 1 [0, 1.0, -0.5] to 0.5
    adv, batch = _advantages(
        tmp_path,
        [1.0, 0.0],
        [[1, 1, 0], [1, 1, 1]],
        [[-1.0, -2.0, -9.0], [-0.5, -1.0, -1.5]],
        [[-1.5, -1.0, 0.0], [-0.5, -2.0, -1.0]],
        beta=0.5,
    )
    assert batch["rewards"].tolist() == pytest.approx([1.0 - 0.5 * -0.5, 0.0 - 0.5 * 0.5])  # 1.25, -0.25
    assert batch["scores"].tolist() == [1.0, 0.0]
    # verl's actor/reward_kl_penalty: the per-sequence token mean, -0.5/2 and 0.5/3
    assert batch["kl_penalty"].tolist() == pytest.approx([-0.25, 0.5 / 3])
    # one group of two: (r - 0.5) / std with the unbiased std 0.75 * sqrt(2)
    assert batch["advantages"].tolist() == pytest.approx([2**-0.5, -(2**-0.5)], abs=1e-5)
    assert adv[0].tolist() == pytest.approx([2**-0.5, 2**-0.5, 0.0], abs=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("kl_penalty", ["kl", "abs", "mse", "low_var_kl"])
def test_kl_in_reward_equals_verls_apply_kl_penalty(tmp_path, kl_penalty):
    import torch
    from verl import DataProto
    from verl.trainer.ppo.core_algos import FixedKLController
    from verl.trainer.ppo.ray_trainer import apply_kl_penalty

    g = torch.Generator().manual_seed(3)
    b, r = 6, 5
    scores = torch.rand(b, generator=g)
    lengths = torch.tensor([5, 3, 1, 4, 5, 2])
    rmask = (torch.arange(r)[None] < lengths[:, None]).float()
    old, ref = -torch.rand(b, r, generator=g) * 3, -torch.rand(b, r, generator=g) * 3
    token_scores = torch.zeros(b, r)
    token_scores[torch.arange(b), lengths - 1] = scores  # verl's reward on the last response token
    data = DataProto.from_dict(
        {"response_mask": rmask, "token_level_scores": token_scores, "old_log_probs": old, "ref_log_prob": ref}
    )
    data, metrics = apply_kl_penalty(data, FixedKLController(BETA), kl_penalty=kl_penalty)
    _, batch = _advantages(tmp_path, scores.tolist(), rmask.tolist(), old.tolist(), ref.tolist(),
                           kl_penalty=kl_penalty, beta=BETA)  # fmt: skip
    want = data.batch["token_level_rewards"].sum(-1)
    assert torch.allclose(batch["rewards"], want, atol=1e-5), (batch["rewards"], want)
    assert float(batch["kl_penalty"].mean()) == pytest.approx(metrics["actor/reward_kl_penalty"], abs=1e-6)
    assert metrics["actor/reward_kl_penalty_coeff"] == BETA


def _rows(run_dir: Path) -> list[dict]:
    return [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.distributed
@pytest.mark.slow
def test_use_kl_in_reward_runs_on_two_ranks(tiny_model, tmp_path):
    import torch

    tiny_model("tiny-qwen2-arith")

    errors = _check_errors(KL_RUN)
    assert not errors, [f.message for f in errors]
    run_dir, dump = tmp_path / "run", tmp_path / "dump"
    args = [*KL_RUN, *COMMON, f"fsdpcfg.run_dir={run_dir}", f"trainer.default_local_dir={tmp_path / 'ckpt'}"]
    proc = _fsdpcfg(args, env={"FSDPCFG_DUMP_STEPS": str(dump)})
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = _rows(run_dir)
    assert [r["step"] for r in rows] == [1, 2]
    assert [r["actor/reward_kl_penalty_coeff"] for r in rows] == [BETA, BETA]
    # step 1: the actor has not moved from the reference: old and reference log-probs agree to fp32 rounding (the
    # old log-probs come from the pass that also computes the entropy)
    assert abs(rows[0]["actor/reward_kl_penalty"]) < 1e-6
    assert rows[0]["critic/rewards/mean"] == pytest.approx(rows[0]["critic/score/mean"], abs=1e-6)
    for step, row in zip((1, 2), rows, strict=True):
        ranks = [torch.load(dump / f"step{step}" / f"rank{r}.pt") for r in (0, 1)]
        old = torch.cat([d["old_log_probs"] for d in ranks])  # [B*n, R] in rank order, as the gathers
        ref = torch.cat([d["ref_log_prob"] for d in ranks])
        mask = torch.cat([d["response_mask"] for d in ranks])
        kld = (old - ref) * mask  # algorithm.kl_penalty=kl
        scores, rewards = ranks[0]["batch_scores"], ranks[0]["batch_rewards"]
        assert torch.equal(rewards, ranks[1]["batch_rewards"])
        assert torch.allclose(rewards, scores - BETA * kld.sum(-1), atol=1e-6)
        per_seq = kld.sum(-1) / mask.sum(-1)
        assert row["actor/reward_kl_penalty"] == pytest.approx(float(per_seq.mean()), abs=1e-7)
        assert row["critic/rewards/mean"] == pytest.approx(float(rewards.mean()), abs=1e-6)
    # step 2: one update later the actor differs from the reference
    assert abs(rows[1]["actor/reward_kl_penalty"]) > 1e-3, rows[1]["actor/reward_kl_penalty"]
    assert rows[1]["critic/rewards/mean"] != rows[1]["critic/score/mean"]


@pytest.mark.distributed
@pytest.mark.slow
def test_layered_summon_runs_on_two_ranks_with_the_same_numbers(tiny_model, tmp_path):
    tiny_model("tiny-qwen2-arith")
    layered = [*LAYERED_RUN, "actor_rollout_ref.rollout.layered_summon=true"]
    errors = _check_errors(layered)
    assert not errors, [f.message for f in errors]
    # the rollout would hold a random base: refused before launch (FC504), as the loop refuses it at the sync
    refused = _check_errors([*layered, "actor_rollout_ref.rollout.load_format=dummy"])
    assert refused and "FC504" in [f.rule for f in refused], [f.message for f in refused]
    results = {}
    for on in (True, False):
        run_dir = tmp_path / f"run_{on}"
        args = [*LAYERED_RUN, *COMMON, f"actor_rollout_ref.rollout.layered_summon={str(on).lower()}",
                f"fsdpcfg.run_dir={run_dir}", f"trainer.default_local_dir={tmp_path / f'ckpt_{on}'}"]  # fmt: skip
        proc = _fsdpcfg(args)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        results[on] = _rows(run_dir)
    names = ["critic/score/mean", "critic/rewards/mean", "response_length/mean", "actor/pg_loss", "actor/grad_norm"]
    for a, b in zip(results[True], results[False], strict=True):
        assert a["step"] == b["step"]
        assert {k: a[k] for k in names} == {k: b[k] for k in names}
    # step 1 trains the adapter (B starts at 0), so step 2 generates from a non-zero adapter gathered layer by
    # layer: the same responses and losses need the same adapter in the replica
    assert results[True][0]["actor/grad_norm"] > 0
    assert results[True][1]["actor/pg_loss"] != results[True][0]["actor/pg_loss"]
