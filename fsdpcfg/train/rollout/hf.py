"""Rollout adapter ``hf``: an unsharded Hugging Face replica of the policy on every rank, fed by the engine's
weight stream, generating with ``model.generate``.

Each rank generates only for its own shard of (prompt, sample) pairs from its own replica: a sharded model's
``generate`` desynchronises the ranks when their sequences end at different lengths.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import torch
from torch import nn

from fsdpcfg.train.rollout.load import load_buckets

if TYPE_CHECKING:
    from peft import PeftModel
    from transformers import PreTrainedModel

    from fsdpcfg.schema.rollout import RolloutSection


@dataclass
class GenerationSettings:
    """Sampling settings from ``actor_rollout_ref.rollout`` (verl names).

    Attributes:
        n: samples per prompt.
        response_length: maximum new tokens (``rollout.response_length`` = ``data.max_response_length``).
        temperature, top_p, top_k, do_sample: as in verl; ``top_k <= 0`` means no top-k filter.
        ignore_eos: keep generating past the end token.
    """

    n: int
    response_length: int
    temperature: float
    top_p: float
    top_k: int
    do_sample: bool
    ignore_eos: bool

    @classmethod
    def from_rollout_cfg(cls, r: RolloutSection) -> GenerationSettings:
        """Read the ``actor_rollout_ref.rollout`` section."""
        return cls(
            n=int(r.n),
            response_length=int(r.response_length),
            temperature=float(r.temperature),
            top_p=float(r.top_p),
            top_k=int(r.top_k),
            do_sample=bool(r.do_sample),
            ignore_eos=bool(r.ignore_eos),
        )


@dataclass
class RolloutOutput:
    """Generated sequences of one rank.

    Attributes:
        input_ids: ``(batch, prompt_len + response_length)``: the left-padded prompt then the response,
            right-padded with the pad token after the end token.
        attention_mask: same shape; 1 on prompt tokens and on response tokens up to and including the end token.
        responses: ``(batch, response_length)`` the response part of ``input_ids``.
        response_mask: ``(batch, response_length)`` the response part of ``attention_mask``.
    """

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    responses: torch.Tensor
    response_mask: torch.Tensor


def response_mask_until_eos(responses: torch.Tensor, eos_ids: list[int]) -> torch.Tensor:
    """1 for every response token up to and including the first end token, 0 after it: ``(b, T) -> (b, T)``."""
    is_eos = torch.isin(responses, torch.tensor(eos_ids, dtype=responses.dtype))
    after = (is_eos.long().cumsum(dim=-1) - is_eos.long()) > 0  # strictly after the first eos
    return (~after).long()


@runtime_checkable
class _Generates(Protocol):
    """A model with ``generate`` (mypy reads ``GenerationMixin.generate``, under ``torch.no_grad``, as unbound)."""

    def generate(self, **kwargs: Any) -> Any: ...


def generate_ids(model: PreTrainedModel | PeftModel, **kwargs: Any) -> torch.Tensor:
    """``model.generate(**kwargs)``: the ``(batch, prompt_len + new_tokens)`` token ids.

    transformers 5 keeps ``generate`` on ``GenerationMixin``, which every ``*ForCausalLM`` inherits (a bare
    ``PreTrainedModel`` has none); a ``PeftModel`` forwards it to its base model with the adapter active.

    Raises:
        TypeError: ``model`` cannot generate, or returned a ``GenerateOutput`` (``return_dict_in_generate``)
            instead of the token ids.
    """
    if not isinstance(model, _Generates):  # hasattr(model, "generate")
        raise TypeError(f"{type(model).__name__} cannot generate (no GenerationMixin): not a causal LM")
    out = model.generate(**kwargs)
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"generate returned {type(out).__name__}, not the token ids (return_dict_in_generate set?)")
    return out


class HFRollout:
    """An unsharded replica of the policy that generates responses.

    Args:
        model: the replica, a Hugging Face causal LM (built from the model's config; its weights arrive through
            :meth:`update_weights`), or the ``PeftModel`` wrapping one (``fsdpcfg.train.lora.rollout``).
        dtype: the rollout dtype (``actor_rollout_ref.rollout.dtype``); weights are cast to it on arrival.
        eos_token_ids: token ids that end a response; pad_token_id: the id padding responses.
    """

    def __init__(
        self, model: PreTrainedModel | PeftModel, dtype: torch.dtype, eos_token_ids: list[int], pad_token_id: int
    ) -> None:
        module: nn.Module = model  # as a Module: transformers' @wraps'd PreTrainedModel.to reads as unbound to mypy
        module.to(dtype)  # in place
        self.model = model
        self.dtype = dtype
        self.eos_token_ids = list(eos_token_ids)
        self.pad_token_id = int(pad_token_id)
        for p in self.model.parameters():
            p.requires_grad_(False)
        self._expected = set(self.model.state_dict().keys())
        self.syncs = 0

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def update_weights(self, buckets: Iterable[list[tuple[str, torch.Tensor]]]) -> int:
        """Load the weights the engine streams, one bucket at a time, then post-process once.

        Each bucket is a list of ``(hf_name, full_tensor)``; tensors are copied (and cast) into the replica's
        parameters. After the last bucket the replica re-ties its tied weights and goes to eval mode. Works any
        number of times.

        Returns:
            The number of tensors loaded.

        Raises:
            RuntimeError: a name the replica does not have, or a parameter that no bucket delivered (tied
                duplicates excepted).
        """
        params = dict(self.model.named_parameters(remove_duplicate=False))
        buffers = dict(self.model.named_buffers())

        def targets(name: str) -> list[torch.Tensor]:
            t = params.get(name, buffers.get(name))
            return [] if t is None else [t]

        loaded = load_buckets(
            buckets,
            targets,
            expected=self._expected,
            unknown=lambda n: f"the rollout replica has no tensor named {n!r}",
            may_be_absent=self._is_tied_copy,
        )
        self._post_process()
        self.syncs += 1
        return len(loaded)

    def _is_tied_copy(self, name: str, loaded: set[str]) -> bool:
        tied = getattr(self.model.config, "tie_word_embeddings", False)
        return bool(tied) and name.endswith("lm_head.weight") and any(k.endswith("embed_tokens.weight") for k in loaded)

    def _post_process(self) -> None:
        if getattr(self.model.config, "tie_word_embeddings", False):
            self.model.tie_weights()
        self.model.eval()

    @torch.no_grad()
    def generate(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        settings: GenerationSettings,
        generator_seed: int | None = None,
    ) -> RolloutOutput:
        """Generate one response per row (the caller repeats each prompt ``n`` times).

        Args:
            input_ids: ``(batch, prompt_len)`` left-padded prompts; attention_mask: same shape.
            settings: the sampling settings.
            generator_seed: seeds torch's global RNG before sampling (per rank and step, for reproducibility).

        Returns:
            A :class:`RolloutOutput` whose responses are exactly ``settings.response_length`` wide (sampling
            with a temperature > 0: rule FC506 under the native launcher).
        """
        if self.syncs == 0:
            raise RuntimeError("generate() before the first weight synchronisation")
        if generator_seed is not None:
            torch.manual_seed(generator_seed)
        dev = self.device
        kwargs: dict[str, Any] = dict(
            max_new_tokens=settings.response_length,
            do_sample=settings.do_sample,
            pad_token_id=self.pad_token_id,
            use_cache=True,
            eos_token_id=None if settings.ignore_eos else self.eos_token_ids,
        )
        if settings.do_sample:
            kwargs.update(
                temperature=settings.temperature,
                top_p=settings.top_p,
                top_k=settings.top_k if settings.top_k > 0 else 0,
            )
        if settings.ignore_eos:
            kwargs["min_new_tokens"] = settings.response_length
        out = generate_ids(self.model, input_ids=input_ids.to(dev), attention_mask=attention_mask.to(dev), **kwargs)
        prompt_len = input_ids.shape[1]
        responses = out[:, prompt_len:].cpu()
        if responses.shape[1] < settings.response_length:
            pad = torch.full(
                (responses.shape[0], settings.response_length - responses.shape[1]),
                self.pad_token_id,
                dtype=responses.dtype,
            )
            responses = torch.cat([responses, pad], dim=1)
        mask = (
            torch.ones_like(responses)
            if settings.ignore_eos
            else response_mask_until_eos(responses, self.eos_token_ids)
        )
        responses = torch.where(mask.bool(), responses, torch.full_like(responses, self.pad_token_id))
        return RolloutOutput(
            input_ids=torch.cat([input_ids.cpu(), responses], dim=1),
            attention_mask=torch.cat([attention_mask.cpu().long(), mask], dim=1),
            responses=responses,
            response_mask=mask,
        )
