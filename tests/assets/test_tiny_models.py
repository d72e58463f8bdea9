"""Tiny models of real architectures: scaled configs, real tokenizers, loadable, byte-identical rebuilds."""

from __future__ import annotations

import json

import pytest

from fsdpcfg import assets
from fsdpcfg.assets import tiny_models
from fsdpcfg.assets.scale import kv_heads_for, scale_config
from fsdpcfg.errors import ConfigError

BUILT = [n for n, s in assets.SPECS.items() if s.weights and s.default]


@pytest.mark.parametrize(
    "real_heads,real_kv,expected", [(14, 2, 2), (32, 8, 2), (32, 32, 4), (32, None, 4), (8, 1, 1), (16, 16, 4)]
)
def test_kv_heads_keep_attention_kind(real_heads, real_kv, expected):
    assert kv_heads_for(real_heads, real_kv, 4) == expected


@pytest.mark.parametrize("name", [n for n, s in assets.SPECS.items() if s.weights])
def test_scaled_config_keeps_what_is_not_a_size(name):
    spec = assets.get_spec(name)
    real = tiny_models.real_config(spec)
    tiny = scale_config(real, spec)
    for key in (
        "model_type",
        "architectures",
        "vocab_size",
        "tie_word_embeddings",
        "rope_theta",
        "hidden_act",
        "auto_map",
        "bos_token_id",
        "eos_token_id",
        "max_position_embeddings",
    ):
        assert tiny.get(key) == real.get(key), key
    assert tiny["num_attention_heads"] % tiny["num_key_value_heads"] == 0
    assert tiny["hidden_size"] % tiny["num_attention_heads"] == 0
    if "head_dim" in real:
        assert tiny["head_dim"] == tiny["hidden_size"] // tiny["num_attention_heads"]
    rope = tiny.get("rope_scaling") or {}
    if "long_factor" in rope:  # Phi-3 longrope: one factor per rotary frequency
        assert (
            len(rope["long_factor"])
            == len(rope["short_factor"])
            == tiny["hidden_size"] // tiny["num_attention_heads"] // 2
        )


def test_tiny_qwen2_numbers():
    tiny = scale_config(tiny_models.real_config(assets.get_spec("tiny-qwen2")), assets.get_spec("tiny-qwen2"))
    assert (
        tiny["hidden_size"],
        tiny["num_hidden_layers"],
        tiny["num_attention_heads"],
        tiny["num_key_value_heads"],
        tiny["intermediate_size"],
        tiny["vocab_size"],
    ) == (64, 2, 4, 2, 128, 151936)
    assert tiny["tie_word_embeddings"] is True and tiny["rope_theta"] == 1000000.0


def test_unknown_asset_is_a_config_error():
    with pytest.raises(ConfigError) as e:
        assets.asset_path("tiny-qwen")
    assert "tiny-qwen2" in str(e.value)


def test_tiny_qwen2_loads_with_real_tokenizer(tiny_model_path):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model_path)
    assert tok("Hello world", add_special_tokens=False).input_ids == [9707, 1879]
    assert (tok.eos_token, tok.pad_token, len(tok)) == ("<|im_end|>", "<|endoftext|>", 151665)
    text = tok.apply_chat_template([{"role": "user", "content": "Hi"}], add_generation_prompt=True, tokenize=False)
    assert text.endswith("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n")
    model = AutoModelForCausalLM.from_pretrained(tiny_model_path, dtype=torch.float32)
    assert model.config.model_type == "qwen2" and model.config.hidden_size == 64
    assert sum(p.numel() for p in model.parameters()) == 9_798_208  # 151936*64 tied + 2 layers
    logits = model(torch.tensor([[9707, 1879, 151645]])).logits
    assert logits.shape == (1, 3, 151936) and torch.isfinite(logits).all()
    manifest = json.loads((tiny_model_path / ".fsdpcfg-asset.json").read_text())
    assert manifest["name"] == "tiny-qwen2" and "model.safetensors" in manifest["files"]


