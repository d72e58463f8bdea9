"""Paths (issue 14 item 5): a project or experiment name is one folder name (FC730); nothing is written outside
the run root, even with --dry-run; every writer checks its target stays inside its folder (fsdpcfg.paths.within);
checkpoint pruning deletes only this layout's checkpoints inside the checkpoint root."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import fsdpcfg
from fsdpcfg.check import check_overrides
from fsdpcfg.native.ckpt_layout import prunable
from fsdpcfg.paths import PathEscape, atomic_write_text, component_problem, within

CODE = str(Path(fsdpcfg.__file__).resolve().parents[1])  # the fsdpcfg under test, for a subprocess run elsewhere


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else b"<dir>") for p in sorted(root.rglob("*"))}


@pytest.mark.parametrize(
    "override",
    [
        "trainer.project_name=..",
        "trainer.experiment_name=../../x",
        "trainer.experiment_name=a/b",
        "trainer.experiment_name=.",
        "trainer.project_name=-rf",
        "trainer.experiment_name=''",
        "trainer.experiment_name=" + "x" * 256,
    ],
)
@pytest.mark.parametrize("recipe", ["qwen_grpo", "qwen_sft"])
def test_names_that_are_not_one_folder_are_fc730(override, recipe):
    findings = [f for f in check_overrides([f"+recipe={recipe}", override]) if f.rule == "FC730"]
    assert len(findings) == 1 and findings[0].severity == "error"
    assert findings[0].keys == [override.split("=")[0]]


@pytest.mark.parametrize("name", ["qwen_grpo", "run-1", "v1.2", "exp 3", "ünïcode"])
def test_plain_names_pass(name):
    assert component_problem(name) is None
    assert not [
        f for f in check_overrides(["+recipe=qwen_grpo", f"trainer.experiment_name='{name}'"]) if f.rule == "FC730"
    ]


@pytest.mark.slow  # end to end: a fresh Python process
@pytest.mark.parametrize("flags", [["--dry-run"], []])
def test_traversal_names_write_nothing_anywhere(tmp_path, flags):
    """Run from tmp/a/b/c with the run folders at their defaults (runs/..., checkpoints/...): a traversal name
    is refused and no file appears or changes anywhere under tmp (the parents the name would climb to)."""
    cwd = tmp_path / "a" / "b" / "c"
    cwd.mkdir(parents=True)
    (tmp_path / "a" / "config.yaml").write_text("user: file\n")  # what ../../x used to overwrite
    before = _tree(tmp_path)
    for override in ["trainer.experiment_name=../../x", "trainer.project_name=..", "trainer.project_name=../../.."]:
        proc = subprocess.run(
            [sys.executable, "-m", "fsdpcfg", "+recipe=qwen_grpo", override, *flags],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "PYTHONPATH": CODE},
        )
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert "FC730" in proc.stderr and "Traceback" not in proc.stderr
        assert _tree(tmp_path) == before, override


def test_within_refuses_paths_that_leave_their_root(tmp_path):
    root = tmp_path / "run"
    root.mkdir()
    assert within(root, "config.yaml") == root / "config.yaml"
    assert within(root, "a", "b.json") == root / "a" / "b.json"
    for bad in ["../x", "/etc/passwd", "a/../../x"]:
        with pytest.raises(PathEscape, match="outside"):
            within(root, bad)
    (root / "out").symlink_to(tmp_path)  # a link that leads out
    with pytest.raises(PathEscape):
        within(root, "out", "config.yaml")
    link_root = tmp_path / "link"  # the root itself may be a link
    link_root.symlink_to(root)
    assert within(link_root, "x") == link_root / "x"
    with pytest.raises(PathEscape):
        atomic_write_text(tmp_path / "elsewhere.txt", "x", root=root)
    assert not (tmp_path / "elsewhere.txt").exists()


def _ckpt(root: Path, name: str, step: int | None) -> Path:
    d = root / name
    d.mkdir(parents=True)
    (d / "model.safetensors").write_bytes(b"x" * 10)
    if step is not None:
        (d / "MANIFEST.json").write_text(
            json.dumps(
                {"step": step, "world_size": 2, "files": ["model.safetensors"], "sizes": {"model.safetensors": 10}}
            )
        )
    return d


def test_pruning_deletes_only_its_own_checkpoints_inside_the_root(tmp_path):
    root = tmp_path / "ckpt"
    own = [_ckpt(root, f"global_step_{i}", i) for i in (1, 2, 3)]
    _ckpt(root, "global_step_0", 7)  # a manifest that names another step: not ours
    _ckpt(root, "global_step_x", 1)  # not a step number
    _ckpt(root, "other_tool", 1)
    _ckpt(root, "global_step_9", None)  # no manifest (a save in progress)
    outside = _ckpt(tmp_path / "precious", "global_step_4", 4)
    (root / "global_step_5").symlink_to(outside)  # a link to a checkpoint elsewhere
    assert prunable(root, keep=1) == own[:2]
    assert prunable(root, keep=5) == [] and prunable(root, keep=0) == []


@pytest.mark.parametrize("recipe", ["qwen_grpo", "qwen_sft"])
def test_a_saved_config_keeps_its_folders_as_given_so_a_new_experiment_is_a_new_run(tmp_path, monkeypatch, recipe):
    """A run's config.yaml holds the run and checkpoint folders resolved and absolute (the ranks read them so):
    started again from it with another ``trainer.experiment_name`` it resumed the first run's checkpoints and wrote
    into its folder (issue 23 item 5). The file now records both as they were given (comments the ranks do not
    read), and a run from it takes them so; a folder set on the command line still wins."""
    from fsdpcfg.cli.main import main
    from fsdpcfg.compose import compose
    from fsdpcfg.compose.config_file import given_values

    monkeypatch.chdir(tmp_path)
    assert main([f"+recipe={recipe}", "--dry-run"]) == 0
    saved = tmp_path / "runs" / "fsdpcfg" / recipe / "config.yaml"
    assert given_values(saved.read_text()) == {
        "fsdpcfg.run_dir": "runs/${trainer.project_name}/${trainer.experiment_name}",
        "trainer.default_local_dir": "checkpoints/${trainer.project_name}/${trainer.experiment_name}",
    }
    assert f"default_local_dir: {tmp_path}/checkpoints/fsdpcfg/{recipe}\n" in saved.read_text()  # for the ranks
    again = compose([f"+recipe={saved}", "trainer.experiment_name=rerun"])
    cfg = again.to_container()
    assert cfg["fsdpcfg"]["run_dir"] == "runs/fsdpcfg/rerun"
    assert cfg["trainer"]["default_local_dir"] == "checkpoints/fsdpcfg/rerun"
    src = again.provenance.source_of("fsdpcfg.run_dir")
    assert src.kind == "recipe" and src.where == f"{saved}:1 (as its run was given it)"
    mine = compose([f"+recipe={saved}", f"fsdpcfg.run_dir={tmp_path / 'mine'}"]).to_container()
    assert mine["fsdpcfg"]["run_dir"] == str(tmp_path / "mine")
    assert mine["trainer"]["default_local_dir"] == f"checkpoints/fsdpcfg/{recipe}"  # the same run resumes
    assert main([f"+recipe={saved}", "trainer.experiment_name=rerun", "--dry-run"]) == 0
    assert (tmp_path / "runs" / "fsdpcfg" / "rerun" / "config.yaml").is_file()
