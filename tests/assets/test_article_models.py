"""The compatibility article's models as offline assets: Gemma 2, Starling-LM-7B-alpha (Mistral class), Phi-3 mini
and medium, Qwen3-MoE, and a config naming an unknown class. Each builds, says where its config came from
(`fsdpcfg assets list`), and passes the doctor's stages 1 (load) and 2 (patches vs unpatched)."""

from __future__ import annotations

import json

import pytest

from fsdpcfg.cli.main import main

A = "actor_rollout_ref"
NEW = {
    "tiny-gemma2": ("gemma2", "Gemma2ForCausalLM"),
    "tiny-starling": ("mistral", "MistralForCausalLM"),
    "tiny-phi3-medium": ("phi3", "Phi3ForCausalLM"),
    "tiny-qwen3-moe": ("qwen3_moe", "Qwen3MoeForCausalLM"),
}


def test_list_says_what_each_asset_is_built_from(capsys):
    assert main(["assets", "list"]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line for line in out.splitlines() if line.startswith(("tiny-", "qwen"))}
    assert "transformers defaults" in rows["tiny-gemma2"] and "Gemma2Config()" in rows["tiny-gemma2"]
    assert "transformers defaults" in rows["tiny-phi3-medium"] and "Phi3Config() + 5 keys" in rows["tiny-phi3-medium"]
    assert "real config file" in rows["tiny-phi3"] and "microsoft__Phi-3-mini-128k-instruct" in rows["tiny-phi3"]
    assert "real config file" in rows["tiny-mixtral"]
    assert "berkeley-nest/Starling-LM-7B-alpha     -> tiny-starling (MistralForCausalLM)" in out


@pytest.mark.parametrize("name", list(NEW))
def test_new_asset_builds_with_its_architecture(tiny_model, name):
    cfg = json.loads((tiny_model(name) / "config.json").read_text())
    assert (cfg["model_type"], cfg["architectures"]) == (NEW[name][0], [NEW[name][1]])
    assert cfg["hidden_size"] == 64 and cfg["num_hidden_layers"] == 2
    if name == "tiny-phi3-medium":  # medium is GQA (40 / 10 heads), mini is MHA
        assert (cfg["num_attention_heads"], cfg["num_key_value_heads"]) == (4, 2)
    if name == "tiny-gemma2":
        assert cfg["layer_types"] == ["sliding_attention", "full_attention"]
        assert (cfg["attn_logit_softcapping"], cfg["final_logit_softcapping"]) == (50.0, 30.0)
    if name == "tiny-qwen3-moe":
        assert (cfg["num_local_experts"], cfg["num_experts_per_tok"]) == (4, 2)
    sources = (tiny_model(name) / "SOURCES.md").read_text()
    assert "transformers defaults" in sources


def test_unknown_architecture_asset_keeps_the_unknown_name(tiny_model):
    cfg = json.loads((tiny_model("tiny-unknown-arch") / "config.json").read_text())
    assert cfg["architectures"] == ["LlamaMTPForCausalLM"] and cfg["model_type"] == "llama"


@pytest.mark.slow  # end to end: a fresh Python process
@pytest.mark.parametrize("name", list(NEW))
def test_doctor_stages_1_and_2(tiny_model, name):
    from fsdpcfg.compose import compose
    from fsdpcfg.doctor.matrix import _native_patches, find_conditions
    from fsdpcfg.doctor.stage_load import run_load
    from fsdpcfg.doctor.stage_patches import run_patches

    path = tiny_model(name)
    overrides, conditions, _ = find_conditions(["+recipe=qwen_grpo", f"{A}.model.path={path}"])
    if name == "tiny-gemma2":
        assert "attention soft-capping: eager attention (sdpa skips the cap)" in conditions
    cfg = compose(overrides).to_container(resolve=True)
    load = run_load(cfg)
    assert load.status == "pass", load.failure
    assert load.data["model_class"] == NEW[name][1]
    patches = _native_patches(path)
    assert "remove_padding" in patches
    result = run_patches(cfg, patches)
    assert result.status == "pass", result.failure
