"""What a checkpoint was trained from, recorded in its manifest and compared before a run resumes from it.

    MANIFEST.json  "trained_from": {
        "model_path":  the configured model path (a folder, or a hub id) and "model_folder" it resolved to,
        "config_sha256":     sha256 of the model's config.json,
        "architecture":      config.json's model_type, architectures and the sizes that shape the weights,
        "weights":           weight file names and sizes, and a sha256 over the index file, each safetensors
                             header (tensor names, shapes, dtypes) and the first and last MiB of each file,
        "tokenizer_sha256":  sha256 over the tokenizer files,
        "shape_keys":        the config keys that change the trained weights' shapes (LoRA rank, alpha, target
                             and excluded modules, adapter path, override_config)}

Nothing here imports torch (the launcher compares before torchrun starts); reading the files costs a few MiB
per weight file, not the weights. Source: issue 14 item 4 (auto-resume with another ``model.path`` of the same
architecture silently trained the old weights while config, run_info and the start-up audit named the new
model; another architecture crashed inside torchrun with a weight-sync error).
"""

from __future__ import annotations

import hashlib
import json
import struct
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

from fsdpcfg import runkind

if TYPE_CHECKING:
    from fsdpcfg.schema.model import ModelSection
    from fsdpcfg.schema.root import RunConfig
    from fsdpcfg.schema.sft import SftModel, SftRunConfig

#: the typed config of a run of either kind (:func:`fsdpcfg.schema.parse_config`)
AnyRunConfig = Union["RunConfig", "SftRunConfig"]

#: config.json entries that decide the shapes of the weights (missing ones are left out).
ARCH_FIELDS = (
    "model_type",
    "architectures",
    "hidden_size",
    "intermediate_size",
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "vocab_size",
    "tie_word_embeddings",
    "num_experts",
    "num_local_experts",
    "n_routed_experts",
    "n_shared_experts",
    "moe_intermediate_size",
    "kv_lora_rank",
    "q_lora_rank",
    "qk_rope_head_dim",
    "qk_nope_head_dim",
    "v_head_dim",
)
#: model-section keys (under ``actor_rollout_ref.model`` for RL, ``model`` for SFT) that change what is trained.
SHAPE_KEYS = ("lora_rank", "lora_alpha", "target_modules", "exclude_modules", "lora_adapter_path", "override_config")
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.json",
    "merges.txt",
    "tokenizer.model",
    "special_tokens_map.json",
    "added_tokens.json",
    "chat_template.jinja",
    "chat_template.json",
)
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth")
_SAMPLE = 1 << 20


def model_section(cfg: AnyRunConfig) -> tuple[str, ModelSection | SftModel]:
    """``(key prefix, model section)`` of a typed config: ``actor_rollout_ref.model`` (RL) or ``model`` (SFT), as
    its run kind says (:attr:`fsdpcfg.runkind.RunKind.model_key`)."""
    return runkind.of(cfg).model_key, runkind.model_of(cfg)


