"""LoRA collection on toy PEFT models (one process, no FSDP): name mapping, the adapter name, layer prefixes and
their error, the preload error of layered mode, and the error when nothing is collected."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from fsdpcfg.errors import ConfigError
from fsdpcfg.schema.fsdpcfg_section import FsdpcfgSection
from fsdpcfg.schema.model import ModelSection
from fsdpcfg.schema.rollout import RolloutSection
from fsdpcfg.train.lora import names

peft = pytest.importorskip("peft")


# ---- pure name mapping -------------------------------------------------------------------------------------------


def _m(entries: dict, *, validate: bool = True) -> ModelSection:
    """An ``actor_rollout_ref.model`` section (the schema's defaults) with ``entries`` set; ``validate=False``
    sets them without the schema's checks (values it refuses, for the settings' own checks)."""
    if validate:
        return ModelSection(path="tiny", **entries)
    return ModelSection(path="tiny").model_copy(update=entries)


@pytest.mark.parametrize(
    "name, expected",
    [
        (
            "base_model.model.model.layers.0.self_attn.q_proj.base_layer.weight",
            "model.layers.0.self_attn.q_proj.weight",
        ),
        ("base_model.model.model.layers.0.self_attn.q_proj.base_layer.bias", "model.layers.0.self_attn.q_proj.bias"),
        (
            "_fsdp_wrapped_module.base_model.model.model.layers.1._fsdp_wrapped_module.mlp.up_proj.base_layer.weight",
            "model.layers.1.mlp.up_proj.weight",
        ),
        ("base_model.model.model.norm.weight", "model.norm.weight"),
        ("model.embed_tokens.weight", "model.embed_tokens.weight"),  # a plain model passes through
        ("base_model.model.model.layers.0.self_attn.q_proj.lora_A.default.weight", None),
        ("base_model.model.model.embed_tokens.lora_embedding_A.x", None),
    ],
)
def test_base_name(name, expected):
    assert names.base_name(name) == expected


def test_adapter_key_keeps_only_the_named_adapter():
    n = (
        "_fsdp_wrapped_module.base_model.model.model.layers.0.self_attn.q_proj.lora_B."
        "policy._fsdp_wrapped_module.weight"
    )
    assert names.adapter_key(n, "policy") == "base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight"
    assert names.adapter_key(n, "default") is None
    assert names.adapter_key("base_model.model.model.layers.0.self_attn.q_proj.base_layer.weight", "policy") is None
    assert (
        names.adapter_key("base_model.model.emb.lora_embedding_A.policy", "policy")
        == "base_model.model.emb.lora_embedding_A"
    )
    key = "base_model.model.model.layers.0.mlp.down_proj.lora_A.weight"
    assert names.adapter_key(names.adapter_param_name(key, "sft"), "sft") == key
    with pytest.raises(ValueError):
        names.adapter_param_name("model.layers.0.mlp.down_proj.weight", "sft")


def test_layer_index_pattern():
    pat = names.layer_index_pattern(["layers.", "transformer_blocks."])
    assert pat.search("base_model.model.model.layers.3")
    assert pat.search("transformer_blocks.0")
    assert not pat.search("base_model.model.mylayers.3")
    assert not pat.search("base_model.model.model.layers")
    with pytest.raises(ValueError):
        names.layer_index_pattern([])


# ---- toy PEFT models ---------------------------------------------------------------------------------------------


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.out = nn.Linear(8, 8)

    def forward(self, x):
        return self.out(torch.relu(self.proj(x)))


class Toy(nn.Module):
    """Blocks under ``transformer_blocks`` (not ``layers``), an adapted head outside them."""

    def __init__(self):
        super().__init__()
        self.transformer_blocks = nn.ModuleList([Block(), Block()])
        self.head = nn.Linear(8, 4)

    def forward(self, x):
        for b in self.transformer_blocks:
            x = b(x)
        return self.head(x)


def _toy(adapters=("policy",)):
    from peft import LoraConfig, get_peft_model

    torch.manual_seed(0)
    model = get_peft_model(
        Toy(), LoraConfig(r=2, lora_alpha=4, target_modules=["proj", "head"]), adapter_name=adapters[0]
    )
    for a in adapters[1:]:
        model.add_adapter(a, LoraConfig(r=3, lora_alpha=3, target_modules=["out"]))
    with torch.no_grad():
        for n, p in model.named_parameters():
            if "lora_B" in n:
                p.normal_()
    return model


def test_named_adapter_is_collected_alone_with_its_values():
    from fsdpcfg.train.lora import iter_adapter_params

    model = _toy(("policy", "other"))
    params = dict(model.named_parameters())
    got = dict(iter_adapter_params(model, "other"))
    assert sorted(got) == sorted(
        f"base_model.model.transformer_blocks.{i}.out.lora_{ab}.weight" for i in (0, 1) for ab in "AB"
    )
    for k, t in got.items():
        assert torch.equal(t, params[names.adapter_param_name(k, "other")])
    assert len(dict(iter_adapter_params(model, "policy"))) == 6  # proj x 2 blocks + head, A and B


def test_layered_needs_the_right_prefixes_and_then_matches_the_full_gather():
    from fsdpcfg.train.lora import iter_adapter_params

    model = _toy()
    with pytest.raises(ConfigError) as e:
        list(iter_adapter_params(model, "policy", layered=True))  # default prefix: layers.
    assert "['layers.']" in e.value.message and "transformer_blocks." in e.value.message
    assert e.value.key == "fsdpcfg.lora_layer_prefixes"
    full = dict(iter_adapter_params(model, "policy"))
    layered = dict(iter_adapter_params(model, "policy", layered=True, layer_prefixes=("transformer_blocks.",)))
    assert sorted(layered) == sorted(full) and all(torch.equal(layered[k], full[k]) for k in full)
    assert "base_model.model.head.lora_A.weight" in layered  # outside the blocks, collected too


def test_zero_parameters_is_an_error_naming_the_prefixes_tried():
    from fsdpcfg.train.lora import iter_adapter_params

    model = _toy()
    with pytest.raises(ConfigError) as e:
        list(iter_adapter_params(model, "missing", layered=True, layer_prefixes=("transformer_blocks.", "h.")))
    assert "collected no LoRA parameters of adapter 'missing'" in e.value.message
    assert "['transformer_blocks.', 'h.']" in e.value.message
    with pytest.raises(ConfigError, match="collected no LoRA parameters"):
        list(iter_adapter_params(model, "missing"))


def test_layered_before_the_base_was_sent_says_to_preload_it():
    from fsdpcfg.train.lora import LoraSettings
    from fsdpcfg.train.lora.rollout import LoraWeightSync

    s = LoraSettings.from_model_cfg(
        _m({"lora_rank": 2, "lora_alpha": 4}),
        rollout_cfg=RolloutSection(name="hf", layered_summon=True, load_format="dummy"),
    )
    sync = LoraWeightSync(_toy(), s, bucket_megabytes=1)
    assert not sync.base_sent
    with pytest.raises(ConfigError) as e:
        sync.base_stream()
    assert "preload the base" in e.value.message and e.value.key == "actor_rollout_ref.rollout.layered_summon"
    # a base read from disk by the rollout counts as sent: only adapters are synchronised
    s2 = LoraSettings.from_model_cfg(
        _m({"lora_rank": 2}), rollout_cfg=RolloutSection(name="hf", layered_summon=True, load_format="safetensors")
    )
    assert LoraWeightSync(_toy(), s2, bucket_megabytes=1).base_sent


def test_base_params_have_hf_names_and_merged_weights_equal_the_adapted_forward():
    from fsdpcfg.train.lora import iter_base_params, iter_merged_params

    model = _toy()
    base = dict(iter_base_params(model))
    assert "transformer_blocks.0.proj.weight" in base and not any("lora" in k or "base_layer" in k for k in base)
    plain = Toy()
    plain.load_state_dict(dict(iter_merged_params(model, "policy")))
    x = torch.randn(5, 8)
    with torch.no_grad():
        assert torch.allclose(plain(x), model(x), atol=1e-5)
        assert not torch.allclose(model.get_base_model().head.base_layer(x), model.get_base_model().head(x))


def test_settings_from_config():
    from fsdpcfg.train.lora import LoraSettings

    assert LoraSettings.from_model_cfg(_m({"lora_rank": 0})) is None
    s = LoraSettings.from_model_cfg(
        _m({"lora_rank": 8, "lora_alpha": 16, "target_modules": ["q_proj"], "exclude_modules": None}),
        fsdpcfg_cfg=FsdpcfgSection(lora_layer_prefixes=["blocks."]),
        adapter_name="sft",
    )
    assert (s.rank, s.alpha, s.target_modules, s.layer_prefixes, s.adapter_name) == (
        8,
        16.0,
        ["q_proj"],
        ("blocks.",),
        "sft",
    )
    assert s.lora_config().r == 8 and s.lora_config().lora_dropout == 0.0
