"""An installed (non-editable) fsdpcfg carries conf/ and recipes/ (setup.py copies them into fsdpcfg/_tree),
and `fsdpcfg check` works from it; the pre-commit hook runs against a scratch repository."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
GOOD = "# @package _global_\ndefaults:\n  - qwen_grpo\n  - _self_\ndata:\n  train_batch_size: 8\n"
BAD = (
    "# @package _global_\ndefaults:\n  - qwen_grpo\n  - _self_\nactor_rollout_ref:\n  actor:\n    strategy: fsdp3\n"
    "    ppo_micro_batch_size_pergpu: 2\n"
)


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


@pytest.mark.slow
def test_wheel_carries_the_tree_and_check_runs_from_it(tmp_path):
    out = _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path / "whl"),
            str(REPO),
        ],
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    [wheel] = list((tmp_path / "whl").glob("fsdpcfg-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {
        "fsdpcfg/_tree/conf/config.yaml",
        "fsdpcfg/_tree/conf/recipe/qwen_grpo.yaml",
        "fsdpcfg/_tree/recipes/qwen_grpo.yaml",
        "fsdpcfg/_tree/conf/rollout/hf.yaml",
    } <= names
    target = tmp_path / "site"
    out = _run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)], timeout=300
    )
    assert out.returncode == 0, out.stderr
    (tmp_path / "mine.yaml").write_text(BAD)
    env = dict(os.environ, PYTHONPATH=str(target))
    probe = (
        "import sys, fsdpcfg; from fsdpcfg import paths; print(fsdpcfg.__file__); print(paths.conf_dir()); "
        "from fsdpcfg.cli.main import main; sys.exit(main(['check', '--no-plan', 'mine.yaml']))"
    )
    out = _run([sys.executable, "-c", probe], cwd=tmp_path, env=env, timeout=120)
    lines = out.stdout.splitlines()
    assert lines[0].startswith(str(target)), "the installed copy, not the checkout, must be imported"
    assert lines[1] == str(target / "fsdpcfg" / "_tree" / "conf")
    assert out.returncode == 1 and "FC103" in out.stdout and "FC101" in out.stdout, out.stdout + out.stderr


def _snapshot_repo(dest: Path) -> str:
    """Copy the working tree (tracked and untracked, not ignored) into a fresh git repo; return its commit."""
    files = _run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO, check=True).stdout.split("\0")
    for f in filter(None, files):
        src = REPO / f
        if src.is_file() or src.is_symlink():
            (dest / f).parent.mkdir(parents=True, exist_ok=True)
            if src.is_symlink():
                os.symlink(os.readlink(src), dest / f)
            else:
                shutil.copy2(src, dest / f)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    _run(["git", "init", "-q"], cwd=dest, check=True)
    _run(["git", "add", "-A"], cwd=dest, check=True)
    _run(git + ["commit", "-q", "-m", "snapshot"], cwd=dest, check=True)
    return _run(["git", "rev-parse", "HEAD"], cwd=dest, check=True).stdout.strip()


@pytest.mark.slow
def test_pre_commit_hook_on_a_scratch_repo(tmp_path):
    """Needs PyPI (pre-commit builds the hook's environment with pip); no other network."""
    pytest.importorskip("pre_commit")
    hook_repo = tmp_path / "fsdpcfg-hook"
    hook_repo.mkdir()
    rev = _snapshot_repo(hook_repo)
    user = tmp_path / "user"
    (user / "recipes").mkdir(parents=True)
    (user / "recipes" / "good.yaml").write_text(GOOD)
    (user / "recipes" / "bad.yaml").write_text(BAD)
    (user / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {hook_repo}\n    rev: {rev}\n    hooks:\n      - id: fsdpcfg-check\n"
        "        files: ^recipes/\n"
    )
    _run(["git", "init", "-q"], cwd=user, check=True)
    _run(["git", "add", "-A"], cwd=user, check=True)
    env = dict(os.environ, PRE_COMMIT_HOME=str(tmp_path / "pc-home"))
    env.pop("VIRTUAL_ENV", None)
    pc = [sys.executable, "-m", "pre_commit"]
    good = _run(pc + ["run", "--files", "recipes/good.yaml"], cwd=user, env=env, timeout=900)
    assert good.returncode == 0, good.stdout + good.stderr
    assert "fsdpcfg check" in good.stdout and "Passed" in good.stdout
    both = _run(pc + ["run", "--all-files"], cwd=user, env=env, timeout=600)
    assert both.returncode == 1, both.stdout + both.stderr
    assert "Failed" in both.stdout and "FC103" in both.stdout and "recipes/bad.yaml" in both.stdout
    assert "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu" in both.stdout
