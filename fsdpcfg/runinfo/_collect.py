"""Collect what a run folder records besides the config: provenance, package versions, git commit, hardware.

Nothing here imports torch or any other heavy package: versions come from installed package metadata, the
hardware from the OS (``/proc/meminfo``, ``nvidia-smi`` when present).
"""

from __future__ import annotations

import functools
import os
import platform
import shutil
import subprocess
import sys
from importlib import metadata
from typing import Any

from fsdpcfg import paths

#: distributions whose versions a run folder records (``None`` when not installed).
PACKAGES = (
    "fsdpcfg",
    "torch",
    "transformers",
    "safetensors",
    "peft",
    "accelerate",
    "tokenizers",
    "numpy",
    "hydra-core",
    "omegaconf",
    "pydantic",
    "PyYAML",
    "hydra-joblib-launcher",
    "hydra-submitit-launcher",
    "submitit",
    "joblib",
    "tensorboard",
    "verl",
    "vllm",
    "sglang",
    "ray",
)


def package_versions() -> dict[str, str | None]:
    """``{distribution: version or None}`` for :data:`PACKAGES`, from the installed metadata (read once per
    process)."""
    return dict(_versions())


@functools.cache
def _versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def _run(cmd: list[str], cwd: str | None = None) -> str | None:
    try:
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout if proc.returncode == 0 else None


def git_info() -> dict[str, Any]:
    """The git commit of the fsdpcfg source tree and whether it has uncommitted changes; ``commit`` is ``None``
    for an installed package (not a git checkout) or when git is missing."""
    repo = paths.REPO_DIR
    if not (repo / ".git").exists() or shutil.which("git") is None:
        return {"commit": None, "dirty": None, "changed_files": None, "repo": None}
    commit = _run(["git", "rev-parse", "HEAD"], cwd=str(repo))
    status = _run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=str(repo))
    changed = [line[3:] for line in (status or "").splitlines() if line.strip()]
    return {
        "commit": commit.strip() if commit else None,
        "dirty": bool(changed) if status is not None else None,
        "changed_files": changed if status is not None else None,
        "repo": str(repo),
    }


def _mem_total_gib() -> float | None:
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024**2, 2)
    except OSError:
        pass
    return None


def hardware() -> dict[str, Any]:
    """Host, OS, Python, CPU count (all and usable), memory in GiB, and the GPUs ``nvidia-smi`` lists (name,
    memory, driver); ``gpus`` is empty on a machine without NVIDIA GPUs."""
    gpus = []
    if shutil.which("nvidia-smi"):
        out = _run(["nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"])
        for line in (out or "").splitlines():
            parts = [p.strip() for p in line.split(",")]
            if len(parts) == 3:
                gpus.append({"name": parts[0], "memory": parts[1], "driver": parts[2]})
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "host": platform.node(),
        "os": platform.platform(),
        "machine": platform.machine(),
        "python": sys.version.split()[0],
        "cpu_count": os.cpu_count(),
        "cpus_usable": usable,
        "memory_gib": _mem_total_gib(),
        "gpus": gpus,
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
    }
