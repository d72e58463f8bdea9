"""LoRA (PEFT) in the native engine: wrap the model, collect its weights for the rollout, apply them there.

Public API:
    :class:`LoraSettings` (from the config), :func:`apply_lora`, :func:`is_peft_model`,
    :func:`iter_base_params`, :func:`iter_adapter_params` (collection, collective under FSDP),
    :class:`LoraHFRollout` (PEFT replica), :class:`LoraWeightSync` (base once, then adapters),
    :func:`iter_merged_params` (merged weights for Hugging Face checkpoints).
"""

from fsdpcfg.train.lora.collect import find_layer_blocks, iter_adapter_params, iter_base_params, iter_merged_params
from fsdpcfg.train.lora.setup import LoraSettings, apply_lora, is_peft_model, peft_inner

__all__ = [
    "LoraSettings",
    "apply_lora",
    "find_layer_blocks",
    "is_peft_model",
    "iter_adapter_params",
    "iter_base_params",
    "iter_merged_params",
    "peft_inner",
]
