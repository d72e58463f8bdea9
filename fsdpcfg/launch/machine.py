"""Probes of *this machine* for a launch: the CUDA GPUs a process can see and the packages it can import.

Nothing here imports torch or the probed packages: GPUs are counted from ``nvidia-smi -L`` (or
``/proc/driver/nvidia/gpus``) narrowed by ``CUDA_VISIBLE_DEVICES``; packages are looked up with
``importlib.util.find_spec``. The launch-time findings built on them are :mod:`fsdpcfg.launch.verl_launch` (FC85x).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class GpuInfo:
    """CUDA GPUs this process can see.

    Attributes:
        count: number of visible GPUs (0 when none).
        source: how it was found (``nvidia-smi -L``, ``/proc/driver/nvidia/gpus``, ``CUDA_VISIBLE_DEVICES``,
            or ``no NVIDIA driver``).
    """

    count: int
    source: str


def _physical_gpus(timeout: float = 10.0) -> GpuInfo:
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=timeout)
            if out.returncode == 0:
                n = sum(1 for line in out.stdout.splitlines() if line.startswith("GPU "))
                return GpuInfo(n, "nvidia-smi -L")
        except (OSError, subprocess.TimeoutExpired):
            pass
    proc = Path("/proc/driver/nvidia/gpus")
    if proc.is_dir():
        return GpuInfo(sum(1 for _ in proc.iterdir()), str(proc))
    return GpuInfo(0, "no NVIDIA driver (no nvidia-smi, no /proc/driver/nvidia)")


def detect_gpus(environ: dict[str, str] | None = None) -> GpuInfo:
    """Count the CUDA GPUs visible to a process started with ``environ`` (default ``os.environ``).

    The driver's count (``nvidia-smi -L`` or ``/proc/driver/nvidia/gpus``) is narrowed by
    ``CUDA_VISIBLE_DEVICES`` when that is set (empty or ``-1`` hides every GPU).
    """
    env = os.environ if environ is None else environ
    phys = _physical_gpus()
    cvd = env.get("CUDA_VISIBLE_DEVICES")
    if cvd is None or phys.count == 0:
        return phys
    items = [x for x in cvd.split(",") if x.strip()]
    if not items or items[0].strip() == "-1":
        return GpuInfo(0, f"CUDA_VISIBLE_DEVICES={cvd!r} hides every GPU")
    return GpuInfo(min(len(items), phys.count), f"CUDA_VISIBLE_DEVICES={cvd} ({phys.count} on the driver)")


def is_installed(module: str) -> bool:
    """True when ``module`` can be imported here (``importlib.util.find_spec``, which imports nothing)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False
