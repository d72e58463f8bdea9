"""FSDP1/FSDP2 parity on 2 CPU ranks (gloo): one optimizer step of the same loss on the same data and seed,
with gradient clipping active, gives the same loss, grad norm and updated weights under FSDP2, FSDP1, FSDP2
HSDP (fsdp_size=1: a (2, 1) replicate x shard mesh) and explicit wrap classes, and all equal the plain
unsharded step. fp32 tolerances: loss and grad norm relative 1e-6, weights max abs 1e-5 (AdamW's first step
moves each weight by about lr = 1e-3). bf16 compute (mixed_precision.param_dtype=bf16): FSDP1 and FSDP2 agree
within 1e-6 and stay within 1e-3 relative of the fp32 loss. Plus the build-time errors, without torchrun."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import torch

from fsdpcfg.errors import ConfigError
from fsdpcfg.launch.torchrun import torchrun_argv

WORKER = Path(__file__).with_name("_parity_worker.py")
#: bf16 compute, every entry given; ``fsdp2_bf16_partial`` gives only param_dtype (verl's defaults fill in the
#: others: fp32 reduce and buffers, fsdpcfg/schema/actor.py MixedPrecision), the same policy
_BF16 = {"param_dtype": "bf16", "reduce_dtype": "fp32", "buffer_dtype": "fp32"}
CASES = [
    {"name": "fsdp2", "strategy": "fsdp2"},
    {"name": "fsdp", "strategy": "fsdp"},
    {"name": "fsdp2_hsdp", "strategy": "fsdp2", "fsdp_size": 1},
    {"name": "fsdp2_wrap", "strategy": "fsdp2", "wrap": ["Qwen2DecoderLayer"]},
    {"name": "fsdp2_bf16", "strategy": "fsdp2", "mixed_precision": _BF16},
    {"name": "fsdp_bf16", "strategy": "fsdp", "mixed_precision": _BF16},
    {"name": "fsdp2_bf16_partial", "strategy": "fsdp2", "mixed_precision": {"param_dtype": "bf16"}},
    {"name": "fsdp2_prefetch", "strategy": "fsdp2", "forward_prefetch": True},
    {"name": "fsdp_prefetch", "strategy": "fsdp", "forward_prefetch": True},
]


def run_worker(model_dir: Path, cases: list[dict], tmp_path: Path) -> dict:
    cases_file, out = tmp_path / "cases.json", tmp_path / "report.json"
    cases_file.write_text(json.dumps(cases))
    cmd = torchrun_argv([WORKER, model_dir, cases_file, out], nproc_per_node=2)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=400)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(out.read_text())


@pytest.mark.distributed
@pytest.mark.slow
def test_fsdp1_fsdp2_parity_one_step(tiny_model_path, tmp_path):
    rep = run_worker(tiny_model_path, CASES, tmp_path)
    ref, cases = rep["reference"], rep["cases"]
    assert ref["grad_norm"] > 0.05 * 10  # far above MAX_NORM: clipping acted
    for name in ("fsdp2", "fsdp", "fsdp2_hsdp", "fsdp2_wrap", "fsdp2_prefetch", "fsdp_prefetch"):
        c = cases[name]
        assert c["loss"] == pytest.approx(ref["loss"], rel=1e-6), name
        assert c["grad_norm"] == pytest.approx(ref["grad_norm"], rel=1e-6), name
        assert c["max_weight_diff_vs_reference"] <= 1e-5, (name, c)
        assert c["params_compared"] > 20
    assert rep["pairs"]["fsdp|fsdp2"] <= 1e-5
    assert cases["fsdp"]["sharding"] == "FULL_SHARD"
    assert cases["fsdp2"]["sharding"] == "mesh (2,) S(0)"
    assert cases["fsdp2_hsdp"]["sharding"] == "mesh (2, 1) R,S(0)"  # HSDP: replicate x shard
    assert rep["pairs"]["fsdp2_bf16|fsdp_bf16"] <= 1e-6
    assert rep["pairs"]["fsdp2_bf16|fsdp2_bf16_partial"] == 0.0
    # forward_prefetch (verl's FSDP1 argument; FSDP2: each decoder layer prefetches the next, depth 1)
    assert (cases["fsdp"]["prefetch"], cases["fsdp_prefetch"]["prefetch"]) == (False, True)
    assert cases["fsdp2"]["prefetch"] == {}
    assert cases["fsdp2_prefetch"]["prefetch"] == {"model.layers.0": ["model.layers.1"]}
    b = cases["fsdp2_bf16"]
    assert b["loss"] != ref["loss"]  # bf16 compute really happened
    assert b["loss"] == pytest.approx(ref["loss"], rel=1e-3)
    assert b["grad_norm"] == pytest.approx(ref["grad_norm"], rel=1e-2)


#: a threshold (parameters) between the tiny models' largest Linear (8,192) and their attention block (12,416
#: tiny-qwen2, 16,384 tiny-llama2)
MIN_NUM_PARAMS = 10_000
SIZE_CASES = [
    {"name": "fsdp_layers", "strategy": "fsdp"},
    {"name": "fsdp_size", "strategy": "fsdp", "min_num_params": MIN_NUM_PARAMS},
    {"name": "fsdp2_size", "strategy": "fsdp2", "min_num_params": MIN_NUM_PARAMS},
]
LAYER_UNITS = ["", "model.layers.0", "model.layers.1"]


@pytest.mark.distributed
@pytest.mark.slow
def test_min_num_params_wraps_fsdp1_by_size_and_fsdp2_by_layer(tiny_model, tmp_path):
    """wrap_policy.min_num_params > 0 under strategy fsdp: the FSDP1 units are exactly those of torch's
    size_based_auto_wrap_policy (verl's get_fsdp_wrap_policy), in place of the decoder layers. tiny-llama2 (untied)
    at 10,000: the root, the embedding and the LM head (2,048,000 each), each layer's self_attn (16,384) and mlp
    (24,576); the layers' norms (128) and the final norm stay in the root; ModuleList never wraps. Under fsdp2 it
    is ignored, as verl's apply_fsdp2: the decoder layers and the root. Both steps equal the unsharded one (grad
    norm relative 1e-5)."""
    rep = run_worker(tiny_model("tiny-llama2"), SIZE_CASES, tmp_path)
    ref, cases = rep["reference"], rep["cases"]
    assert cases["fsdp_layers"]["units"] == LAYER_UNITS
    size = cases["fsdp_size"]
    assert size["units"] == size["torch_units"]
    blocks = [f"model.layers.{i}.{m}" for i in (0, 1) for m in ("mlp", "self_attn")]
    assert size["units"] == sorted(["", "lm_head", "model.embed_tokens", *blocks])
    assert cases["fsdp2_size"]["units"] == LAYER_UNITS
    for name in ("fsdp_size", "fsdp2_size"):
        c = cases[name]
        assert c["loss"] == pytest.approx(ref["loss"], rel=1e-6), name
        # fp32 norms summed over other shards in another order: 2.598029 vs 2.598023 on this model
        assert c["grad_norm"] == pytest.approx(ref["grad_norm"], rel=1e-5), name
        assert c["max_weight_diff_vs_reference"] <= 1e-5, (name, c)


@pytest.mark.distributed
@pytest.mark.slow
def test_fsdp1_size_wrapping_unties_tied_embeddings(tiny_model_path, tmp_path):
    """Why rule FC707 refuses wrap_policy.min_num_params under strategy fsdp on a tied model: torch's size policy
    makes the embedding and the LM head units of their own (tiny-qwen2: 9,723,904 each), each with its own copy of
    the one tied tensor, so the step trains two copies (they differ by about 2 x lr after it) and differs from the
    unsharded step; the layer-class units keep the tie (one tensor, the unsharded step)."""
    cases = run_worker(tiny_model_path, SIZE_CASES[:2], tmp_path)["cases"]
    size = cases["fsdp_size"]
    assert size["units"] == size["torch_units"] and {"lm_head", "model.embed_tokens"} <= set(size["units"])
    assert size["tied_diff"] > 1e-3
    assert size["max_weight_diff_vs_reference"] > 1e-3
    layers = cases["fsdp_layers"]
    assert layers["units"] == LAYER_UNITS and layers["tied_diff"] is None
    assert layers["max_weight_diff_vs_reference"] <= 1e-5


def _model(tiny_model_path):
    from fsdpcfg.schema.model import ModelSection
    from fsdpcfg.train.model import load_model

    return load_model(ModelSection(path=str(tiny_model_path)), torch.float32)


def test_wrap_classes_that_do_not_resolve_list_the_model_classes(tiny_model_path):
    from fsdpcfg.train.engine.fsdp import decoder_layer_classes

    model = _model(tiny_model_path)
    assert {c.__name__ for c in decoder_layer_classes(model)} == {"Qwen2DecoderLayer"}
    assert {c.__name__ for c in decoder_layer_classes(model, "Qwen2DecoderLayer")} == {"Qwen2DecoderLayer"}
    with pytest.raises(ConfigError) as e:
        decoder_layer_classes(model, ["Qwen3DecoderLayer"])
    msg = str(e.value)
    assert "Qwen3DecoderLayer not found" in msg and "Qwen2DecoderLayer" in msg and "Qwen2RMSNorm" in msg


def test_engine_errors_name_the_key_of_the_tree_being_run(tiny_model_path):
    """A wrap class that does not resolve names the key of the section being sharded (SFT: ``engine.*``), not
    the actor's (both are raised before any process group is needed)."""
    from fsdpcfg.train.engine.fsdp import Precision, shard_model

    fp32 = Precision(torch.float32, torch.float32, torch.float32)
    with pytest.raises(ConfigError) as e:
        shard_model(
            _model(tiny_model_path),
            "fsdp2",
            fp32,
            device=torch.device("cpu"),
            wrap_classes=["NoSuchLayer"],
            wrap_key="engine.wrap_policy",
        )
    assert e.value.key == "engine.wrap_policy.transformer_layer_cls_to_wrap"


