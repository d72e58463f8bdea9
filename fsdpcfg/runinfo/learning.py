"""Signs that a GRPO run has stopped learning, read from its step metrics (issue 23 item 3): every advantage 0,
a gradient norm of 0, responses collapsed to a token or less, entropy collapsed to a single choice.

The same table serves both ends of a run: :class:`LearningWatch` warns once a sign has held for
:data:`PATIENCE` consecutive steps (rank 0, above the progress bar), and :func:`stalled_spans` names the spans
in the closing summary (read back from ``metrics.jsonl``). Metric names are verl's
(``verl/trainer/ppo/metric_utils.py`` ``compute_data_metrics``; ``actor/grad_norm``, ``actor/entropy``).

What a sign means, why it matters:

* every advantage 0 (``critic/advantages/max`` and ``/min`` both 0): within each prompt's group every sample got
  the same reward, so the group-relative advantage, and with it the policy gradient, is 0 (GRPO, RLOO and the
  other group estimators). Rewards all 0: the task is beyond the model (a random-init model always is); all 1:
  nothing left to learn.
* ``actor/grad_norm`` 0: no parameter moves.
* ``response_length/mean`` <= 1 token: the policy ends its answers at once (the collapse of a too-high learning
  rate: issue 23, ``+recipe=arith_grpo`` at lr 1e-2).
* ``actor/entropy`` < :data:`MIN_ENTROPY` nats: the policy samples one token wherever it stands, so the samples of
  a group agree and the advantages go to 0 next.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

#: consecutive steps a sign must hold before it is reported.
PATIENCE = 3
#: nats of ``actor/entropy`` below which the policy counts as collapsed to one choice.
MIN_ENTROPY = 0.01
#: the tolerance under which an advantage or a gradient norm counts as 0 (float32 noise of a zero computation).
ZERO = 1e-12


def _num(row: dict[str, Any], key: str) -> float | None:
    v = row.get(key)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _zero_advantages(row: dict[str, Any]) -> bool:
    hi, lo = _num(row, "critic/advantages/max"), _num(row, "critic/advantages/min")
    return hi is not None and lo is not None and abs(hi) <= ZERO and abs(lo) <= ZERO


def _zero_grad(row: dict[str, Any]) -> bool:
    g = _num(row, "actor/grad_norm")
    return g is not None and abs(g) <= ZERO


def _short_responses(row: dict[str, Any]) -> bool:
    n = _num(row, "response_length/mean")
    return n is not None and n <= 1.0


def _low_entropy(row: dict[str, Any]) -> bool:
    e = _num(row, "actor/entropy")
    return e is not None and e < MIN_ENTROPY


@dataclass(frozen=True)
class Sign:
    """One sign of stalled learning: ``holds(row)`` on a step's metrics, what it is (``what``, with the step's
    value through ``shown``) and what to try (``fix``)."""

    name: str
    holds: Callable[[dict[str, Any]], bool]
    what: str
    shown: str
    fix: str


SIGNS: tuple[Sign, ...] = (
    Sign(
        "advantages",
        _zero_advantages,
        "every advantage is 0 (each prompt's samples got the same reward, so the policy gradient is 0)",
        "critic/rewards/mean",
        "rewards all 0: the task is beyond the model (an SFT first, an easier task, more samples per prompt with "
        "actor_rollout_ref.rollout.n); rewards all 1: nothing is left to learn",
    ),
    Sign(
        "grad_norm",
        _zero_grad,
        "the gradient norm is 0 (no parameter moves)",
        "actor/grad_norm",
        "see the advantages and the loss: a zero gradient follows from zero advantages or a masked-out batch",
    ),
    Sign(
        "response_length",
        _short_responses,
        "the responses have collapsed to a token or less",
        "response_length/mean",
        "a lower actor_rollout_ref.actor.optim.lr (the usual cause), or resume from an earlier checkpoint",
    ),
    Sign(
        "entropy",
        _low_entropy,
        f"the policy's entropy is under {MIN_ENTROPY} nats (it samples one token wherever it stands)",
        "actor/entropy",
        "a lower actor_rollout_ref.actor.optim.lr, actor_rollout_ref.actor.entropy_coeff > 0, or a higher "
        "actor_rollout_ref.rollout.temperature",
    ),
)


class LearningWatch:
    """Feed it each training step's metrics (:meth:`update`); it returns a warning the first time a sign of
    :data:`SIGNS` has held for ``patience`` consecutive steps, and again only after the sign stopped and came back.

    Args:
        patience: consecutive steps before a warning (:data:`PATIENCE`).
        why_zero: a sentence added to the zero-advantage warning when the rewards are all 0 (the launcher knows
            when the model is a random-init asset: :func:`fsdpcfg.assets.random_init`).
    """

    def __init__(self, patience: int = PATIENCE, why_zero: str | None = None) -> None:
        self.patience = patience
        self.why_zero = why_zero
        self._run = {s.name: 0 for s in SIGNS}

    def update(self, step: int, row: dict[str, Any]) -> list[str]:
        """The warnings step ``step``'s metrics ``row`` raise (each one line, ``fsdpcfg: warning:`` first)."""
        out = []
        for s in SIGNS:
            self._run[s.name] = self._run[s.name] + 1 if s.holds(row) else 0
            if self._run[s.name] == self.patience:
                value = _num(row, s.shown)
                shown = f" ({s.shown} = {value:.4g})" if value is not None else ""
                extra = ""
                if s.name == "advantages" and self.why_zero and (_num(row, "critic/rewards/max") or 0.0) <= ZERO:
                    extra = f" {self.why_zero}"
                out.append(
                    f"fsdpcfg: warning: steps {step - self.patience + 1}-{step}: {s.what}{shown}.{extra} Try: {s.fix}"
                )
        return out


def stalled_spans(rows: Iterable[dict[str, Any]], patience: int = PATIENCE) -> list[str]:
    """For the closing summary: each sign that held for at least ``patience`` consecutive training steps of
    ``rows`` (``metrics.jsonl`` rows, validation-only rows skipped), as ``"<what>: steps A-B"`` with every such
    span, in step order."""
    train = [r for r in rows if "timing_s/step" in r and isinstance(r.get("step"), int)]
    out = []
    for s in SIGNS:
        spans: list[tuple[int, int]] = []
        start = prev = None
        for r in train:
            if s.holds(r):
                start = r["step"] if start is None else start
                prev = r["step"]
            else:
                if start is not None and prev is not None and prev - start + 1 >= patience:
                    spans.append((start, prev))
                start = prev = None
        if start is not None and prev is not None and prev - start + 1 >= patience:
            spans.append((start, prev))
        if spans:
            out.append(f"{s.what}: steps " + ", ".join(f"{a}-{b}" for a, b in spans))
    return out


def why_zero_reward(model_path: str) -> str | None:
    """One sentence on why a run of the model at ``model_path`` earns no reward when it is one of fsdpcfg's
    random-init assets (:func:`fsdpcfg.assets.random_init`), naming the recipes that show learning offline;
    ``None`` for any other model."""
    from fsdpcfg.assets import random_init

    name = random_init(model_path)
    if name is None:
        return None
    return (
        f"The model is fsdpcfg's random-init {name}: its answers are noise, so it earns no reward and there is "
        "nothing to learn from; `python -m fsdpcfg +recipe=arith_sft` then `+recipe=arith_grpo_sft` shows learning "
        "offline."
    )
