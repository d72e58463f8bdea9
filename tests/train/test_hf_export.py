"""The Hugging Face export of a checkpoint (fsdpcfg/train/checkpoint.py ``_write_hf_export``) and its model card:
one ``model.safetensors`` under ``max_shard_size`` (default 5GB, transformers' ``save_pretrained`` default), shards
with ``model.safetensors.index.json`` past it, and both load with ``from_pretrained`` to the same weights."""

from __future__ import annotations

import json

import pytest


@pytest.mark.parametrize("max_shard_size,sharded", [("5GB", False), ("200KB", True)])
def test_export_is_sharded_past_max_shard_size_and_loads(tiny_model_path, tmp_path, max_shard_size, sharded):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from fsdpcfg.train.checkpoint import HF_MAX_SHARD_SIZE, _write_hf_export

    assert HF_MAX_SHARD_SIZE == "5GB"
    model = AutoModelForCausalLM.from_pretrained(tiny_model_path, dtype=torch.float32)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.01)  # not the base's weights: the export must carry these
    weights = {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}
    total = sum(t.numel() * t.element_size() for t in weights.values())
    _write_hf_export(
        tmp_path,
        weights,
        model.config,
        AutoTokenizer.from_pretrained(tiny_model_path),
        model.generation_config,
        max_shard_size,
    )
    index = tmp_path / "model.safetensors.index.json"
    if sharded:
        shards = sorted(p.name for p in tmp_path.glob("model-*-of-*.safetensors"))
        assert len(shards) >= 2 and index.is_file() and not (tmp_path / "model.safetensors").exists()
        mapping = json.loads(index.read_text())["weight_map"]
        assert set(mapping.values()) == set(shards) and set(mapping) <= set(weights)
        assert total > 200_000
    else:
        assert (tmp_path / "model.safetensors").is_file() and not index.exists()
    loaded = AutoModelForCausalLM.from_pretrained(tmp_path, dtype=torch.float32)
    got = loaded.state_dict()
    assert max(float((got[k] - weights[k]).abs().max()) for k in got) == 0.0


def test_model_card_states_base_config_step_version_and_last_metrics(tmp_path):
    from fsdpcfg.train.model_card import write_model_card

    write_model_card(
        tmp_path / "README.md",
        step=7,
        base_model="Qwen/Qwen2.5-0.5B-Instruct",
        kind="grpo",
        version="0.1.0",
        date="2026-12-01 09:00 UTC",
        project="p",
        experiment="exp",
        run_dir="/runs/exp",
        metrics={"critic/score/mean": 0.5, "val-core/gsm8k/reward/mean@1": 0.25, "actor/lr": 1e-6},
    )
    from huggingface_hub import ModelCard

    card = ModelCard.load(tmp_path / "README.md")
    assert card.data.base_model == "Qwen/Qwen2.5-0.5B-Instruct" and "fsdpcfg" in card.data.tags
    text = card.text
    assert "step 7" in text and "fsdpcfg 0.1.0" in text and "2026-12-01 09:00 UTC" in text
    assert "`/runs/exp/config.yaml`" in text
    assert "| `val-core/gsm8k/reward/mean@1` | 0.25 |" in text and "| `critic/score/mean` | 0.5 |" in text
    # validation first, then verl's headline metrics, then the rest
    assert text.index("val-core") < text.index("critic/score/mean") < text.index("actor/lr")