def _sha(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _weights(folder: Path) -> dict[str, Any]:
    files = sorted(p for p in folder.iterdir() if p.is_file() and p.name.endswith(WEIGHT_SUFFIXES))
    h = hashlib.sha256()
    for index in sorted(folder.glob("*.index.json")):
        h.update(index.name.encode() + index.read_bytes())
    for p in files:
        size = p.stat().st_size
        h.update(f"{p.name}:{size}".encode())
        with open(p, "rb") as fh:
            if p.suffix == ".safetensors" and size >= 8:
                (n,) = struct.unpack("<Q", fh.read(8))
                h.update(fh.read(min(n, 100 << 20)))  # the JSON header: names, shapes, dtypes, offsets
            h.update(fh.read(_SAMPLE))
            if size > 2 * _SAMPLE:
                fh.seek(-_SAMPLE, 2)
                h.update(fh.read(_SAMPLE))
    return {"files": {p.name: p.stat().st_size for p in files}, "sha256": h.hexdigest()}


def _folder(path: Any) -> Path | None:
    from fsdpcfg.schema.model import model_path_status

    return model_path_status(path).local


def identity(cfg: AnyRunConfig) -> dict[str, Any]:
    """The ``trained_from`` record of the typed config ``cfg`` (see the module docstring).

    A model path that cannot be read here (a hub id not in the local cache) records the path alone.
    """
    prefix, model = model_section(cfg)
    path = model.path
    out: dict[str, Any] = {"model_path": str(path)}
    folder = _folder(path)
    if folder is not None:
        out["model_folder"] = str(folder.resolve())
        config_file = folder / "config.json"
        out["config_sha256"] = _sha(config_file)
        try:
            read = json.loads(config_file.read_text())
        except (OSError, ValueError, RecursionError):  # unreadable, not JSON, nested past the recursion limit
            read = {}
        hf: dict[str, Any] = read if isinstance(read, dict) else {}  # check reports one that is no object (FC401)
        inner = hf.get("text_config")
        text: dict[str, Any] = inner if isinstance(inner, dict) else {}
        out["architecture"] = {k: hf.get(k, text.get(k)) for k in ARCH_FIELDS if k in hf or k in text}
        out["weights"] = _weights(folder)
    tok_path = model.tokenizer_path or path
    tok = _folder(tok_path) if tok_path != path else folder
    if tok is not None:
        h = hashlib.sha256()
        for name in TOKENIZER_FILES:
            if (tok / name).is_file():
                h.update(name.encode() + b"\0" + bytes.fromhex(_sha(tok / name)))
        out["tokenizer_sha256"] = h.hexdigest()
    out["shape_keys"] = {f"{prefix}.{k}": getattr(model, k) for k in SHAPE_KEYS}
    return out


#: what each part of the record is called in messages, and whether a difference changes the weights' shapes.
_PARTS = {
    "model_path": ("model path", False),
    "config_sha256": ("config.json", True),
    "architecture": ("architecture", True),
    "weights": ("weights", False),
    "tokenizer_sha256": ("tokenizer files", False),
    "shape_keys": ("shape keys", True),
}


def differences(saved: dict[str, Any], now: dict[str, Any]) -> list[tuple[str, bool, Any, Any]]:
    """The parts of two ``trained_from`` records that differ: ``(what, changes shapes, saved, now)``.

    A part recorded on one side only (a model not readable here) is not compared.
    """
    out = []
    for part, (label, shapes) in _PARTS.items():
        if part not in saved or part not in now or saved[part] == now[part]:
            continue
        a, b = saved[part], now[part]
        if part == "model_path":
            if saved.get("model_folder") and saved.get("model_folder") == now.get("model_folder"):
                continue  # the same folder spelled another way
            a = f"{a} ({saved['model_folder']})" if saved.get("model_folder") and saved["model_folder"] != a else a
            b = f"{b} ({now['model_folder']})" if now.get("model_folder") and now["model_folder"] != b else b
        elif part == "weights":
            if a.get("files") != b.get("files"):
                a, b = a.get("files"), b.get("files")
            else:
                a, b = f"sha256 {a['sha256'][:12]}", f"sha256 {b['sha256'][:12]}"
        elif part == "architecture":
            keys = [k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
            a, b = {k: a.get(k) for k in keys}, {k: b.get(k) for k in keys}
        elif part == "shape_keys":
            keys = [k for k in a if a.get(k) != b.get(k)]
            a, b = {k: a.get(k) for k in keys}, {k: b.get(k) for k in keys}
        elif part.endswith("sha256"):
            a, b = f"sha256 {a[:12]}", f"sha256 {b[:12]}"
        out.append((label, shapes, a, b))
    return out


def _show(v: Any) -> str:
    return json.dumps(v, default=str) if isinstance(v, (dict, list)) else str(v)


def check_resume_identity(cfg: AnyRunConfig, folder: Path | None, echo: Any = print) -> None:
    """Refuse, before anything starts, to resume ``folder`` when it was trained from another model than the one
    ``cfg`` names (path, config.json, weights, tokenizer or shape keys; see :func:`differences`).

    ``trainer.resume_mode=auto`` refuses any difference. ``resume_path`` (the user chose the checkpoint)
    accepts another model path, weights or tokenizer of the same shapes, saying so, and refuses other shapes
    (the weights would not load). A checkpoint written before fsdpcfg recorded this is resumed with a note.

    Raises:
        ConfigError: naming the checkpoint, both models, what differs and the fixes.
    """
    from fsdpcfg.errors import ConfigError
    from fsdpcfg.native.ckpt_layout import read_manifest

    if folder is None:
        return
    saved = (read_manifest(folder) or {}).get("trained_from")
    prefix, model = model_section(cfg)
    if not isinstance(saved, dict):
        echo(
            f"note: {folder} does not record the model it was trained from (an older checkpoint); resuming "
            f"it with {prefix}.path={model.path} unchecked"
        )
        return
    diffs = differences(saved, identity(cfg))
    if not diffs:
        return
    mode = cfg.trainer.resume_mode
    shapes = any(d[1] for d in diffs)
    detail = "; ".join(f"{what}: {_show(a)} -> {_show(b)}" for what, _, a, b in diffs)
    if mode == "resume_path" and not shapes:
        echo(
            f"note: resuming {folder} (trained from {saved.get('model_path')}) with {prefix}.path="
            f"{model.path}, as trainer.resume_mode=resume_path asks: {detail}"
        )
        return
    fix = (
        "give this run folders of its own: another trainer.experiment_name (or trainer.default_local_dir), "
        f"or move the checkpoints in {folder.parent} away to start over from {model.path}"
    )
    if not shapes:
        fix += (
            f", or continue that checkpoint with this model on purpose: trainer.resume_mode=resume_path "
            f"trainer.resume_from_path={folder}"
        )
    else:
        fix += f", or set {prefix}.path back to {saved.get('model_path')}"
    raise ConfigError(
        f"trainer.resume_mode={mode} would resume {folder}, trained from {saved.get('model_path')}, "
        f"but this run's model is {model.path} ({detail}); "
        + (
            "the weights' shapes differ, so they cannot be loaded"
            if shapes
            else "the run would train the old weights while its config and run_info name the new model"
        ),
        key=f"{prefix}.path",
        value=model.path,
        fix=fix,
    )
