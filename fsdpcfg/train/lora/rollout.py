"""The ``hf`` rollout for a LoRA actor, and the synchronisation that feeds it.

Design: the replica is a **PEFT model** (the unsharded base model wrapped with the actor's ``LoraConfig`` under
the same adapter name), not a merged plain model. The first synchronisation loads the base weights (sent under
Hugging Face names) into the replica's ``base_layer`` weights, then the adapter; every later synchronisation
loads only the adapter weights (PEFT adapter-file keys), which is what changes during LoRA training. The replica
computes exactly what the actor computes (the same un-merged LoRA forward), so rollout and actor log-probs agree
to fp32 rounding; a merged replica would agree only to the rounding of ``W + s B A``. It is what verl's vLLM and
SGLang adapters do with ``base_sync_done`` (base once, then adapters).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from torch import nn

from fsdpcfg.errors import ConfigError
from fsdpcfg.train.engine.fsdp import bucketed
from fsdpcfg.train.lora import names
from fsdpcfg.train.lora.collect import iter_adapter_params, iter_base_params
from fsdpcfg.train.lora.setup import LoraSettings
from fsdpcfg.train.model import pretrained
from fsdpcfg.train.rollout.hf import HFRollout
from fsdpcfg.train.rollout.load import load_buckets

if TYPE_CHECKING:
    from peft import LoraConfig, PeftModel
    from transformers import PreTrainedModel

    from fsdpcfg.schema.model import ModelSection
    from fsdpcfg.schema.root import RunConfig

Bucket = list[tuple[str, torch.Tensor]]


class LoraHFRollout(HFRollout):
    """An unsharded PEFT replica of a LoRA policy that generates responses.

    Args:
        base_model: the replica's base model (built from the model's config, weights arriving by sync, or read
            from ``model.path`` when the base is preloaded).
        lora_config: the actor's ``peft.LoraConfig``; adapter_name: the actor's adapter name.
        dtype, eos_token_ids, pad_token_id: as for :class:`HFRollout`.
        base_loaded: the base weights are already in ``base_model`` (preloaded from disk).
    """

    model: PeftModel  # the base wrapped with the actor's adapter (HFRollout's model, narrowed)

    def __init__(
        self,
        base_model: PreTrainedModel,
        lora_config: LoraConfig,
        adapter_name: str,
        dtype: torch.dtype,
        eos_token_ids: list[int],
        pad_token_id: int,
        *,
        base_loaded: bool = False,
    ) -> None:
        from peft import get_peft_model

        self.adapter_name = adapter_name
        super().__init__(
            get_peft_model(base_model, lora_config, adapter_name=adapter_name), dtype, eos_token_ids, pad_token_id
        )
        self.base_loaded = base_loaded
        self.adapter_syncs = 0
        params = dict(self.model.named_parameters(remove_duplicate=False))
        self._base_targets: dict[str, list[torch.Tensor]] = {}
        for n, t in self.model.state_dict(keep_vars=True).items():  # parameters and persistent buffers
            hf = names.base_name(n)
            if hf is not None:
                self._base_targets.setdefault(hf, []).append(t)
        self._adapter_targets = {k: params[n] for n in params if (k := names.adapter_key(n, adapter_name)) is not None}

    def update_weights(self, buckets: Iterable[Bucket]) -> int:
        """Load base weights sent under Hugging Face names into the replica's base layers (first sync).

        Returns:
            The number of tensors loaded.

        Raises:
            RuntimeError: an unknown name, a shape mismatch, or a base parameter that did not arrive (tied
                copies excepted).
        """
        loaded = load_buckets(
            buckets,
            self._base_targets.get,
            expected=self._base_targets,
            what="base weights",
            unknown=lambda n: (
                f"the LoRA replica has no base weight named {n!r}"
                + (
                    " (an adapter key: send it with update_adapter)"
                    if names.is_lora_name(n) or "base_layer" in n
                    else ""
                )
            ),
            may_be_absent=self._is_tied_copy,
        )
        if getattr(self.model.config, "tie_word_embeddings", False):
            pretrained(self.model.get_base_model()).tie_weights()
        self.base_loaded = True
        self.model.eval()
        return len(loaded)

    def update_adapter(self, buckets: Iterable[Bucket]) -> int:
        """Load adapter weights (PEFT adapter-file keys, adapter name removed) into the replica's adapter.

        Returns:
            The number of tensors loaded.

        Raises:
            RuntimeError: the base has not been loaded yet, an unknown key, a shape mismatch, or an adapter weight
                that did not arrive.
        """
        if not self.base_loaded:
            raise RuntimeError("weight sync: adapter weights arrived before the base weights; send the base first")
        adapter = self._adapter_targets
        loaded = load_buckets(
            buckets,
            lambda k: [adapter[k]] if k in adapter else None,
            expected=adapter,
            what="adapter weights",
            unknown=lambda k: f"the replica's adapter {self.adapter_name!r} has no weight {k!r}",
        )
        self.model.eval()
        self.adapter_syncs += 1
        self.syncs += 1
        return len(loaded)


@dataclass
class SyncReport:
    """What one synchronisation sent: ``base_tensors`` (0 after the first), ``adapter_tensors``, the bucket count,
    and the first names of each kind (for tests and logs)."""

    base_tensors: int
    adapter_tensors: int
    buckets: int
    base_names: list[str]
    adapter_names: list[str]


class LoraWeightSync:
    """Synchronises a LoRA actor (plain, FSDP1 or FSDP2 ``PeftModel``) into a :class:`LoraHFRollout`.

    First call: the full base weights under Hugging Face names (unless the rollout preloaded them), then the
    adapter; later calls: the adapter only. Every rank calls it together.

    Args:
        actor: the (sharded) PEFT model; settings: its :class:`LoraSettings`; bucket_megabytes: bucket size.
    """

    def __init__(self, actor: nn.Module, settings: LoraSettings, bucket_megabytes: float) -> None:
        self.actor = actor
        self.settings = settings
        self.bucket_megabytes = float(bucket_megabytes)
        self.base_sent = settings.base_preloaded

    def base_stream(self):
        """The base weights, bucketed (collective).

        Raises:
            ConfigError: layered mode (``rollout.layered_summon``): it gathers adapters only, so the base must be
                preloaded in the rollout.
        """
        if self.settings.layered_summon:
            raise ConfigError(
                "layered_summon gathers only the adapter weights, one layer at a time, and the base "
                "model has not been sent to the rollout yet: preload the base in the rollout",
                key="actor_rollout_ref.rollout.layered_summon",
                value=True,
                fix="set actor_rollout_ref.rollout.load_format=safetensors (the rollout reads the base "
                "from model.path), or actor_rollout_ref.rollout.layered_summon=false",
            )
        return bucketed(iter_base_params(self.actor), self.bucket_megabytes)

    def adapter_stream(self):
        """The adapter weights of ``settings.adapter_name``, bucketed (collective; layered when configured)."""
        s = self.settings
        return bucketed(
            iter_adapter_params(self.actor, s.adapter_name, layered=s.layered_summon, layer_prefixes=s.layer_prefixes),
            self.bucket_megabytes,
        )

    def __call__(self, rollout: LoraHFRollout) -> SyncReport:
        """Run one synchronisation; return what it sent."""
        base_names: list[str] = []
        adapter_names: list[str] = []
        n_buckets = 0
        base_n = 0

        def counted(stream, sink):
            nonlocal n_buckets
            for b in stream:
                n_buckets += 1
                sink.extend(n for n, _ in b)
                yield b

        if not self.base_sent:
            base_n = rollout.update_weights(counted(self.base_stream(), base_names))
            self.base_sent = True
        adapter_n = rollout.update_adapter(counted(self.adapter_stream(), adapter_names))
        return SyncReport(
            base_tensors=base_n,
            adapter_tensors=adapter_n,
            buckets=n_buckets,
            base_names=base_names,
            adapter_names=adapter_names,
        )


def lora_settings_for_run(cfg: RunConfig) -> LoraSettings | None:
    """The LoRA settings of a GRPO run (``actor_rollout_ref.model.lora_*``, ``rollout.layered_summon`` and
    ``load_format``, ``fsdpcfg.lora_layer_prefixes``); ``None`` when ``lora_rank`` is 0. A resumed LoRA run
    reads the base from ``model.path`` and its adapter and optimizer state from the checkpoint's DCP state.

    Raises:
        ConfigError: invalid LoRA keys.
    """
    arr = cfg.actor_rollout_ref
    return LoraSettings.from_model_cfg(arr.model, rollout_cfg=arr.rollout, fsdpcfg_cfg=cfg.fsdpcfg)


def build_lora_rollout(
    actor: nn.Module,
    model_cfg: ModelSection,
    settings: LoraSettings,
    dtype: torch.dtype,
    eos_token_ids: list[int],
    pad_token_id: int,
    device: torch.device,
    bucket_megabytes: float,
) -> tuple[LoraHFRollout, LoraWeightSync]:
    """The PEFT replica of a LoRA actor (its base read from ``model.path`` when ``load_format`` is not ``dummy``)
    and the synchronisation that feeds it."""
    from fsdpcfg.train.model import load_model

    replica = load_model(model_cfg, dtype, weights=settings.base_preloaded, device=device)
    rollout = LoraHFRollout(
        replica,
        settings.lora_config(),
        settings.adapter_name,
        dtype,
        eos_token_ids,
        pad_token_id,
        base_loaded=settings.base_preloaded,
    )
    return rollout, LoraWeightSync(actor, settings, bucket_megabytes)