@pytest.mark.parametrize("strategy", ["fsdp2", "fsdp"])
def test_offload_policy_on_cpu_is_refused_before_launch(strategy, tiny_model_path):
    """offload_policy needs fsdp2 on an accelerator: rule FC704 refuses it on a CPU run (and under FSDP1) before
    launch, so the engine's own guard is a ValueError a checked config never reaches."""
    from fsdpcfg.check import check_overrides
    from fsdpcfg.schema.actor import FSDPConfig
    from fsdpcfg.train.engine.fsdp import shard_from_config

    key = "actor_rollout_ref.actor.fsdp_config.offload_policy"
    found = [
        f for f in check_overrides(["+recipe=qwen_grpo", f"engine={strategy}", f"{key}=true"]) if f.severity == "error"
    ]
    assert [(f.rule, f.keys[0]) for f in found] == [("FC704", key)]
    cfg = FSDPConfig(model_dtype="fp32", dtype="float32", offload_policy=True)
    with pytest.raises(ValueError, match="offload_policy"):  # raised before any process group is needed
        shard_from_config(_model(tiny_model_path), strategy, cfg, "actor_rollout_ref.actor", device=torch.device("cpu"))


def test_fsdp1_wrap_policy_is_verls():
    """verl's get_fsdp_wrap_policy: decoder layers (plus, with LoRA, every trainable leaf) when min_num_params
    is 0; torch's size policy alone when it is > 0 (the LoRA leaf policy left out, as verl does). A policy is
    asked ``(module, recurse=False, nonwrapped_numel)``: wrap this module?"""
    from torch import nn

    from fsdpcfg.train.engine.fsdp import fsdp1_wrap_policy

    class Layer(nn.Module):
        pass

    adapter = nn.Linear(8, 4, bias=False)  # 32 trainable parameters
    frozen = nn.Linear(100, 20, bias=False).requires_grad_(False)  # 2,000 frozen parameters

    def wraps(policy, m: nn.Module) -> bool:
        return bool(policy(module=m, recurse=False, nonwrapped_numel=sum(p.numel() for p in m.parameters())))

    by_layer = fsdp1_wrap_policy({Layer})
    assert wraps(by_layer, Layer()) and not wraps(by_layer, adapter) and not wraps(by_layer, frozen)
    lora = fsdp1_wrap_policy({Layer}, lora=True)
    assert wraps(lora, Layer()) and wraps(lora, adapter) and not wraps(lora, frozen)
    for is_lora in (False, True):
        by_size = fsdp1_wrap_policy({Layer}, 1000, lora=is_lora)
        assert wraps(by_size, frozen) and not wraps(by_size, adapter) and not wraps(by_size, Layer())
        assert not wraps(by_size, nn.ModuleList([frozen]))  # torch's size policy never wraps a ModuleList


