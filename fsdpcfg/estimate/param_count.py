"""Parameter counts of common decoder-only architectures, computed from ``config.json`` alone (pure Python: the
checker must not import torch or transformers).

    from fsdpcfg.estimate.param_count import count_parameters
    counts = count_parameters(json.load(open("config.json")))   # ParamCounts(total=494032768, ...)

The formulas follow the module layout of transformers 5.10 for ``llama``, ``mistral``, ``mixtral``, ``qwen2``,
``qwen2_moe``, ``qwen3``, ``qwen3_moe``, ``gemma``, ``phi3``, ``deepseek_v2`` and ``deepseek_v3``: token
embedding, attention (grouped-query, or DeepSeek's multi-head latent attention), dense MLP or routed experts
(plus shared experts), RMSNorm weights, and the LM head unless it is tied to the embedding. A test builds each
model on the meta device and compares (tests/estimate/test_memory_params.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: ``tie_word_embeddings`` of each config class when config.json leaves it out (transformers 5.10).
_TIE_DEFAULT = {"gemma": True, "gemma2": True}
#: model types :func:`count_parameters` knows.
SUPPORTED = (
    "llama",
    "mistral",
    "mixtral",
    "qwen2",
    "qwen2_moe",
    "qwen3",
    "qwen3_moe",
    "gemma",
    "phi3",
    "deepseek_v2",
    "deepseek_v3",
)


class UnsupportedArchitecture(ValueError):
    """The config's ``model_type`` has no formula here (the message names the supported ones)."""


@dataclass
class ParamCounts:
    """Parameter counts (numbers of elements, not bytes) of one model.

    Attributes:
        model_type: ``config.json``'s ``model_type``.
        total: all parameters (a tied LM head counted once).
        embedding: the input embedding, ``vocab_size x hidden_size``.
        lm_head: the output projection; 0 when tied to the embedding.
        final_norm: the last norm's weight.
        layers: one entry per decoder layer.
        largest_tensor: elements of the largest single parameter tensor (fused experts count as one tensor, as
            transformers stores them).
        kv_elements_per_token: elements the KV cache holds per token over all layers (``2 x layers x kv_heads x
            head_dim``; MLA: ``layers x (kv_lora_rank + qk_rope_head_dim)``).
        activation_widths: per layer, the summed widths of the tensors one token saves for backward in a layer
            without checkpointing (see :func:`_layer_activation_width`).
    """

    model_type: str
    total: int
    embedding: int
    lm_head: int
    final_norm: int
    layers: list[int] = field(default_factory=list)
    largest_tensor: int = 0
    kv_elements_per_token: int = 0
    activation_widths: list[int] = field(default_factory=list)
    hidden_size: int = 0
    vocab_size: int = 0

    @property
    def largest_layer(self) -> int:
        """Parameters of the largest decoder layer (the unit FSDP gathers at once)."""
        return max(self.layers, default=0)


def text_config(config: dict[str, Any]) -> dict[str, Any]:
    """The language-model part of a config (``text_config`` of a multimodal checkpoint, else the config)."""
    inner = config.get("text_config")
    return inner if isinstance(inner, dict) and "num_attention_heads" in inner else config


def _g(c: dict, key: str, default: Any = None) -> Any:
    v = c.get(key)
    return default if v is None else v


