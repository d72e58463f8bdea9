"""The actor update: mini-batches, micro-batches and gradient accumulation with verl 0.9.1's batch semantics.

Per rank and training step: ``sequences_per_rank`` sequences are split into mini-batches of
``mini_batch_per_rank`` (one optimizer step each, ``ppo_epochs`` passes), each split into micro-batches of
``micro_batch_per_rank`` (one forward/backward each). Each micro-batch loss is normalised by the whole
mini-batch over all ranks (valid tokens or sequences, all-reduced) and multiplied by the world size, so the
accumulated, rank-averaged gradient is the gradient of the global mini-batch mean.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch import nn

from fsdpcfg.plan import Plan
from fsdpcfg.train.algorithm.grpo import ActorLossConfig, ppo_actor_loss
from fsdpcfg.train.engine.forward import response_log_probs
from fsdpcfg.train.engine.fsdp import clip_grad_norm, gradient_sync
from fsdpcfg.train.metrics import mean_over


@dataclass
class ActorBatch:
    """This rank's share of one training step, all ``(batch, ...)`` with ``batch = sequences_per_rank``.

    Attributes:
        input_ids, attention_mask: ``(batch, prompt_len + response_len)``.
        response_mask, old_log_probs, advantages: ``(batch, response_len)``.
        ref_log_probs: ``(batch, response_len)`` or ``None`` without a KL loss.
    """

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    response_mask: torch.Tensor
    old_log_probs: torch.Tensor
    advantages: torch.Tensor
    ref_log_probs: torch.Tensor | None = None

    def slice(self, start: int, stop: int) -> ActorBatch:
        """Rows ``start:stop``."""
        ref = self.ref_log_probs
        return ActorBatch(
            self.input_ids[start:stop],
            self.attention_mask[start:stop],
            self.response_mask[start:stop],
            self.old_log_probs[start:stop],
            self.advantages[start:stop],
            None if ref is None else ref[start:stop],
        )


def _global_sum(x: float, device: torch.device) -> float:
    t = torch.tensor([x], dtype=torch.float64, device=device)
    dist.all_reduce(t)
    return float(t.item())


def update_actor(
    module: nn.Module,
    optimizer: torch.optim.Optimizer,
    batch: ActorBatch,
    plan: Plan,
    loss_cfg: ActorLossConfig,
    max_grad_norm: float,
    *,
    temperature: float = 1.0,
) -> dict[str, float]:
    """Run ``plan.optimizer_steps_per_step`` optimizer steps on ``batch`` (every rank calls it together).

    Returns:
        This rank's metrics: ``actor/pg_loss``, ``actor/kl_loss``, ``actor/entropy`` (per mini-batch, summed over
        its micro-batches, averaged over mini-batches), ``actor/pg_clipfrac``, ``actor/ppo_kl``,
        ``actor/pg_clipfrac_lower`` (averaged over micro-batches) and ``actor/grad_norm`` (averaged over
        optimizer steps). Average them over ranks for the global value.
    """
    device = batch.input_ids.device
    response_len = batch.response_mask.shape[1]
    world = dist.get_world_size()
    mini, micro = plan.mini_batch_per_rank, plan.micro_batch_per_rank
    n_rows = batch.input_ids.shape[0]
    mini_metrics, micro_metrics, grad_norms = [], [], []
    module.train()
    for _ in range(plan.ppo_epochs):
        for m0 in range(0, n_rows, mini):
            mb = batch.slice(m0, m0 + mini)
            mask = mb.response_mask.float()
            global_info = {
                "dp_size": world,
                "batch_num_tokens": _global_sum(float(mask.sum()), device),
                "global_batch_size": _global_sum(float((mask.sum(-1) > 0).sum()), device),
            }
            summed: dict[str, float] = {}
            optimizer.zero_grad(set_to_none=True)
            n_micro = (mb.input_ids.shape[0] + micro - 1) // micro
            for j in range(n_micro):
                ub = mb.slice(j * micro, (j + 1) * micro)
                with gradient_sync(module, enabled=(j == n_micro - 1)):
                    want_grad_entropy = bool(loss_cfg.entropy_coeff)
                    logp, ent = response_log_probs(
                        module,
                        ub.input_ids,
                        ub.attention_mask,
                        response_len,
                        with_entropy=want_grad_entropy,
                        temperature=temperature,
                    )
                    if not want_grad_entropy:
                        ent = None
                    loss, metrics = ppo_actor_loss(
                        loss_cfg,
                        logp,
                        ent,
                        ub.old_log_probs,
                        ub.advantages,
                        ub.response_mask,
                        ub.ref_log_probs,
                        **global_info,
                    )
                    loss.backward()
                for k in ("actor/pg_loss", "actor/kl_loss", "actor/entropy"):
                    if k in metrics:
                        summed[k] = summed.get(k, 0.0) + metrics.pop(k)
                micro_metrics.append(metrics)
            grad_norm = clip_grad_norm(module, max_grad_norm)
            if torch.isfinite(torch.tensor(grad_norm)):
                optimizer.step()
            else:
                print(f"fsdpcfg: warning: gradient norm {grad_norm} is not finite; optimizer step skipped")
            optimizer.zero_grad(set_to_none=True)
            grad_norms.append(grad_norm)
            mini_metrics.append(summed)
    out = mean_over(mini_metrics)
    out.update(mean_over(micro_metrics))
    out["actor/grad_norm"] = sum(grad_norms) / len(grad_norms)
    return out
