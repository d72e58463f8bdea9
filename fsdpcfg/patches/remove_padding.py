"""The ``remove_padding`` patch's declaration (packed sequences without pad tokens); the implementation and
the model types' verification are in :mod:`fsdpcfg.train.patches.remove_padding`."""

from __future__ import annotations

from fsdpcfg.patches.registry import Patch

PATCH = Patch(
    name="remove_padding",
    title="packed sequences without pad tokens in the log-prob and training forward",
    targets=("model.forward:packed", "attention.mask:packed"),
    config_key="actor_rollout_ref.model.use_remove_padding",
    is_on=bool,
    model_types=frozenset(
        {"qwen2", "qwen3", "llama", "mistral", "mixtral", "gemma", "gemma2", "phi3", "deepseek_v2", "qwen3_moe"}
    ),
    impls={"*": "fsdpcfg.train.patches.remove_padding:apply"},
    source="verl/workers/engine/fsdp/transformer_impl.py (use_remove_padding); transformers "
    "masking_utils.find_packed_sequence_indices",
)
