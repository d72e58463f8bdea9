"""Fail fast on a machine verl cannot use: GPU detection without torch and the FC85x launch findings."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fsdpcfg.launch import machine
from fsdpcfg.launch.machine import GpuInfo, detect_gpus
from fsdpcfg.launch.verl_launch import launch_findings

REPO = Path(__file__).resolve().parents[2]


def _cfg(**over) -> dict:
    cfg = {
        "fsdpcfg": {"launcher": "verl", "kind": "ppo"},
        "actor_rollout_ref": {"rollout": {"name": "vllm"}},
        "trainer": {"nnodes": 1, "n_gpus_per_node": 8, "device": "cuda"},
    }
    for k, v in over.items():
        node = cfg
        *parents, leaf = k.split("__")
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = v
    return cfg


def _rules(findings) -> list[str]:
    return sorted(f.rule for f in findings)


def test_a_gpu_node_with_everything_installed_passes():
    assert launch_findings(_cfg(), gpus=GpuInfo(8, "t"), installed=lambda m: True) == []


def test_no_gpu_says_what_verl_needs_and_that_native_runs_here():
    (f,) = launch_findings(_cfg(), gpus=GpuInfo(0, "t"), installed=lambda m: True)
    assert f.rule == "FC850" and f.severity == "error"
    assert "CUDA GPUs" in f.message and "vllm or sglang" in f.message and "launcher=native" in f.fix


def test_too_few_gpus_on_one_node():
    (f,) = launch_findings(_cfg(), gpus=GpuInfo(2, "t"), installed=lambda m: True)
    assert f.rule == "FC851" and "trainer.n_gpus_per_node=2" in f.fix
    # several nodes: this machine is one of them, Ray places the rest
    assert launch_findings(_cfg(trainer__nnodes=2), gpus=GpuInfo(2, "t"), installed=lambda m: True) == []


def test_attaching_to_a_ray_cluster_skips_the_local_gpu_count():
    cfg = _cfg(ray_kwargs__ray_init__address="ray://head:10001")
    assert launch_findings(cfg, gpus=GpuInfo(0, "t"), installed=lambda m: True) == []


def test_missing_verl_and_rollout_engine():
    got = launch_findings(_cfg(), gpus=GpuInfo(8, "t"), installed=lambda m: m not in ("verl", "vllm"))
    assert _rules(got) == ["FC852", "FC853"]
    sg = launch_findings(
        _cfg(actor_rollout_ref__rollout__name="sglang"), gpus=GpuInfo(8, "t"), installed=lambda m: m != "sglang"
    )
    assert _rules(sg) == ["FC853"] and "`sglang` package" in sg[0].message


def test_sft_needs_no_rollout_engine():
    cfg = _cfg(fsdpcfg__kind="sft")
    assert launch_findings(cfg, gpus=GpuInfo(8, "t"), installed=lambda m: m != "vllm") == []


def test_detect_gpus_reads_nvidia_smi_and_cuda_visible_devices(tmp_path, monkeypatch):
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    smi = bin_ / "nvidia-smi"
    smi.write_text("#!/bin/sh\n" + "".join(f"echo 'GPU {i}: NVIDIA H100 (UUID: GPU-{i})'\n" for i in range(4)))
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_}{os.pathsep}{os.environ['PATH']}")
    assert detect_gpus({}) == GpuInfo(4, "nvidia-smi -L")
    assert detect_gpus({"CUDA_VISIBLE_DEVICES": "0,2"}).count == 2
    assert detect_gpus({"CUDA_VISIBLE_DEVICES": ""}).count == 0
    assert detect_gpus({"CUDA_VISIBLE_DEVICES": "-1"}).count == 0


def test_detect_gpus_without_a_driver(monkeypatch):
    monkeypatch.setattr(machine.shutil, "which", lambda name: None)
    monkeypatch.setattr(machine, "Path", lambda p: Path("/nonexistent/fsdpcfg-test"))
    assert detect_gpus({"CUDA_VISIBLE_DEVICES": "0,1"}).count == 0  # the variable alone is no GPU


@pytest.mark.slow  # end to end: a fresh Python process
@pytest.mark.skipif(detect_gpus().count > 0, reason="this machine has a GPU: the CPU fail-fast path does not apply")
def test_cli_gpu_config_on_this_cpu_machine_fails_before_ray():
    """The real command, end to end: fsdpcfg's check passes, then the launch step stops (no verl import)."""
    argv = [
        sys.executable,
        "-m",
        "fsdpcfg",
        "+recipe=qwen_grpo",
        "launcher=verl",
        "rollout=vllm",
        "trainer=gpu_1x",
        "actor_rollout_ref.rollout.tensor_model_parallel_size=1",
        "fsdpcfg.run_dir=" + str(REPO / "runs" / "t"),
    ]
    run = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, timeout=120)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "[FC850]" in run.stderr and "launcher=native runs here" in run.stderr
    assert "Traceback" not in run.stderr and "ray init" not in run.stdout


@pytest.mark.slow  # end to end: a fresh Python process
def test_cli_recipe_as_is_with_verl_fails_in_the_check():
    """`python -m fsdpcfg +recipe=qwen_grpo launcher=verl`: the recipe's CPU trainer and hf rollout are errors
    that say verl needs CUDA and a rollout engine, and that launcher=native runs on CPU."""
    run = subprocess.run(
        [sys.executable, "-m", "fsdpcfg", "+recipe=qwen_grpo", "launcher=verl"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert run.returncode == 1
    assert "launcher=native" in run.stderr and "vllm" in run.stderr and "nothing was started" in run.stderr
    if detect_gpus().count == 0:
        assert "[FC850]" in run.stderr and "CUDA GPUs" in run.stderr
