"""Parameter names of a PEFT LoRA model, mapped to the names a rollout engine expects (pure string functions).

A LoRA-wrapped model (``get_peft_model(model, LoraConfig(...), adapter_name=A)``) names its parameters::

    base_model.model.model.layers.0.self_attn.q_proj.base_layer.weight     the frozen base weight
    base_model.model.model.layers.0.self_attn.q_proj.lora_A.A.weight       adapter A's down projection
    base_model.model.model.layers.0.self_attn.q_proj.lora_B.A.weight       adapter A's up projection
    base_model.model.model.embed_tokens.lora_embedding_A.A                 (embedding LoRA: a ParameterDict)

FSDP1 adds ``_fsdp_wrapped_module.`` segments, activation checkpointing ``_checkpoint_wrapped_module.``,
``torch.compile`` ``_orig_mod.``. Two name spaces leave the actor:

- **base names**: the plain Hugging Face checkpoint name (``model.layers.0.self_attn.q_proj.weight``): no
  ``base_model.model.`` prefix, no ``base_layer`` segment, no ``lora_`` parameter;
- **adapter keys**: PEFT's adapter-file names (``adapter_model.safetensors``, what ``get_peft_model_state_dict``
  returns): the ``base_model.model.`` prefix kept, the adapter-name segment removed
  (``base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight``).
"""

from __future__ import annotations

import re

#: wrapper segments that FSDP1, activation checkpointing and torch.compile insert into parameter names.
WRAPPER_SEGMENTS = ("_fsdp_wrapped_module", "_checkpoint_wrapped_module", "_orig_mod")
#: the prefix PEFT puts before the wrapped model's own names.
PEFT_PREFIX = "base_model.model."


def strip_wrappers(name: str) -> str:
    """Drop FSDP1 / checkpoint / compile wrapper segments: ``a._fsdp_wrapped_module.b`` -> ``a.b``."""
    return ".".join(p for p in name.split(".") if p not in WRAPPER_SEGMENTS)


def is_lora_name(name: str) -> bool:
    """True when a segment of ``name`` starts with ``lora_`` (an adapter parameter of any adapter)."""
    return any(p.startswith("lora_") for p in name.split("."))


def base_name(name: str) -> str | None:
    """The Hugging Face checkpoint name of a base parameter of a (possibly wrapped) PEFT model, or ``None`` for
    an adapter parameter.

    ``_fsdp_wrapped_module.base_model.model.model.layers.0.mlp.up_proj.base_layer.weight``
    -> ``model.layers.0.mlp.up_proj.weight``; names without the PEFT prefix (a plain model) pass through.
    """
    name = strip_wrappers(name)
    if is_lora_name(name):
        return None
    if name.startswith(PEFT_PREFIX):
        name = name[len(PEFT_PREFIX) :]
    return ".".join(p for p in name.split(".") if p != "base_layer")


def adapter_key(name: str, adapter_name: str) -> str | None:
    """PEFT's adapter-file key of parameter ``name`` when it belongs to adapter ``adapter_name``, else ``None``
    (a base parameter or another adapter's).

    ``base_model.model.model.layers.0.self_attn.q_proj.lora_A.policy.weight`` (adapter ``policy``)
    -> ``base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight``.
    """
    parts = strip_wrappers(name).split(".")
    for i, p in enumerate(parts[:-1]):
        if p.startswith("lora_"):
            if parts[i + 1] != adapter_name:
                return None
            return ".".join(parts[: i + 1] + parts[i + 2 :])
    return None


def adapter_param_name(key: str, adapter_name: str) -> str:
    """Inverse of :func:`adapter_key`: insert the adapter name after the ``lora_*`` segment.

    Raises:
        ValueError: ``key`` has no ``lora_*`` segment (not an adapter key).
    """
    parts = key.split(".")
    for i, p in enumerate(parts):
        if p.startswith("lora_"):
            return ".".join(parts[: i + 1] + [adapter_name] + parts[i + 1 :])
    raise ValueError(f"{key!r} is not a LoRA adapter key (no lora_* segment)")


def layer_index_pattern(prefixes: list[str] | tuple[str, ...]) -> re.Pattern:
    """A regex matching a module name that ends with one of ``prefixes`` and a block index, the prefix starting
    the name or following a dot: prefixes ``["layers.", "transformer_blocks."]`` match
    ``base_model.model.model.layers.3`` and ``transformer.transformer_blocks.0`` but not ``mylayers.3``.

    Raises:
        ValueError: no prefix, or an empty one.
    """
    if not prefixes or any(not p for p in prefixes):
        raise ValueError(f"layer-name prefixes must be non-empty strings, got {list(prefixes)!r}")
    alt = "|".join(re.escape(p) for p in prefixes)
    return re.compile(rf"(?:^|\.)(?:{alt})\d+$")
