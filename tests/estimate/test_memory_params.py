"""The analytic parameter formula of fsdpcfg.estimate.param_count against the model built on the meta device (no
weights), for every offline asset with weights and every real config.json shipped with fsdpcfg."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fsdpcfg.assets import SPECS, asset_path, is_complete
from fsdpcfg.estimate.param_count import SUPPORTED, UnsupportedArchitecture, count_parameters

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

SHIPPED = Path(__file__).resolve().parents[2] / "fsdpcfg" / "data" / "model_configs"
SHARED = Path(__file__).resolve().parents[3] / "shared" / "data" / "model_configs"


def _configs() -> list:
    out = []
    for name, spec in SPECS.items():
        if spec.weights:
            out.append(pytest.param(("asset", name), id=f"asset-{name}"))
    for root in (SHIPPED, SHARED):
        for f in sorted(root.glob("*/config.json")) if root.is_dir() else []:
            out.append(pytest.param(("file", str(f)), id=f"{root.parent.parent.name}-{f.parent.name}"))
    return out


def _meta_model(folder: Path):
    config = transformers.AutoConfig.from_pretrained(folder, trust_remote_code=False)
    with torch.device("meta"):
        return transformers.AutoModelForCausalLM.from_config(config)


@pytest.mark.parametrize("which", _configs())
def test_formula_matches_the_meta_device_model(which):
    kind, ref = which
    if kind == "asset":
        if not is_complete(ref):
            pytest.skip(f"asset {ref} is not built (fsdpcfg assets build --name {ref})")
        folder = asset_path(ref)
    else:
        folder = Path(ref).parent
    raw = json.loads((folder / "config.json").read_text())
    if raw.get("model_type") not in SUPPORTED:
        with pytest.raises(UnsupportedArchitecture):
            count_parameters(raw)
        pytest.skip(f"model_type {raw.get('model_type')!r} needs remote code: no meta-device model to compare")
    model = _meta_model(folder)
    params = list(model.parameters())
    counts = count_parameters(raw)
    assert counts.total == sum(p.numel() for p in params)
    assert counts.largest_tensor == max(p.numel() for p in params)
    emb = model.get_input_embeddings().weight
    assert counts.embedding == emb.numel()
    tied = model.get_output_embeddings().weight is emb
    assert (counts.lm_head == 0) == tied
    assert len(counts.layers) == model.config.num_hidden_layers