@pytest.mark.slow
def test_rebuild_is_byte_identical(tiny_model_path, tmp_path, monkeypatch):
    """A fresh build in another FSDPCFG_HOME gives the same bytes as the shared one, file by file."""
    from fsdpcfg.assets import _store

    monkeypatch.setenv("FSDPCFG_HOME", str(tmp_path))
    fresh = assets.build("tiny-qwen2", verbose=False)
    assert fresh != tiny_model_path
    assert _store.file_hashes(fresh) == _store.file_hashes(tiny_model_path)
    assert assets.is_complete("tiny-qwen2")
    assert assets.build("tiny-qwen2", verbose=False) == fresh  # idempotent: no rebuild


#: "Hello world" without special tokens, per tokenizer (values from fsdpcfg/data/tokenizers/SOURCES.md).
HELLO = {
    "qwen2.5-0.5b-instruct": [9707, 1879],
    "qwen3": [9707, 1879],
    "gpt2": [15496, 995],
    "llama2-7b-hf": [15043, 3186],
    "mistral-7b-instruct-v0.3": [23325, 2294],
}


@pytest.mark.slow
@pytest.mark.parametrize("name", BUILT)
def test_each_default_architecture_builds_and_runs(name, tiny_model):
    """Every default tiny model loads with the auto classes (no remote code) and gives finite logits."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    spec = assets.get_spec(name)
    path = tiny_model(name)
    real = tiny_models.real_config(spec)
    config = AutoConfig.from_pretrained(path)
    assert config.model_type == real["model_type"] and config.vocab_size == real["vocab_size"]
    assert config.num_hidden_layers == 2 and config.hidden_size == 64
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    assert type(model).__name__ == real["architectures"][0]
    tok = AutoTokenizer.from_pretrained(path)
    ids = tok("Hello world", add_special_tokens=False).input_ids
    assert ids == HELLO[spec.tokenizer]
    assert max(ids) < config.vocab_size
    logits = model(torch.tensor([ids])).logits
    assert logits.shape == (1, len(ids), real["vocab_size"]) and torch.isfinite(logits).all()
    loss = model(torch.tensor([ids]), labels=torch.tensor([ids])).loss
    loss.backward()
    assert all(p.grad is None or torch.isfinite(p.grad).all() for p in model.parameters())


def test_real_tokenizer_facts_are_kept(tiny_model):
    """Chat template / pad facts come from the real files: Mistral v0.3 has [INST], Llama-2 base has none."""
    from transformers import AutoTokenizer

    mistral = AutoTokenizer.from_pretrained(tiny_model("tiny-mistral"))
    assert mistral.apply_chat_template([{"role": "user", "content": "Hi"}], tokenize=False) == "<s>[INST] Hi [/INST]"
    assert mistral.pad_token is None
    llama2 = AutoTokenizer.from_pretrained(tiny_model("tiny-llama2"))
    assert llama2.chat_template is None and llama2.pad_token is None


def test_config_only_folder_for_remote_code_model(tiny_model):
    path = tiny_model("qwen-v1-config")
    cfg = json.loads((path / "config.json").read_text())
    assert cfg["model_type"] == "qwen" and "AutoModelForCausalLM" in cfg["auto_map"]
    assert not (path / "model.safetensors").exists() and (path / "tokenizer_config.json").is_file()


def test_shipped_tokenizer_files_match_published_sha256():
    """Each shipped tokenizer file has the sha256 recorded for it in tokenizers/SOURCES.md."""
    import hashlib
    import re

    from fsdpcfg import paths

    root = paths.data_dir() / "tokenizers"
    text = (root / "SOURCES.md").read_text()
    checked = 0
    for section in re.split(r"\n### \d+\. `", text)[1:]:
        folder = section.split("/`", 1)[0]
        for name, digest in re.findall(r"^\| ([\w.]+) \| \d+ \| `([0-9a-f]{64})` \|", section, re.M):
            assert hashlib.sha256((root / folder / name).read_bytes()).hexdigest() == digest, f"{folder}/{name}"
            checked += 1
    assert checked >= 12
