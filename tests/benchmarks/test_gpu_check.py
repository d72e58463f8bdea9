"""scripts/gpu_check.sh's preparation and plan, on the CPU, so the GPU check cannot rot before a GPU is lent:
the wheel folder (built with pip for CPython 3.12 when PyPI is reachable), the exact commands of --dry-run
(every script, subcommand and pip flag exists), the GRPO and doctor overrides compose and pass `fsdpcfg check`
with trainer=gpu_1x, the 0.5B asset is the real architecture, and (slow) the whole harness on the CPU."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fsdpcfg import assets, paths
from fsdpcfg.check import check_overrides

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "gpu_check.sh"
RUN_CALL = 'run(command="bash scripts/gpu_check.sh $OUT", carry=[".whl"], timeout_s=540)'
REAL_QWEN = paths.data_dir() / "model_configs" / "Qwen__Qwen2.5-0.5B-Instruct__resaved"


def _load():
    spec = importlib.util.spec_from_file_location("gpu_check", ROOT / "benchmarks" / "gpu_check.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


gc = _load()
import gpu_check_report as rep  # noqa: E402 benchmarks/ is on sys.path once gpu_check is loaded


def test_the_run_call_is_written_where_a_later_session_looks():
    for f in (SCRIPT, ROOT / "benchmarks" / "gpu_check.py", ROOT / "benchmarks" / "RESULTS.md"):
        assert RUN_CALL in f.read_text(), f
    assert "Not run yet: no GPU lent" in (ROOT / "benchmarks" / "RESULTS.md").read_text()
    assert "/.whl/" in (ROOT / ".gitignore").read_text().splitlines()  # travels only through carry


def test_prepare_commands_use_flags_pip_has():
    cmds = gc.prepare_commands(Path("/x"))
    download, *wheels = cmds
    assert download[2:4] == ["pip", "download"]
    for flag, value in (("--python-version", "3.12"), ("--platform", "manylinux2014_x86_64"), ("--abi", "cp312")):
        assert download[download.index(flag) + 1] == value
    assert "--only-binary=:all:" in download and download[download.index("-d") + 1] == "/x"
    pip_help = subprocess.run(
        [sys.executable, "-m", "pip", "download", "--help"], capture_output=True, text=True
    ).stdout
    for flag in ("--python-version", "--platform", "--implementation", "--abi", "--only-binary", "--no-deps"):
        assert flag in pip_help, flag
    assert [w[-1].split("==")[0] for w in wheels] == list(gc.SDIST_ONLY)
    pinned = {p.split("==")[0] for p in gc.pinned()}
    assert pinned == set(gc.PACKAGES)
    core = (ROOT / "pyproject.toml").read_text()
    for dep in ("hydra-core", "omegaconf", "pydantic"):
        assert dep in core and dep in pinned


@pytest.mark.slow
def test_wheel_folder_builds_for_python_312(tmp_path):
    """pip download/wheel into a fresh folder (network: skipped with pip's error when PyPI is unreachable)."""
    for cmd in gc.prepare_commands(tmp_path):
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        if p.returncode:
            pytest.skip(f"pip could not fetch (no network?): {p.stderr.strip().splitlines()[-1:]}")
    state = gc.check_wheels(tmp_path)
    assert not state["missing"] and not state["wrong_tag"], state
    assert 0 < state["bytes"] < gc.MAX_WHEEL_BYTES
    assert any("pydantic_core" in f and "cp312" in f and "manylinux" in f for f in state["files"])


def test_dry_run_prints_every_part_with_a_command_that_exists(tmp_path):
    p = subprocess.run(
        ["bash", str(SCRIPT), str(tmp_path / "out"), "--dry-run"], capture_output=True, text=True, cwd=ROOT
    )
    assert p.returncode == 0, p.stderr
    lines = re.findall(r"^\[(\S+)\] timeout (\d+)s: (.+)$", p.stdout, flags=re.MULTILINE)
    assert [n for n, _, _ in lines] == list(gc.PARTS)
    choices = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "gpu_check.py"), "part", "--help"], capture_output=True, text=True
    ).stdout
    for name, limit, cmd in lines:
        argv = cmd.split()
        assert Path(argv[1]).is_file() and argv[2] == "part" and argv[3] in choices, cmd
        assert int(limit) == gc.PARTS[name]
    assert gc.BUDGET_S < 8 * 60  # every part within one budget under 8 minutes
    worker = ROOT / "benchmarks" / "gpu_check_worker.py"  # the GRPO parts' torchrun target
    assert worker.is_file() and '"gpu_check_worker.py"' in (ROOT / "benchmarks" / "gpu_check.py").read_text()
    assert not (tmp_path / "out").exists()  # a dry run writes nothing


