"""The patch registry: one claimant per target (at registration and for a selection), selection from the
composed config of every ``patches=`` option, problems shared by rules and engine, no torch on import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from fsdpcfg.compose import compose
from fsdpcfg.errors import ConfigError
from fsdpcfg.train import patches
from fsdpcfg.train.patches import REGISTRY, Patch, PatchConflict, PatchRegistry

REPO = Path(__file__).resolve().parents[3]


def _p(name, *targets, **kw):
    return Patch(name=name, title=name, targets=targets, config_key=f"x.{name}", is_on=bool, **kw)


def test_registration_rejects_a_second_claimant_naming_both():
    reg = PatchRegistry([_p("a", "attention.forward", "rope")])
    with pytest.raises(PatchConflict, match="'a' and 'b' both claim the target 'rope'"):
        reg.register(_p("b", "rope"))
    with pytest.raises(PatchConflict, match="registered twice"):
        reg.register(_p("a", "other"))
    assert reg.names() == ["a"]


def test_builtin_targets_are_disjoint_and_selection_conflicts_are_reported():
    assert not patches.target_conflicts(REGISTRY)
    foreign = _p("my_flash_attn", "model.forward:packed")  # e.g. from another registry
    found = REGISTRY.problems(["remove_padding"], model_type=None, device=None, launcher=None, extra=[foreign])
    assert [(p.kind, p.message) for p in found] == [
        ("conflict", "patches 'remove_padding' and 'my_flash_attn' both claim the target 'model.forward:packed'")
    ]


def test_every_patches_option_maps_to_one_registered_patch():
    """``patches=X`` turns X on; the other keys keep verl's defaults (remove-padding and gradient checkpointing
    on), exactly as verl would run the same keys; ``patches=none`` turns every patch off."""
    options = sorted(p.stem for p in (REPO / "conf" / "patches").glob("*.yaml"))
    assert sorted(REGISTRY.names()) == sorted(o for o in options if o != "none")
    verl_defaults = {"remove_padding", "gradient_checkpointing"}
    for option in options:
        cfg = compose(["+recipe=qwen_grpo", f"patches={option}"]).to_container()
        want = [] if option == "none" else [n for n in REGISTRY.names() if n == option or n in verl_defaults]
        assert patches.selected(cfg) == want, option


def test_problems_name_model_type_device_launcher_and_requirements():
    kinds = {
        (p.kind, p.patch)
        for p in patches.problems(["liger", "ulysses", "nope"], model_type="gpt2", device="cpu", launcher="native")
    }
    assert kinds == {
        ("unknown", "nope"),
        ("model_type", "liger"),
        ("device", "liger"),
        ("launcher", "liger"),
        ("launcher", "ulysses"),
        ("requires", "ulysses"),
    }
    assert not patches.problems(
        ["remove_padding", "gradient_checkpointing"], model_type="qwen3", device="cpu", launcher="native"
    )


def test_engine_refuses_patches_it_does_not_run(tiny_model):
    import torch

    from fsdpcfg.schema.model import ModelSection
    from fsdpcfg.train.model import load_model

    model = load_model(ModelSection(path=str(tiny_model("tiny-qwen2"))), torch.float32)
    with pytest.raises(ConfigError) as e:
        patches.apply_patches(model, ["remove_padding", "ulysses", "liger"], device="cpu")
    msg = str(e.value)
    assert "launcher=verl" in msg and "cuda only" in msg and "ulysses" in msg
    assert not patches.is_packed(model)  # nothing applied when the selection is refused


def test_registry_imports_without_torch():
    code = "import sys, fsdpcfg.train.patches, fsdpcfg.rules.patch_rules; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
