"""FC690 and ``${fsdpcfg_latest:ROOT}``: a run that starts from another run's newest complete checkpoint
(the SFT -> GRPO chain of recipes/arith_sft.yaml and recipes/arith_grpo_sft.yaml)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fsdpcfg.check import check_overrides
from fsdpcfg.compose import compose
from fsdpcfg.compose.resolvers import NO_CHECKPOINT_YET, latest_checkpoint
from fsdpcfg.errors import ConfigError
from fsdpcfg.launch.preflight import preflight

TINY = Path.home() / ".cache" / "fsdpcfg" / "models" / "tiny-qwen2"


def _checkpoint(root: Path, step: int, *, complete: bool = True, hf_subfolder: bool = False) -> Path:
    """A global_step_N folder in the layout of fsdpcfg.train.checkpoint: files, then MANIFEST.json listing them."""
    folder = root / f"global_step_{step}"
    model = folder / "huggingface" if hf_subfolder else folder
    model.mkdir(parents=True)
    (model / "config.json").write_text(json.dumps({"model_type": "qwen2"}))
    files = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    if complete:
        sizes = {f: (folder / f).stat().st_size for f in files}
        (folder / "MANIFEST.json").write_text(json.dumps({"step": step, "files": files, "sizes": sizes}))
    return folder


def test_latest_is_the_newest_complete_checkpoint(tmp_path):
    root = tmp_path / "ckpt"
    assert latest_checkpoint(str(root)) == str(root / NO_CHECKPOINT_YET)  # no folder at all
    _checkpoint(root, 2)
    _checkpoint(root, 10)
    _checkpoint(root, 12, complete=False)  # killed during its save: no manifest
    (root / "global_step_20.tmp").mkdir()
    assert latest_checkpoint(str(root)) == str(root / "global_step_10")  # 10 > 2 numerically, 12 incomplete
    _checkpoint(root, 30, hf_subfolder=True)  # verl's layout: the HF export in huggingface/
    assert latest_checkpoint(str(root)) == str(root / "global_step_30" / "huggingface")


def test_relative_root_is_from_the_current_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _checkpoint(tmp_path / "checkpoints" / "fsdpcfg" / "arith_sft", 5)
    cfg = compose(["+recipe=arith_grpo_sft"]).to_container(resolve=True)
    assert cfg["actor_rollout_ref"]["model"]["path"] == str(tmp_path / "checkpoints/fsdpcfg/arith_sft/global_step_5")


def test_check_before_the_first_run_only_says_what_to_run_first(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no checkpoints/ here
    findings = check_overrides(["+recipe=arith_grpo_sft"])
    assert [(f.rule, f.severity) for f in findings if f.severity != "info"] == [("FC690", "warning")]
    assert not [f for f in findings if f.rule in ("FC106", "FC400")]  # no "model not found" beside it
    (f,) = [f for f in findings if f.rule == "FC690"]
    assert f.keys == ["actor_rollout_ref.model.path"]
    assert "python -m fsdpcfg +recipe=arith_sft" in f.fix
    assert str(tmp_path / "checkpoints/fsdpcfg/arith_sft") in f.message


def test_launch_refuses_with_the_command_to_run_first(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cfg = compose(["+recipe=arith_grpo_sft"]).to_container(resolve=True)
    with pytest.raises(ConfigError) as e:
        preflight(cfg, None)  # the first refusal of the pre-launch step, under either launcher
    assert e.value.key == "actor_rollout_ref.model.path"
    assert "+recipe=arith_sft" in e.value.fix and "FC690" in e.value.message


@pytest.mark.skipif(not (TINY / "config.json").is_file(), reason="needs the tiny-qwen2 asset")
def test_check_after_the_first_run_reads_the_checkpoint(tmp_path, monkeypatch):
    import shutil

    monkeypatch.chdir(tmp_path)
    root = tmp_path / "checkpoints" / "fsdpcfg" / "arith_sft"
    shutil.copytree(TINY, root / "global_step_3")
    step = root / "global_step_3"
    files = sorted(str(p.relative_to(step)) for p in step.rglob("*") if p.is_file())
    (root / "global_step_3" / "MANIFEST.json").write_text(json.dumps({"step": 3, "files": files}))
    findings = check_overrides(["+recipe=arith_grpo_sft"])
    assert not [f for f in findings if f.severity != "info"], findings
    assert not [f for f in findings if f.rule in ("FC690", "FC106", "FC400")]


@pytest.mark.slow  # end to end: a fresh Python process
def test_run_command_refuses_before_writing_anything(tmp_path):
    """`python -m fsdpcfg +recipe=arith_grpo_sft` before the SFT: exit 1, FC690's message and fix, no traceback,
    no run folder."""
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "fsdpcfg", "+recipe=arith_grpo_sft"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "[FC690]" in proc.stderr and "run python -m fsdpcfg +recipe=arith_sft first" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "runs").exists() and not (tmp_path / "checkpoints").exists()