def test_grpo_overrides_compose_and_pass_check_with_gpu_1x():
    from fsdpcfg.compose import compose
    from fsdpcfg.estimate.memory import estimate_memory
    from fsdpcfg.plan import make_plan

    for engine in ("fsdp2", "fsdp"):
        ovs = gc.grpo_overrides(engine, REAL_QWEN)
        assert "trainer=gpu_1x" in ovs
        # REAL_QWEN is the real config.json and tokenizer only; the GPU machine builds its weights first (FC421)
        errors = [f for f in check_overrides(ovs) if f.severity == "error" and f.rule != "FC421"]
        assert not errors, [f.message for f in errors]
        cfg = compose(ovs).to_container(resolve=True)
        plan = make_plan(cfg)
        assert (plan.world_size, plan.device, plan.backend, plan.strategy) == (1, "cuda", "nccl", engine)
        assert cfg["actor_rollout_ref"]["actor"]["fsdp_config"]["dtype"] == "bfloat16"
        assert cfg["actor_rollout_ref"]["rollout"]["dtype"] == "bfloat16"
        assert cfg["trainer"]["total_training_steps"] == gc.STEPS
        est = estimate_memory(dict(cfg, fsdpcfg=dict(cfg["fsdpcfg"], device_memory_gb=139.8)))
        assert 1 * 2**30 < est.peak_bytes < 139.8 * 2**30  # the 0.5B run fits the H200 by fsdpcfg's estimate


@pytest.mark.slow  # end to end: a fresh Python process
def test_doctor_overrides_pass_check_with_gpu_1x(tiny_model):
    from fsdpcfg.doctor.matrix import find_conditions

    for m in gc.DOCTOR_MODELS:
        ovs, _, _ = find_conditions(
            ["+recipe=qwen_grpo", "trainer=gpu_1x", f"actor_rollout_ref.model.path={tiny_model(m)}"]
        )
        errors = [f for f in check_overrides(ovs) if f.severity == "error"]
        assert not errors, (m, [f.message for f in errors])


def test_the_gpu_asset_is_the_real_architecture():
    from fsdpcfg.assets import tiny_models
    from fsdpcfg.assets.scale import scale_config
    from fsdpcfg.estimate.param_count import count_parameters

    spec = assets.get_spec(gc.GRPO_MODEL)
    real = tiny_models.real_config(spec)
    scaled = scale_config(real, spec)
    assert {k: v for k, v in scaled.items() if k not in ("torch_dtype", "dtype")} == {
        k: v for k, v in real.items() if k not in ("torch_dtype", "dtype", "_name_or_path")
    }
    assert spec.init_on_accelerator and not spec.default
    assert round(count_parameters(scaled).total / 1e6) == 494


def test_bounds_and_mfu_arithmetic():
    assert rep.logprob_bound(12.0) == pytest.approx(4 * 12 / 128)
    assert rep.logprob_bound(0.1) == pytest.approx(4 / 128)
    assert rep.peak_flops("NVIDIA H200") == 989e12 and rep.peak_flops("Tesla T4") is None
    rec = {
        "device": "NVIDIA H200",
        "phase_peaks": {},
        "max_allocated": 1,
        "probes": [{"sync": 1, "tokens": 3, "max_abs_diff": 0.5, "mean_abs_diff": 0.1, "max_abs_logprob": 12.0}],
        "steps": [
            {"timing_s/step": 2.0, "timing_s/update_actor": 1.0, "timing_s/gen": 0.5, "perf/total_num_tokens": 1000.0}
        ]
        * 3,
    }
    out = rep.summarise(rec, n_params=10**9, estimate={}, check_errors=[], use_ref=True, model="m", warmup=2)
    assert out["mfu"]["step"] == pytest.approx(12e12 / (2.0 * 989e12))  # (6 + 2 + 2 + 2) N per token
    assert out["mfu"]["update"] == pytest.approx(6e12 / 989e12)
    assert out["tokens_per_s"] == 500.0 and out["logprob_probes"][0]["within_bound"] is False


@pytest.mark.slow
@pytest.mark.distributed
@pytest.mark.timeout(1700)
def test_cpu_smoke_runs_every_part_and_writes_three_files(tmp_path):
    """The harness end to end on this CPU (1 gloo rank, tiny-qwen2, 3 steps; the doctor on one model)."""
    out = tmp_path / "out"
    p = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "gpu_check.py"), "run", str(out), "--cpu-smoke"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=1600,
        env={**__import__("os").environ, "GPU_CHECK_WORK": str(tmp_path / "work"), "OMP_NUM_THREADS": "1"},
    )
    assert sorted(f.name for f in out.iterdir()) == ["gpu_check.json", "gpu_check.log", "gpu_check.md"]
    report = json.loads((out / "gpu_check.json").read_text())
    assert p.returncode == 0, {n: r.get("error", "")[-800:] for n, r in report["parts"].items()}
    g = report["parts"]["grpo_fsdp2"]
    assert g["steps"] == 3 and g["tokens_per_step"] > 0 and g["median_s"]["timing_s/step"] > 0
    assert [pr["sync"] for pr in g["logprob_probes"]] == [1, 2]
    assert all(pr["max_abs_diff"] == 0.0 for pr in g["logprob_probes"])  # fp32 on the CPU: identical
    assert report["parts"]["doctor_tiny-qwen2"]["ok"]
    md = (out / "gpu_check.md").read_text()
    assert "| fsdp2 |" in md and "| fsdp |" in md and "| tiny-qwen2 | all stages passed |" in md
