"""Scale a real Hugging Face ``config.json`` down to a tiny one, keeping everything that is not a size.

Pure functions over dicts (no torch). What changes: hidden size, layers, heads, KV heads, intermediate
size, head_dim (when the real config sets it), expert counts and the sizes listed in the spec, and the
longrope factor lists (subsampled to ``head_dim/2`` entries), and the per-layer ``layer_types`` list (cut to
the scaled layer count). What is kept: ``model_type``,
``architectures``, vocabulary size, rope type and theta, ``tie_word_embeddings``, activation, norms,
special token ids, ``auto_map`` and every other key. The weights are saved in float32, so ``dtype`` /
``torch_dtype`` becomes ``float32``.
"""

from __future__ import annotations

import copy
from typing import Any

from fsdpcfg.assets.specs import TINY, ModelSpec


def kv_heads_for(real_heads: int, real_kv: int | None, heads: int) -> int:
    """Return the tiny KV head count that keeps the real attention kind.

    MHA (``kv == heads`` or unset) stays MHA, MQA (one KV head) stays MQA, and GQA becomes GQA with 2 KV
    heads (``heads`` must be divisible by 2). The result always divides ``heads``.

    Raises:
        ValueError: ``real_heads`` not divisible by ``real_kv`` (not a valid real config).
    """
    if real_kv is None or real_kv == real_heads:
        return heads
    if real_heads % real_kv:
        raise ValueError(f"num_attention_heads {real_heads} is not divisible by num_key_value_heads {real_kv}")
    if real_kv == 1:
        return 1
    return 2 if heads % 2 == 0 and heads > 2 else 1


def scale_config(real: dict[str, Any], spec: ModelSpec) -> dict[str, Any]:
    """Return a scaled-down copy of the real config dict ``real`` for ``spec`` (``real`` is not modified).

    Sizes: :data:`fsdpcfg.assets.specs.TINY` then ``spec.scale``; ``num_key_value_heads`` follows
    :func:`kv_heads_for` unless the spec sets it; ``head_dim`` = hidden / heads where the real config has one.
    """
    cfg = copy.deepcopy(real)
    sizes = {**TINY, **spec.scale}
    heads = sizes["num_attention_heads"]
    if "num_key_value_heads" not in spec.scale and "num_attention_heads" in real:
        sizes["num_key_value_heads"] = kv_heads_for(real["num_attention_heads"], real.get("num_key_value_heads"), heads)
    for key, value in sizes.items():
        if value is None:
            cfg.pop(key, None)
        else:
            cfg[key] = value
    head_dim = sizes["hidden_size"] // heads
    if "head_dim" in real:
        cfg["head_dim"] = head_dim
    _scale_rope_factors(cfg, head_dim)
    layers = cfg.get("num_hidden_layers")
    if isinstance(cfg.get("layer_types"), list) and isinstance(layers, int):  # per-layer kinds (Gemma 2 etc.)
        cfg["layer_types"] = cfg["layer_types"][:layers]
    for key in ("torch_dtype", "dtype"):
        if key in cfg:
            cfg[key] = "float32"
    cfg.pop("_name_or_path", None)
    return cfg


def _scale_rope_factors(cfg: dict[str, Any], head_dim: int) -> None:
    """Subsample longrope ``long_factor``/``short_factor`` (one entry per rotary frequency) to ``head_dim/2``."""
    for key in ("rope_scaling", "rope_parameters"):
        rope = cfg.get(key)
        if not isinstance(rope, dict):
            continue
        dim = int(head_dim * cfg.get("partial_rotary_factor", 1.0)) // 2
        for fkey in ("long_factor", "short_factor"):
            factors = rope.get(fkey)
            if isinstance(factors, list) and len(factors) > dim:
                step = len(factors) / dim
                rope[fkey] = [factors[int(i * step)] for i in range(dim)]
