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

# one worker builds the module's shared fixture (tests/conftest.py)
pytestmark = pytest.mark.xdist_group("packaging_wheel")

REPO = Path(__file__).resolve().parents[2]
GOOD = "# @package _global_\ndefaults:\n  - qwen_grpo\n  - _self_\ndata:\n  train_batch_size: 8\n"
BAD = (
    "# @package _global_\ndefaults:\n  - qwen_grpo\n  - _self_\nactor_rollout_ref:\n  actor:\n    strategy: fsdp3\n"
    "    ppo_micro_batch_size_pergpu: 2\n"
)


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def _build_wheel(dest: Path) -> Path:
    """``pip wheel`` of the checkout into ``dest``; returns the wheel."""
    out = _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(dest), str(REPO)],
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    [wheel] = list(dest.glob("fsdpcfg-*.whl"))
    return wheel


@pytest.fixture(scope="session")
def wheel(tmp_path_factory, request) -> Path:
    """The checkout's wheel, built once per test session (~10 s) and shared by the tests that install it; each
    installs it into a folder of its own, so none sees another's installation. Under pytest-xdist the workers share
    it too: the first to need it builds it under a file lock in the session's common temporary folder, the others
    wait for it and read it (two ``pip wheel`` runs of one checkout at once would also share its ``build/`` folder).
    """
    if not hasattr(request.config, "workerinput"):  # no xdist worker: this session's own folder
        return _build_wheel(tmp_path_factory.mktemp("whl"))
    from filelock import FileLock

    shared = tmp_path_factory.getbasetemp().parent  # pytest-N/, this session's, above each worker's popen-gwK/
    with FileLock(str(shared / "fsdpcfg-wheel.lock")):
        built = list((shared / "fsdpcfg-wheel").glob("fsdpcfg-*.whl"))
        return built[0] if built else _build_wheel(shared / "fsdpcfg-wheel")


@pytest.mark.slow
def test_wheel_carries_the_tree_and_check_runs_from_it(tmp_path, wheel):
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


def _site_packages(python: Path) -> Path:
    out = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], check=True)
    return Path(out.stdout.strip())


@pytest.mark.slow
def test_installed_wheel_works_from_an_empty_folder(tmp_path, wheel):
    """A wheel installed into a fresh virtual environment (its dependencies reused from this one, no network) runs
    ``fsdpcfg check +recipe=qwen_grpo``, ``fsdpcfg ls`` and ``fsdpcfg schema`` from an empty folder, and carries
    the JSON Schema files (``fsdpcfg/_tree/schemas``) equal to the checkout's."""
    shipped = {n for n in zipfile.ZipFile(wheel).namelist() if n.startswith("fsdpcfg/_tree/schemas/")}
    assert shipped == {f"fsdpcfg/_tree/schemas/{p.name}" for p in (REPO / "schemas").glob("*.json")}
    assert len(shipped) == 4

    # no PYTHONPATH (a checkout on it would be "already installed"), no cache or config of this machine's user
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["HOME"] = str(tmp_path / "home")
    venv = tmp_path / "venv"
    out = _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    python = venv / "bin" / "python"
    out = _run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "-q", str(wheel)],
        env=env,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    # then this environment's packages, after the venv's own (a path in a .pth file is appended to sys.path; the
    # .pth files there are not run, so the checkout's editable install stays out). Written after the install, so
    # that pip sees a bare environment and never this one's fsdpcfg.
    (_site_packages(python) / "zz_reuse.pth").write_text(f"{_site_packages(Path(sys.executable))}\n")

    empty = tmp_path / "empty"
    empty.mkdir()

    def fsdpcfg(*args: str) -> subprocess.CompletedProcess:
        return _run([str(venv / "bin" / "fsdpcfg"), *args], cwd=empty, env=env, timeout=300)

    where = _run([str(python), "-c", "import fsdpcfg; print(fsdpcfg.__file__)"], cwd=empty, env=env, timeout=60)
    assert where.stdout.strip() == str(_site_packages(python) / "fsdpcfg" / "__init__.py"), where.stderr

    check = fsdpcfg("check", "+recipe=qwen_grpo")
    assert check.returncode == 0 and "check passes (0 errors" in check.stdout, check.stdout + check.stderr
    ls = fsdpcfg("ls")
    assert ls.returncode == 0, ls.stderr
    assert "qwen_grpo" in ls.stdout and "qwen_sft" in ls.stdout and "launcher (ppo)" in ls.stdout
    assert fsdpcfg("schema", "--check").returncode == 1  # ./schemas does not exist yet: stale
    made = fsdpcfg("schema")
    assert made.returncode == 0, made.stdout + made.stderr
    written = sorted(p.name for p in (empty / "schemas").glob("*.json"))
    assert written == sorted(p.name for p in (REPO / "schemas").glob("*.json"))
    for name in written:
        assert (empty / "schemas" / name).read_text() == (REPO / "schemas" / name).read_text(), name
    assert fsdpcfg("schema", "--check").returncode == 0
    assert sorted(p.name for p in empty.iterdir()) == ["schemas"]  # nothing else written into the folder
