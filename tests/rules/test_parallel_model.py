"""FC3xx/FC4xx unit tests, on the real config files of ../shared/data/model_configs."""

import subprocess
import sys
from pathlib import Path

import pytest
from rule_helpers import errors, run, warnings

from fsdpcfg import model_files
from fsdpcfg.rules import model_rules, parallel

GPU = ["launcher=verl", "rollout=vllm", "trainer=gpu_8x"]
A = "actor_rollout_ref"


def test_fc301_fc302():
    f = errors(run(parallel.fsdp_size_divides, *GPU, f"{A}.actor.fsdp_config.fsdp_size=3"))
    assert f and "[1, 2, 4]" in f[0].fix
    assert not run(parallel.fsdp_size_divides, *GPU, f"{A}.actor.fsdp_config.fsdp_size=4")
    assert errors(run(parallel.parallel_sizes_divide_world, *GPU, f"{A}.actor.ulysses_sequence_parallel_size=3"))


def test_fc304_valid_values(shared_models):
    f = errors(
        run(
            parallel.ulysses_heads,
            *GPU,
            "trainer.nnodes=2",
            f"{A}.actor.ulysses_sequence_parallel_size=16",
            model="meta-llama__Llama-3.2-3B-Instruct",
        )
    )
    assert f and "24" in f[0].message and "[1, 2, 4, 8]" in f[0].fix
    # Qwen2.5-0.5B: 14 heads, 2 KV heads: sp=2 is fine, sp=4 is not
    assert not run(
        parallel.ulysses_heads,
        *GPU,
        f"{A}.actor.ulysses_sequence_parallel_size=2",
        model="Qwen__Qwen2.5-0.5B-Instruct__resaved",
    )
    f = errors(
        run(
            parallel.ulysses_heads,
            *GPU,
            f"{A}.actor.ulysses_sequence_parallel_size=4",
            model="Qwen__Qwen2.5-0.5B-Instruct__resaved",
        )
    )
    assert f and "[1, 2]" in f[0].fix


def test_fc305_default_tp_source():
    f = errors(
        run(
            parallel.rollout_layout,
            "launcher=verl",
            "rollout=vllm",
            "trainer=gpu_1x",
            f"~{A}.rollout.tensor_model_parallel_size",
        )
    )
    assert f and "verl 0.9.1 default" in f[0].message and "[1]" in f[0].fix
    assert not run(parallel.rollout_layout, "trainer=gpu_1x")  # the HF rollout has no TP


def test_fc400_fc401(tmp_path):
    f = run(model_rules.model_not_local, f"{A}.model.path=/cluster/only/model")
    assert f and f[0].severity == "info"
    (tmp_path / "m").mkdir()
    f = errors(run(model_rules.model_folder_incomplete, f"{A}.model.path={tmp_path / 'm'}"))
    assert f and "has no config.json" in f[0].message


def test_fc402_native_vs_remote(shared_models):
    f = errors(run(model_rules.remote_code, "+model.trust_remote_code=true", model="Qwen__Qwen-7B"))
    assert f and {"model.trust_remote_code", f"{A}.model.trust_remote_code"} <= set(f[0].keys)
    assert not run(model_rules.remote_code, f"{A}.model.trust_remote_code=true", model="Qwen__Qwen-7B")
    # Phi-3 and DeepSeek-R1 ship auto_map but transformers implements them natively
    assert not run(model_rules.remote_code, model="microsoft__Phi-3-mini-128k-instruct")
    assert not run(model_rules.remote_code, model="deepseek-ai__DeepSeek-R1")


def test_fc403_fc404(shared_models):
    assert errors(run(model_rules.chat_template, model="meta-llama__Llama-2-7b-hf"))
    assert not run(model_rules.chat_template, model="meta-llama__Llama-3.2-3B-Instruct")
    w = warnings(run(model_rules.pad_and_stop_ids, model="meta-llama__Llama-3.2-3B-Instruct"))
    assert w and "128009" in w[0].message and "[128001, 128008, 128009]" in w[0].message
    assert not run(model_rules.pad_and_stop_ids, model="Qwen__Qwen2.5-0.5B-Instruct__resaved")


def test_fc405_expected_class(shared_models):
    key = f"{A}.actor.fsdp_config.wrap_policy.transformer_layer_cls_to_wrap"
    f = errors(run(model_rules.wrap_classes, f"+{key}=[Gemma3DecoderLayer]", model="Qwen__Qwen3-8B"))
    assert f and "Qwen3DecoderLayer" in f[0].fix
    assert not run(model_rules.wrap_classes, f"+{key}=[Qwen3DecoderLayer]", model="Qwen__Qwen3-8B")
    assert model_files.layer_classes("llama")[0] == ("LlamaDecoderLayer",)


def test_fc406_table(shared_models):
    assert not run(model_rules.rollout_architecture, *GPU, model="Qwen__Qwen3-8B")
    table = model_rules.arch_table()["backends"]
    assert "Qwen3ForCausalLM" in table["vllm"]["architectures"] and table["vllm"]["version"] == "0.24.0"


@pytest.mark.slow  # end to end: a fresh Python process
def test_inspection_imports_nothing_heavy(shared_models):
    """Running every FC2xx-FC7xx rule on a real model folder imports neither torch, transformers nor verl."""
    code = (
        "import sys; sys.path.insert(0, 'tests/rules'); from rule_helpers import make_ctx; "
        "import fsdpcfg.rules.batch, fsdpcfg.rules.parallel, fsdpcfg.rules.model_rules, "
        "fsdpcfg.rules.rollout_engine, fsdpcfg.rules.algorithm, fsdpcfg.rules.traps; "
        "from fsdpcfg.rules.registry import RULES; from fsdpcfg.check import load_rule_modules; load_rule_modules(); "
        "ctx = make_ctx('launcher=verl', 'rollout=vllm', model='Qwen__Qwen3-8B__resaved'); "
        "[list(r.fn(ctx)) for r in list(RULES.values())]; "
        "print(sorted(m for m in ('torch', 'transformers', 'verl') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_fc406_warns_for_an_architecture_outside_the_backend_table(tmp_path):
    import json
    import shutil

    from fsdpcfg import paths

    src = paths.data_dir() / "model_configs" / "Qwen__Qwen2.5-0.5B-Instruct__resaved"  # shipped copy
    for f in src.iterdir():
        shutil.copy(f, tmp_path / f.name)
    cfg = json.loads((tmp_path / "config.json").read_text())
    cfg["architectures"] = ["NotARealArchForCausalLM"]
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    w = warnings(run(model_rules.rollout_architecture, *GPU, f"actor_rollout_ref.model.path={tmp_path}"))
    assert w and "NotARealArchForCausalLM" in w[0].message and "vllm" in w[0].message
    assert w[0].keys == ["actor_rollout_ref.model.path", "actor_rollout_ref.rollout.name"]
