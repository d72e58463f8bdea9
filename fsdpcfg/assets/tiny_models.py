"""Build one tiny model folder from a :class:`~fsdpcfg.assets.specs.ModelSpec`, offline and deterministically.

The folder holds what ``AutoModelForCausalLM.from_pretrained`` and ``AutoTokenizer.from_pretrained`` need:
``config.json`` and ``model.safetensors`` written by ``save_pretrained`` (float32, random init under a fixed
torch seed, so a rebuild gives the same bytes), the real tokenizer files copied byte for byte, the real
``generation_config.json`` where the source has one, and ``SOURCES.md`` saying where each piece came from.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from fsdpcfg import paths
from fsdpcfg.assets.scale import scale_config
from fsdpcfg.assets.specs import ModelSpec

#: Authored tokenizer_config.json for tokenizer folders that ship none (gpt2), so AutoTokenizer can load them.
_AUTHORED_TOKENIZER_CONFIG: dict[str, dict[str, Any]] = {
    "gpt2": {
        "tokenizer_class": "GPT2Tokenizer",
        "bos_token": "<|endoftext|>",
        "eos_token": "<|endoftext|>",
        "unk_token": "<|endoftext|>",
        "add_prefix_space": False,
        "model_max_length": 1024,
    },
}


def source_dir(spec: ModelSpec) -> Path:
    """Return the folder of the real config files that ``spec`` scales down (or takes tokenizer files from).

    Raises:
        ValueError: the spec has no source folder (built from transformers defaults only).
    """
    if not spec.source:
        raise ValueError(f"asset {spec.name} has no source folder (built from transformers defaults)")
    return paths.data_dir() / "model_configs" / spec.source


def tokenizer_dir(name: str) -> Path:
    """Return the shipped tokenizer folder ``fsdpcfg/data/tokenizers/<name>``."""
    return paths.data_dir() / "tokenizers" / name


def real_config(spec: ModelSpec) -> dict[str, Any]:
    """Return the config ``spec`` scales down, as a dict: the real ``config.json`` of its source model, or, for a
    spec with ``defaults``, ``<ConfigClass>(**defaults_args).to_dict()`` of the installed transformers (imports it)
    without the serialisation-only keys (``transformers_version``, ``_name_or_path``)."""
    if spec.defaults:
        from transformers.models.auto.configuration_auto import CONFIG_MAPPING

        cfg = CONFIG_MAPPING[spec.defaults](**spec.defaults_args).to_dict()
        for key in ("transformers_version", "_name_or_path"):
            cfg.pop(key, None)
        return cfg
    return json.loads((source_dir(spec) / "config.json").read_text())


def build_folder(spec: ModelSpec, dest: Path) -> None:
    """Write the model of ``spec`` into the existing empty folder ``dest``.

    Weights (when ``spec.weights``) come from ``AutoModelForCausalLM.from_config`` under
    ``torch.manual_seed(spec.seed)`` in float32. A config-only spec gets the real ``config.json`` verbatim.

    Raises:
        KeyError: the installed transformers does not know the config's ``model_type``.
    """
    src = source_dir(spec) if spec.source else None
    real = real_config(spec)
    if spec.weights:
        scaled = {**scale_config(real, spec), **spec.edits}
        _save_model(scaled, spec.seed, dest, on_accelerator=spec.init_on_accelerator)
        if spec.edits:  # save_pretrained writes the class it built into architectures: the edits go on top
            written = json.loads((dest / "config.json").read_text())
            (dest / "config.json").write_text(json.dumps({**written, **spec.edits}, indent=2, sort_keys=True) + "\n")
    else:
        assert src is not None, "a config-only spec copies the real config.json: it needs a source"
        scaled = real
        shutil.copyfile(src / "config.json", dest / "config.json")
    _copy_tokenizer(spec, dest)
    if src is not None and (src / "generation_config.json").is_file():
        shutil.copyfile(src / "generation_config.json", dest / "generation_config.json")
    (dest / "SOURCES.md").write_text(_sources_md(spec, real, scaled))


def _save_model(scaled: dict[str, Any], seed: int, dest: Path, *, on_accelerator: bool = False) -> None:
    import contextlib

    import torch
    from transformers import AutoModelForCausalLM
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING
    from transformers.utils import logging as hf_logging

    config = CONFIG_MAPPING[scaled["model_type"]].from_dict(dict(scaled))
    hf_logging.disable_progress_bar()
    torch.manual_seed(seed)
    where = torch.device("cuda") if on_accelerator and torch.cuda.is_available() else contextlib.nullcontext()
    with where:
        model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.save_pretrained(dest, safe_serialization=True)


def _copy_tokenizer(spec: ModelSpec, dest: Path) -> None:
    if spec.tokenizer is not None:
        for f in sorted(tokenizer_dir(spec.tokenizer).iterdir()):
            if f.is_file():
                shutil.copyfile(f, dest / f.name)
        authored = _AUTHORED_TOKENIZER_CONFIG.get(spec.tokenizer)
        if authored is not None and not (dest / "tokenizer_config.json").exists():
            (dest / "tokenizer_config.json").write_text(json.dumps(authored, indent=2) + "\n")
    for name in spec.model_tokenizer_files:
        shutil.copyfile(source_dir(spec) / name, dest / name)


def _sources_md(spec: ModelSpec, real: dict[str, Any], scaled: dict[str, Any]) -> str:
    changed = sorted(k for k in set(real) | set(scaled) if real.get(k) != scaled.get(k))
    rows = "\n".join(f"| `{k}` | `{_short(real.get(k))}` | `{_short(scaled.get(k))}` |" for k in changed)
    tok = spec.tokenizer or "none"
    config_line = (
        f"- Config: transformers defaults, `{spec.source_label}` of the installed transformers (no real "
        "config.json of this model is available offline)."
        if spec.defaults
        else f"- Real config: `fsdpcfg/data/model_configs/{spec.source}/config.json` (provenance in "
        "`fsdpcfg/data/model_configs/SOURCES.md`)."
    )
    lines = [
        f"# {spec.name}: offline {'tiny model' if spec.weights else 'config-only folder'} built by fsdpcfg",
        "",
        config_line,
        f"- Tokenizer files: `fsdpcfg/data/tokenizers/{tok}/`, copied byte for byte (provenance, sha256 and "
        "license in `fsdpcfg/data/tokenizers/SOURCES.md`)"
        + (
            f"; from the real model folder: {', '.join(spec.model_tokenizer_files)}."
            if spec.model_tokenizer_files
            else "."
        ),
        "- Weights: "
        + (
            f"random init, torch seed {spec.seed}, float32, save_pretrained (safetensors)."
            if spec.weights
            else "none (config only)."
        ),
        f"- Notes: {spec.notes}",
        *([f"- Covers: {', '.join(spec.covers)}."] if spec.covers else []),
        "",
    ]
    if spec.weights:
        lines += [
            f"## Keys changed from the {'transformers defaults' if spec.defaults else 'real config'}",
            "",
            "| key | real | here |",
            "|---|---|---|",
            rows,
            "",
        ]
    return "\n".join(lines)


def _short(v: Any) -> str:
    s = json.dumps(v)
    return s if len(s) <= 60 else s[:57] + "..."