def _attention(c: dict, mt: str) -> tuple[int, int, int, list[int]]:
    """``(params, kv elements per token, activation width per token, [tensor sizes])`` of one attention block."""
    H = int(c["hidden_size"])
    nh = int(c["num_attention_heads"])
    if mt in ("deepseek_v2", "deepseek_v3"):
        nope, rope, vd = int(c["qk_nope_head_dim"]), int(c["qk_rope_head_dim"]), int(c["v_head_dim"])
        kvr, qr = int(c["kv_lora_rank"]), c.get("q_lora_rank")
        bias = bool(_g(c, "attention_bias", False))
        qk = nope + rope
        if qr:
            tensors = [H * qr + (qr if bias else 0), qr, qr * nh * qk]
        else:
            tensors = [H * nh * qk]
        tensors += [
            H * (kvr + rope) + ((kvr + rope) if bias else 0),
            kvr,
            kvr * nh * (nope + vd),
            nh * vd * H + (H if bias else 0),
        ]
        act = H + (qr or 0) + nh * qk + (kvr + rope) + kvr + nh * (nope + vd) + nh * qk + nh * vd * 2
        return sum(tensors), kvr + rope, act, tensors
    hd = int(_g(c, "head_dim", H // nh))
    nkv = int(_g(c, "num_key_value_heads", nh))
    q, kv = nh * hd, nkv * hd
    qkv_bias = mt in ("qwen2", "qwen2_moe") or bool(_g(c, "attention_bias", False))
    o_bias = mt not in ("qwen2", "qwen2_moe") and bool(_g(c, "attention_bias", False))
    if mt == "phi3":
        tensors = [H * (q + 2 * kv), q * H]
    else:
        tensors = [
            H * q + (q if qkv_bias else 0),
            H * kv + (kv if qkv_bias else 0),
            H * kv + (kv if qkv_bias else 0),
            q * H + (H if o_bias else 0),
        ]
    if mt in ("qwen3", "qwen3_moe"):
        tensors += [hd, hd]  # q_norm, k_norm
    # saved per token: q, k, v (after RoPE), k and v repeated to all heads (GQA), the attention output
    act = q + 2 * kv + (2 * (q - kv) if nkv < nh else 0) + q
    return sum(tensors), 2 * kv, act, tensors


def _dense_mlp(H: int, inter: int, bias: bool = False) -> tuple[int, list[int]]:
    t = [H * inter + (inter if bias else 0)] * 2 + [inter * H + (H if bias else 0)]
    return sum(t), t


def _qwen_experts(c: dict) -> int:
    """Routed experts of a Qwen MoE config: ``num_experts`` in the hub's config.json files, ``num_local_experts``
    in the files transformers 5 writes (``Qwen3MoeConfig`` renamed it)."""
    return int(_g(c, "num_experts", 0) or _g(c, "num_local_experts", 0) or 0)


def _is_moe_layer(c: dict, mt: str, i: int) -> bool:
    if mt == "mixtral":
        return True
    if mt in ("qwen2_moe", "qwen3_moe"):
        return (
            _qwen_experts(c) > 0
            and i not in (c.get("mlp_only_layers") or [])
            and (i + 1) % int(_g(c, "decoder_sparse_step", 1)) == 0
        )
    if mt in ("deepseek_v2", "deepseek_v3"):
        return (
            c.get("n_routed_experts") is not None
            and i >= int(_g(c, "first_k_dense_replace", 0))
            and i % int(_g(c, "moe_layer_freq", 1)) == 0
        )
    return False


def _mlp(c: dict, mt: str, i: int) -> tuple[int, int, list[int]]:
    """``(params, activation width per token, [tensor sizes])`` of layer ``i``'s feed-forward block."""
    H = int(c["hidden_size"])
    if not _is_moe_layer(c, mt, i):
        inter = int(c["intermediate_size"])
        p, t = _dense_mlp(H, inter, bool(_g(c, "mlp_bias", False)))
        return p, 4 * inter, ([H * 2 * inter, inter * H] if mt == "phi3" else t)
    if mt == "mixtral":
        E, inter, k = int(c["num_local_experts"]), int(c["intermediate_size"]), int(c["num_experts_per_tok"])
        shared, shared_gate = 0, 0
    elif mt in ("qwen2_moe", "qwen3_moe"):
        E, inter, k = _qwen_experts(c), int(c["moe_intermediate_size"]), int(c["num_experts_per_tok"])
        shared = int(_g(c, "shared_expert_intermediate_size", 0)) if mt == "qwen2_moe" else 0
        shared_gate = H if shared else 0
    else:
        E, inter, k = int(c["n_routed_experts"]), int(c["moe_intermediate_size"]), int(c["num_experts_per_tok"])
        shared, shared_gate = inter * int(_g(c, "n_shared_experts", 0)), 0
    tensors = [E * 2 * inter * H, E * H * inter, E * H]  # experts (fused), router
    if shared:
        tensors += _dense_mlp(H, shared)[1] + ([shared_gate] if shared_gate else [])
    return sum(tensors), 4 * inter * k + 4 * shared + E, tensors


def _layer_activation_width(H: int, attn_act: int, mlp_act: int) -> int:
    """Widths saved per token by one layer: the input and output of both RMSNorms (4 x hidden), the attention
    block's tensors, and the MLP's gate, act(gate), up and their product (4 x intermediate)."""
    return 4 * H + attn_act + mlp_act


def count_parameters(config: dict[str, Any]) -> ParamCounts:
    """Count the parameters of the model ``config`` (a parsed ``config.json``) describes.

    Raises:
        UnsupportedArchitecture: a ``model_type`` outside :data:`SUPPORTED`.
        KeyError: a required key is missing from the config.
    """
    c = text_config(config)
    mt = str(c.get("model_type") or config.get("model_type"))
    if mt not in SUPPORTED:
        raise UnsupportedArchitecture(f"no parameter formula for model_type {mt!r}; known: {', '.join(SUPPORTED)}")
    H, V, L = int(c["hidden_size"]), int(c["vocab_size"]), int(c["num_hidden_layers"])
    tie = c.get("tie_word_embeddings", config.get("tie_word_embeddings"))
    tie = _TIE_DEFAULT.get(mt, False) if tie is None else bool(tie)
    layers, widths, largest, kv_total = [], [], V * H, 0
    for i in range(L):
        a, kv, a_act, a_t = _attention(c, mt)
        m, m_act, m_t = _mlp(c, mt, i)
        layers.append(a + m + 2 * H)
        widths.append(_layer_activation_width(H, a_act, m_act))
        largest = max(largest, *a_t, *m_t)
        kv_total += kv
    return ParamCounts(
        model_type=mt,
        total=V * H + (0 if tie else V * H) + sum(layers) + H,
        embedding=V * H,
        lm_head=0 if tie else V * H,
        final_norm=H,
        layers=layers,
        largest_tensor=largest,
        kv_elements_per_token=kv_total,
        activation_widths=widths,
        hidden_size=H,
        vocab_size=V,
    )
