"""LoRA settings from the config and wrapping a Hugging Face model with PEFT before it is sharded.

Keys (verl 0.9.1 names): ``actor_rollout_ref.model.lora_rank`` (0 = no LoRA), ``lora_alpha``, ``target_modules``
(``all-linear`` or a list of module names), ``exclude_modules``, ``lora_adapter_path`` (an adapter folder to
start from); ``actor_rollout_ref.rollout.layered_summon`` and ``load_format``; fsdpcfg's
``fsdpcfg.lora_layer_prefixes``. The SFT tree uses the same ``model.*`` keys.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from torch import nn

from fsdpcfg.errors import ConfigError

if TYPE_CHECKING:
    from peft import PeftModel

    from fsdpcfg.schema.fsdpcfg_section import FsdpcfgSection
    from fsdpcfg.schema.rollout import RolloutSection
    from fsdpcfg.train.model import ModelCfg

DEFAULT_ADAPTER = "default"


def _default_layer_prefixes() -> tuple[str, ...]:
    """``fsdpcfg.lora_layer_prefixes``' default, from its one home (the schema's field)."""
    from fsdpcfg.schema.fsdpcfg_section import FsdpcfgSection

    return tuple(FsdpcfgSection().lora_layer_prefixes)


@dataclass
class LoraSettings:
    """What the LoRA adapter looks like and how its weights reach the rollout.

    Attributes:
        rank: LoRA rank ``r`` (> 0); alpha: ``lora_alpha`` (the update is scaled by ``alpha / rank``).
        target_modules: ``"all-linear"`` or module names PEFT matches; exclude_modules: names PEFT skips.
        adapter_name: the PEFT adapter trained and synchronised (any name; ``"default"`` unless set).
        adapter_path: a saved adapter folder to start from (``model.lora_adapter_path``), or ``None``.
        layered_summon: gather adapter weights one layer (FSDP unit) at a time (needs the base preloaded).
        base_preloaded: the rollout already holds the base weights (``rollout.load_format`` is not ``dummy``:
            it read them from ``model.path``), so the first synchronisation sends only the adapter.
        layer_prefixes: names of the block containers followed by an index (``layers.`` -> ``layers.0``).
        key_prefix: where these keys live in the config (for error messages).
    """

    rank: int
    alpha: float
    target_modules: Any = "all-linear"
    exclude_modules: Any = None
    adapter_name: str = DEFAULT_ADAPTER
    adapter_path: str | None = None
    layered_summon: bool = False
    base_preloaded: bool = False
    layer_prefixes: tuple[str, ...] = field(default_factory=_default_layer_prefixes)
    key_prefix: str = "actor_rollout_ref.model"

    @classmethod
    def from_model_cfg(
        cls,
        model_cfg: ModelCfg,
        *,
        rollout_cfg: RolloutSection | None = None,
        fsdpcfg_cfg: FsdpcfgSection | None = None,
        key_prefix: str = "actor_rollout_ref.model",
        adapter_name: str = DEFAULT_ADAPTER,
    ) -> LoraSettings | None:
        """Read the LoRA keys of a ``model`` section; ``None`` when ``lora_rank`` is 0 (no LoRA). The schema
        validated the values (``lora_rank >= 0``, ``lora_alpha >= 0``, non-empty layer prefixes) and rule FC507
        the adapter (``lora_alpha > 0`` and some ``target_modules`` with LoRA on) before the run started.
        """
        rank = model_cfg.lora_rank
        if rank == 0:
            return None
        prefixes = tuple(fsdpcfg_cfg.lora_layer_prefixes) if fsdpcfg_cfg else _default_layer_prefixes()
        return cls(
            rank=rank,
            alpha=float(model_cfg.lora_alpha),
            target_modules=_plain(model_cfg.target_modules),
            exclude_modules=_plain(model_cfg.exclude_modules),
            adapter_name=adapter_name,
            adapter_path=model_cfg.lora_adapter_path,
            # no rollout section (SFT): nothing to summon, no engine holding the base weights
            layered_summon=rollout_cfg.layered_summon if rollout_cfg else False,
            base_preloaded=rollout_cfg is not None and "dummy" not in rollout_cfg.load_format,
            layer_prefixes=prefixes,
            key_prefix=key_prefix,
        )

    def lora_config(self, base_model: str | None = None):
        """The ``peft.LoraConfig`` (causal LM, no bias, no dropout: rollout and actor must compute alike);
        ``base_model`` is recorded as its ``base_model_name_or_path`` (what a saved adapter was trained on)."""
        from peft import LoraConfig, TaskType

        return LoraConfig(
            task_type=TaskType.CAUSAL_LM,
            r=self.rank,
            lora_alpha=self.alpha,  # type: ignore[arg-type]  # peft annotates int; a float alpha (verl's) works
            base_model_name_or_path=base_model,
            target_modules=self.target_modules,
            exclude_modules=self.exclude_modules,
            lora_dropout=0.0,
            bias="none",
        )


def _plain(v: Any) -> Any:
    return list(v) if isinstance(v, (list, tuple)) else v


def apply_lora(model: nn.Module, settings: LoraSettings) -> PeftModel:
    """Wrap ``model`` with a LoRA adapter named ``settings.adapter_name`` (base weights frozen, adapter trainable);
    with ``adapter_path`` the adapter is loaded from that folder instead of freshly initialised (B = 0).

    Adapter parameters take the base weights' dtype, so FSDP can flatten them together.

    Returns:
        The ``peft.PeftModel`` (shard it, not the inner model).

    Raises:
        ConfigError: the target modules match nothing in the model, or the adapter folder cannot be read.
    """
    from peft import PeftModel, get_peft_model

    try:
        if settings.adapter_path:
            peft_model = PeftModel.from_pretrained(
                model, settings.adapter_path, adapter_name=settings.adapter_name, is_trainable=True
            )
        else:
            peft_model = get_peft_model(model, settings.lora_config(), adapter_name=settings.adapter_name)
    except (ValueError, OSError) as e:
        key = "lora_adapter_path" if settings.adapter_path else "target_modules"
        raise ConfigError(
            f"cannot add the LoRA adapter: {str(e).splitlines()[0]}",
            key=f"{settings.key_prefix}.{key}",
            fix="name modules the model has (e.g. [q_proj,k_proj,v_proj,o_proj]) or all-linear",
        ) from None
    base_dtype = next((p.dtype for p in peft_model.parameters() if not p.requires_grad), None)
    if base_dtype is not None:
        for p in peft_model.parameters():
            if p.requires_grad and p.dtype != base_dtype:
                p.data = p.data.to(base_dtype)
    return peft_model


def is_peft_model(module: nn.Module) -> bool:
    """True when ``module`` (or the model FSDP1 wraps) carries a PEFT config."""
    inner = getattr(module, "_fsdp_wrapped_module", module)
    return hasattr(inner, "peft_config")


def peft_inner(module: nn.Module) -> PeftModel:
    """The ``PeftModel`` inside an FSDP1 wrapper (an FSDP2-sharded or unsharded ``PeftModel`` is returned as it is).

    Raises:
        TypeError: there is no ``PeftModel`` there (a programming error: callers hold a LoRA actor).
    """
    from peft import PeftModel

    inner = getattr(module, "_fsdp_wrapped_module", module)
    if not isinstance(inner, PeftModel):
        raise TypeError(f"expected a PEFT model (a LoRA actor), got {type(inner).__name__}")
    return inner