def _llama(tiny_model):
    from fsdpcfg.schema.model import ModelSection
    from fsdpcfg.train.model import load_model

    return load_model(ModelSection(path=str(tiny_model("tiny-llama2"))), torch.float32)


def test_fsdp1_units_are_those_fsdp1_makes(tiny_model):
    """fsdp1_units (torch's own recursion, recording): the units the 2-rank run gets from FullyShardedDataParallel
    (test_min_num_params_wraps_fsdp1_by_size_and_fsdp2_by_layer), each parameter in exactly one; the model is left
    unwrapped."""
    from fsdpcfg.train.engine.fsdp import decoder_layer_classes, fsdp1_units, fsdp1_wrap_policy

    model = _llama(tiny_model)
    units = fsdp1_units(model, fsdp1_wrap_policy(set(), MIN_NUM_PARAMS))
    blocks = [f"model.layers.{i}.{m}" for i in (0, 1) for m in ("mlp", "self_attn")]
    assert sorted(units) == sorted(["", "lm_head", "model.embed_tokens", *blocks])
    assert [len(units[n]) for n in ("model.embed_tokens", "model.layers.0.mlp", "")] == [1, 3, 5]  # root: 5 norms
    assert sum(len(ps) for ps in units.values()) == len(list(model.parameters()))
    assert sorted(fsdp1_units(model, fsdp1_wrap_policy(decoder_layer_classes(model)))) == LAYER_UNITS
    assert not any(type(m).__name__ == "FullyShardedDataParallel" for m in model.modules())


