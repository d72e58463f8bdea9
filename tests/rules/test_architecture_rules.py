"""FC470 (an architecture class transformers does not define) and FC471 (attention soft-capping skipped by sdpa),
on config folders written here from the real Llama-2 config and on the offline assets."""

from __future__ import annotations

import json
import shutil

import pytest
from rule_helpers import errors, run, warnings

from fsdpcfg import paths
from fsdpcfg.rules import architecture

MODELS = paths.data_dir() / "model_configs"  # the shipped real configs

A = "actor_rollout_ref"
ATTN = f"+{A}.model.override_config.attn_implementation"


def _folder(tmp_path, **edits):
    """A copy of the real Llama-2-7b-hf folder (config.json, tokenizer_config.json) with ``edits`` on config.json."""
    src = MODELS / "meta-llama__Llama-2-7b-hf"
    dest = tmp_path / "model"
    shutil.copytree(src, dest)
    cfg = json.loads((dest / "config.json").read_text())
    cfg.update(edits)
    (dest / "config.json").write_text(json.dumps(cfg))
    return dest


def test_fc470_unknown_class_of_a_known_model_type(tmp_path):
    path = _folder(tmp_path, architectures=["LlamaMTPForCausalLM"])
    f = errors(run(architecture.unknown_architecture, f"{A}.model.path={path}"), "FC470")
    assert len(f) == 1
    assert "'LlamaMTPForCausalLM'" in f[0].message and "LlamaForCausalLM" in f[0].message
    assert "model_type 'llama'" in f[0].message and 'architectures to ["LlamaForCausalLM"]' in f[0].fix


@pytest.mark.parametrize(
    "archs", [["LlamaForCausalLM"], ["LlamaForSequenceClassification"], ["MistralForCausalLM"]]
)  # own class, another head, another model file's class
def test_fc470_silent_on_classes_transformers_defines(tmp_path, archs):
    path = _folder(tmp_path, architectures=archs)
    assert not run(architecture.unknown_architecture, f"{A}.model.path={path}")


def test_fc470_leaves_remote_code_to_fc402(tmp_path):
    path = _folder(
        tmp_path,
        architectures=["LlamaMTPForCausalLM"],
        auto_map={"AutoModelForCausalLM": "modeling_mtp.LlamaMTPForCausalLM"},
    )
    assert not run(architecture.unknown_architecture, f"{A}.model.path={path}")
    assert not run(
        architecture.unknown_architecture, f"{A}.model.path={MODELS / 'Qwen__Qwen-7B'}"
    )  # model_type 'qwen': FC402's case


def test_fc471_softcap_needs_eager_or_flash(tmp_path):
    path = _folder(tmp_path, attn_logit_softcapping=50.0)
    model = f"{A}.model.path={path}"
    f = warnings(run(architecture.softcap_attention, model), "FC471")
    assert len(f) == 1 and "sdpa" in f[0].message and "50.0" in f[0].message
    assert f[0].fix == f"set {ATTN}=eager"
    assert not run(architecture.softcap_attention, model, f"{ATTN}=eager")
    assert warnings(run(architecture.softcap_attention, model, f"{ATTN}=sdpa"), "FC471")
    # verl loads with flash_attention_2 unless told otherwise; flash-attention applies the cap
    verl = ["launcher=verl", "rollout=vllm", "trainer=gpu_1x"]
    assert not run(architecture.softcap_attention, model, *verl)
    assert warnings(run(architecture.softcap_attention, model, *verl, f"{ATTN}=sdpa"), "FC471")
    assert not run(architecture.softcap_attention, f"{A}.model.path={_folder(tmp_path / 'b')}")  # no cap


@pytest.mark.slow  # end to end: a fresh Python process
def test_check_and_doctor_on_the_unknown_architecture_asset(tiny_model):
    """`fsdpcfg check` reports FC470 (no traceback); the doctor stops at stage 0 naming it."""
    import subprocess
    import sys

    from fsdpcfg.doctor import run_doctor

    path = tiny_model("tiny-unknown-arch")
    p = subprocess.run(
        [sys.executable, "-m", "fsdpcfg", "check", "+recipe=qwen_grpo", f"{A}.model.path={path}"],
        capture_output=True,
        text=True,
    )
    assert p.returncode == 1 and "Traceback" not in p.stdout + p.stderr
    assert "FC470" in p.stdout and "LlamaMTPForCausalLM" in p.stdout
    report = run_doctor(["+recipe=qwen_grpo", f"{A}.model.path={path}"])
    assert not report.ok and report.failure.stage == 0 and "FC470" in report.failure.failure.rules
    assert report.failure.failure.boundary == "model construction"
    from fsdpcfg.doctor.matrix import ModelRow, render_markdown

    row = next(
        line
        for line in render_markdown(
            [ModelRow("tiny-unknown-arch", "x", [], [], report)], seconds=1, versions={}, date="2026-01-01"
        ).splitlines()
        if line.startswith("| tiny-unknown-arch |")
    )
    assert "| **check failed** (FC403, FC470) |" in row  # no remedies applied here: FC403 too


def test_fc471_reads_the_installed_sdpa(tmp_path, monkeypatch):
    """transformers 5.10's sdpa takes no softcap (read from its file); a version whose sdpa applies it gets no
    finding."""
    from fsdpcfg import model_files

    assert model_files.sdpa_applies_softcap() is False  # the installed 5.10
    path = _folder(tmp_path, attn_logit_softcapping=50.0)
    monkeypatch.setattr(architecture, "sdpa_applies_softcap", lambda: True)
    assert not run(architecture.softcap_attention, f"{A}.model.path={path}")
