"""``actor_rollout_ref.model``: which checkpoint to load and how (verl's ``HFModelConfig``).

Also the model-path inspection shared by ``check`` (:func:`model_path_status`, offline, never a network call)
and by the launcher (:func:`require_model_path`, which turns an unreachable path into an error).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import field_validator

from fsdpcfg.errors import ConfigError
from fsdpcfg.schema._base import MAX_LORA_RANK, F, Section

#: ``org/name`` as the Hugging Face Hub spells repository ids (or a bare legacy id such as ``gpt2``).
HUB_ID = re.compile(r"^(?:[A-Za-z0-9][A-Za-z0-9._-]*/)?[A-Za-z0-9][A-Za-z0-9._-]*$")
#: a dotted Python module name (``external_lib``); checked as text, never imported while validating.
MODULE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
#: what ``--offline`` users select instead of a hub model (conf/model/tiny_qwen2.yaml).
OFFLINE_OPTION = "model=tiny_qwen2"


class ModelSection(Section):
    """The actor's (and reference's, and rollout's) Hugging Face model."""

    path: str = F(description="a local folder holding config.json, or a Hugging Face Hub id `org/name`")
    tokenizer_path: str | None = F(None, description="tokenizer folder or hub id; null: the model path")
    trust_remote_code: bool = F(
        False, description="allow the checkpoint's own Python code (auto_map); false unless set"
    )
    custom_chat_template: str | None = F(None, description="a Jinja chat template replacing the tokenizer's")
    external_lib: str | list[str] | None = F(
        None,
        description="module(s) imported before the model is built (registers custom models); imported "
        "only at launch, never while validating",
    )
    override_config: dict[str, Any] = F(
        default_factory=dict, description="entries merged into the model's config.json at load time (e.g. rope_scaling)"
    )
    enable_gradient_checkpointing: bool = F(True, description="activation checkpointing of every decoder layer")
    use_remove_padding: bool = F(True, description="packed sequences without pad tokens (varlen attention)")
    lora_rank: int = F(0, le=MAX_LORA_RANK, ge=0, description="LoRA rank; 0 disables LoRA")
    lora_alpha: int | float = F(16, ge=0, description="LoRA scaling numerator (scale = alpha / rank)")
    target_modules: str | list[str] = F(
        "all-linear", description="modules LoRA adapts: `all-linear` or a list of module names"
    )
    exclude_modules: str | list[str] | None = F(None, description="modules LoRA must not adapt")
    lora_adapter_path: str | None = F(None, description="a trained PEFT adapter to start from")
    use_liger: bool = F(False, description="Liger fused kernels (GPU only)")
    use_fused_kernels: bool = F(False, description="verl's fused log-prob/entropy kernels")

    @field_validator("external_lib")
    @classmethod
    def _module_names(cls, v: Any) -> Any:
        names = [v] if isinstance(v, str) else list(v or [])
        bad = [n for n in names if not MODULE_NAME.match(n)]
        if bad:
            raise ValueError(f"{', '.join(repr(b) for b in bad)} is not a Python module name (dotted identifiers)")
        return v

    @field_validator("path")
    @classmethod
    def _path_text(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("the model path is empty")
        return v


@dataclass(frozen=True)
class ModelPathStatus:
    """Where a model path points, found without a network call.

    Attributes:
        kind: ``folder`` (a local folder with config.json), ``hub_cached`` (a hub id with a local snapshot),
            ``hub_id`` (a hub id not available locally), ``missing`` (a path that does not exist here),
            ``incomplete`` (a folder without config.json), ``invalid`` (neither a path nor a hub id).
        local: the local folder holding config.json, when there is one.
        detail: one line for messages.
    """

    kind: Literal["folder", "hub_cached", "hub_id", "missing", "incomplete", "invalid"]
    local: Path | None
    detail: str

    @property
    def inspectable(self) -> bool:
        """True when config.json can be read here."""
        return self.local is not None


def _hf_cache_dirs() -> list[Path]:
    dirs = []
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if os.environ.get(var):
            dirs.append(Path(os.environ[var]).expanduser())
    home = os.environ.get("HF_HOME")
    dirs.append((Path(home).expanduser() if home else Path.home() / ".cache" / "huggingface") / "hub")
    return dirs


def hub_snapshot(hub_id: str) -> Path | None:
    """Return a local snapshot folder of ``hub_id`` holding config.json in the Hugging Face cache, if any
    (reads the cache layout ``models--org--name/snapshots/<rev>/``; no network, no huggingface_hub import)."""
    org_name = "models--" + hub_id.replace("/", "--")
    for cache in _hf_cache_dirs():
        snaps = cache / org_name / "snapshots"
        if snaps.is_dir():
            for snap in sorted(snaps.iterdir()):
                if (snap / "config.json").is_file():
                    return snap
    return None


def model_path_status(path: Any) -> ModelPathStatus:
    """Classify ``actor_rollout_ref.model.path`` offline (see :class:`ModelPathStatus`)."""
    if not isinstance(path, str) or not path.strip() or path == "???":
        return ModelPathStatus("invalid", None, f"{path!r} is not a path")
    p = Path(path).expanduser()
    if p.is_dir():
        if (p / "config.json").is_file():
            return ModelPathStatus("folder", p, f"local folder {p}")
        present = sorted(x.name for x in p.iterdir())[:8]
        return ModelPathStatus(
            "incomplete", None, f"the folder {p} has no config.json (it holds: {', '.join(present) or 'nothing'})"
        )
    if p.exists():
        return ModelPathStatus("incomplete", None, f"{p} is a file, not a model folder")
    looks_like_path = path.startswith(("/", "~", ".")) or path.count("/") > 1
    if not looks_like_path and HUB_ID.match(path):
        snap = hub_snapshot(path)
        if snap is not None:
            return ModelPathStatus("hub_cached", snap, f"hub id {path}, cached at {snap}")
        return ModelPathStatus("hub_id", None, f"hub id {path}, not in the local Hugging Face cache")
    if looks_like_path:
        return ModelPathStatus("missing", None, f"{path} does not exist on this machine")
    return ModelPathStatus("invalid", None, f"{path!r} is neither an existing folder nor a hub id `org/name`")


def hub_reachable(timeout_s: float = 3.0) -> bool:
    """True when a TCP connection to the Hugging Face Hub (``$HF_ENDPOINT``, default huggingface.co:443)
    opens within ``timeout_s`` seconds. Used at launch only, never by ``fsdpcfg check``."""
    import socket
    from urllib.parse import urlparse

    url = urlparse(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        with socket.create_connection((url.hostname or "huggingface.co", port), timeout=timeout_s):
            return True
    except OSError:
        return False


def require_model_path(path: Any, *, offline: bool | None = None) -> ModelPathStatus:
    """For the launcher: return the status of a model path a run can load, or raise.

    A hub id that is not cached is accepted only when the hub may be used: not offline (``offline`` False; by
    default offline when ``HF_HUB_OFFLINE`` or ``TRANSFORMERS_OFFLINE`` is set, or when the hub cannot be
    reached, see :func:`hub_reachable`).

    Raises:
        ConfigError: the path does not exist, has no config.json, is not a hub id, or is an uncached hub id
            while offline (the message names the offline option).
    """
    if offline is None:
        offline = any(
            os.environ.get(v, "").lower() in ("1", "true", "yes") for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
        )
    st = model_path_status(path)
    key = "actor_rollout_ref.model.path"
    if st.kind in ("folder", "hub_cached"):
        return st
    if st.kind == "hub_id" and not offline:
        if hub_reachable():
            return st
        st = ModelPathStatus("hub_id", None, f"{st.detail}, and the Hugging Face Hub cannot be reached from here")
    if st.kind == "incomplete":
        raise ConfigError(
            f"{st.detail}",
            key=key,
            value=path,
            fix="point it at a Hugging Face model folder (config.json, tokenizer, weights)",
        )
    raise ConfigError(
        f"cannot load the model: {st.detail}",
        key=key,
        value=path,
        fix=f"download it (huggingface-cli download ...), point the path at a local copy, or run "
        f"offline with {OFFLINE_OPTION}",
    )
