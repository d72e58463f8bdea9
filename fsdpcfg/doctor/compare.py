"""Numerical comparisons the doctor makes: a patched model against the unpatched one (forward log-probs and
backward gradients of the same masked loss), and two sets of response log-probs.

The probe batch has the shape of rollout data: left-padded prompts of different lengths, right-padded responses
of different lengths (one row unpadded), so that padding-sensitive patches are really exercised. Log-probs come
from the engine's own forward (:func:`fsdpcfg.train.engine.forward.response_log_probs`), the path the trainer
uses, so a patch is compared where it acts.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

#: fp32 tolerances: log-probs (absolute, nats) and gradients (max abs difference / largest gradient).
LOGP_TOL_FP32 = 5e-5
GRAD_TOL_FP32 = 1e-4
#: a compute dtype of 16 bits (bf16/fp16) somewhere on either side of a log-prob comparison.
LOGP_TOL_HALF = 0.1


def logp_tolerance(*dtypes: torch.dtype) -> float:
    """The log-prob tolerance for a comparison between sides computing in ``dtypes``."""
    return LOGP_TOL_FP32 if all(d == torch.float32 for d in dtypes) else LOGP_TOL_HALF


def probe_batch(
    vocab_size: int, rows: int = 4, prompt: int = 7, response: int = 6, seed: int = 0, low: int = 3
) -> tuple[torch.Tensor, torch.Tensor, int]:
    """A padded batch ``(input_ids, attention_mask, response_len)``, each tensor ``(rows, prompt + response)``.

    Row ``i`` has ``(2 i) mod 5`` left pads and, for ``i`` not divisible by 3, ``2 (i mod 3)`` right pads; ids are
    drawn from ``[low, min(vocab, 5000))`` so that special tokens at the bottom of the vocabulary are avoided.
    """
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(low, max(low + 1, min(vocab_size, 5000)), (rows, prompt + response), generator=g)
    mask = torch.ones_like(ids)
    for i in range(rows):
        mask[i, : (2 * i) % 5] = 0
        if i % 3:
            mask[i, -(i % 3) * 2 :] = 0
    return ids, mask, response


def quiet_dropout(model: nn.Module) -> None:
    """Set every dropout probability of ``model`` to 0 (``nn.Dropout`` modules and ``config.*dropout*`` floats),
    so that a model in ``train()`` mode (where checkpointing acts) is deterministic."""
    for m in model.modules():
        if isinstance(m, nn.Dropout):
            m.p = 0.0
    cfg = getattr(model, "config", None)
    for k, v in vars(cfg).items() if cfg is not None else []:
        if "dropout" in k and isinstance(v, float):
            setattr(cfg, k, 0.0)


def loss_and_grads(
    model: nn.Module, ids: torch.Tensor, mask: torch.Tensor, response_len: int
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """One forward/backward of the token-mean negative log-likelihood of the real response tokens.

    Returns:
        ``(log_probs (rows, response_len), {param_name: grad})`` (gradients of parameters that received one).
    """
    from fsdpcfg.train.engine.forward import response_log_probs

    model.train()
    quiet_dropout(model)
    model.zero_grad(set_to_none=True)
    lp, _ = response_log_probs(model, ids, mask, response_len)
    rmask = mask[:, -response_len:].float()
    (-(lp * rmask).sum() / rmask.sum()).backward()
    grads = {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None}
    model.zero_grad(set_to_none=True)
    return lp.detach(), grads


@dataclass
class PatchComparison:
    """Patched vs unpatched on one probe batch.

    Attributes:
        max_logp_diff: max |log p| difference over real response tokens (nats).
        max_rel_grad_diff: max |g_patched - g_plain| over all parameters / max |g_plain|.
        missing_grads: parameters with a gradient on one side only.
        logp_tol, grad_tol: the tolerances applied.
    """

    max_logp_diff: float
    max_rel_grad_diff: float
    missing_grads: list[str]
    logp_tol: float
    grad_tol: float

    @property
    def ok(self) -> bool:
        return (
            not self.missing_grads and self.max_logp_diff <= self.logp_tol and self.max_rel_grad_diff <= self.grad_tol
        )

    def describe(self) -> str:
        """One line with the numbers and the tolerances."""
        miss = f", gradients missing on one side: {self.missing_grads[:3]}" if self.missing_grads else ""
        return (
            f"log-prob diff {self.max_logp_diff:.2e} (tol {self.logp_tol:.0e}), grad diff "
            f"{self.max_rel_grad_diff:.2e} of max (tol {self.grad_tol:.0e}){miss}"
        )


def compare_patched(
    plain: nn.Module, patched: nn.Module, ids: torch.Tensor, mask: torch.Tensor, response_len: int
) -> PatchComparison:
    """Compare ``patched`` (the same weights with patches applied) with ``plain`` on one batch, in fp32.

    Args:
        plain, patched: two copies of one model, same weights, same dtype.
        ids, mask: ``(rows, seq)`` from :func:`probe_batch`; response_len: response positions at the end.
    """
    lp0, g0 = loss_and_grads(plain, ids, mask, response_len)
    lp1, g1 = loss_and_grads(patched, ids, mask, response_len)
    real = mask[:, -response_len:].bool()
    logp = float((lp0 - lp1)[real].abs().max())
    missing = sorted(set(g0) ^ set(g1))
    common = [k for k in g0 if k in g1]
    scale = max((float(g0[k].abs().max()) for k in common), default=0.0) or 1.0
    grad = max((float((g0[k] - g1[k]).abs().max()) for k in common), default=0.0) / scale
    dtypes = {p.dtype for p in plain.parameters()}
    tol = LOGP_TOL_FP32 if dtypes == {torch.float32} else LOGP_TOL_HALF
    gtol = GRAD_TOL_FP32 if dtypes == {torch.float32} else 5e-2
    return PatchComparison(logp, grad, missing, tol, gtol)


def max_masked_diff(a: torch.Tensor, b: torch.Tensor, mask: torch.Tensor) -> float:
    """max |a - b| over positions where ``mask`` is set (0.0 when none is)."""
    m = mask.bool()
    return float((a - b)[m].abs().max()) if bool(m.any()) else 0.0