def test_lora_beside_frozen_weights_in_one_size_unit_is_a_config_error(tiny_model):
    """LoRA with min_num_params > 0 (strategy fsdp): verl's size policy alone decides the units; one holding an
    adapter and frozen weights cannot be one FSDP1 flat parameter (use_orig_params=False), refused before
    FullyShardedDataParallel with the key and value; min_num_params = 0 (layers plus adapter units) passes."""
    from fsdpcfg.train.engine.fsdp import check_fsdp1_units, decoder_layer_classes, fsdp1_wrap_policy

    model = _llama(tiny_model)
    for name, p in model.named_parameters():  # an adapter's worth of trainable weights on a frozen base
        p.requires_grad_(name.endswith("q_proj.weight"))
    with pytest.raises(ConfigError) as e:
        check_fsdp1_units(model, fsdp1_wrap_policy(set(), MIN_NUM_PARAMS, lora=True), MIN_NUM_PARAMS)
    assert e.value.key == "actor_rollout_ref.actor.fsdp_config.wrap_policy.min_num_params"
    assert e.value.value == MIN_NUM_PARAMS and "model.layers.0.self_attn" in str(e.value)
    check_fsdp1_units(model, fsdp1_wrap_policy(decoder_layer_classes(model), 0, lora=True), 0)
