"""The pre-commit hooks of ``.pre-commit-hooks.yaml``, run by real ``pre-commit`` on a scratch repository that
holds what a training repository holds: a GitHub workflow, a docker-compose file, Kubernetes manifests, a Helm
template, a Hydra project's own configs, a verl fork's config fragments, build scripts, a good recipe and a bad
one. Only the bad recipe may fail, with its finding in the output.

Offline: the hooks' ``language: python`` makes pre-commit build a virtualenv and ``pip install`` this
repository from PyPI's index, which this machine cannot reach (``try-repo`` does the same). The test therefore
copies each hook of ``.pre-commit-hooks.yaml`` as it is (``id``, ``entry``, ``files``, ``exclude``, ``types``,
``require_serial``) into a ``repo: local`` config with ``language: system``, which runs the entry from ``PATH``
(this venv's ``fsdpcfg``, reading this checkout through ``PYTHONPATH``). What is tested is what a user gets: the
manifest's file patterns and arguments, pre-commit's own file selection and batching, and the command's exit
codes; only the installation step differs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
PRE_COMMIT = shutil.which("pre-commit") or str(Path(sys.executable).with_name("pre-commit"))

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not Path(PRE_COMMIT).exists(), reason="pre-commit is not installed")]

GOOD = "# @package _global_\ndefaults:\n  - qwen_grpo\n  - _self_\ndata:\n  train_batch_size: 8\n"
BAD = "# @package _global_\ndefaults:\n  - qwen_grpo\n  - _self_\nactor_rollout_ref:\n  actor:\n    strategy: fsdp3\n"
UNRELATED = {
    ".github/workflows/ci.yml": "name: ci\non: [push, pull_request]\njobs:\n  test:\n    runs-on: ubuntu-latest\n"
    "    steps:\n      - uses: actions/checkout@v4\n      - run: pytest\n",
    "docker-compose.yml": "services:\n  trainer:\n    image: verl:latest\n    volumes: [./data:/data]\n",
    # a k8s manifest whose name matches the *config* pattern: handed to the hook, skipped by the command (FC130)
    "deploy/trainer-configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: trainer\n"
    "data:\n  MODEL: qwen\n---\napiVersion: v1\nkind: Service\nmetadata:\n"
    "  name: trainer\n",
    # a Kubernetes manifest elsewhere: not handed to the hook at all
    "deploy/job.yaml": "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: train\nspec:\n  template: {}\n",
    # a Helm template (not plain YAML) under a config folder
    "configs/helm/deployment.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n"
    '  name: {{ .Release.Name }}\n  labels: {{- include "x" . | nindent 4 }}\n',
    # a Hydra project's own tree (lightning-hydra-template style): a root whose defaults name its own groups, and
    # an object node with _target_; and fsdpcfg-like group fragments under conf/ (excluded by the pattern)
    "configs/train.yaml": "defaults:\n  - data: mnist\n  - model: mnist\n  - _self_\ntask_name: train\nseed: 1\n",
    "configs/model/mnist.yaml": "_target_: src.models.MNISTModule\nlr: 0.001\nnet:\n  hidden: 64\n",
    "conf/engine/fsdp.yaml": "# @package _global_\nactor_rollout_ref:\n  actor:\n    strategy: fsdp\n",
    # a verl fork's own config fragments (excluded by the pattern)
    "verl/trainer/config/actor/dp_actor.yaml": "defaults:\n  - ../optim@optim: fsdp\n  - actor\n  - _self_\n"
    "strategy: fsdp\nppo_micro_batch_size: null\n",
    # and a template of another verl entry point in the package (verl/experimental/*/config/): its `???` values
    # and its own sections are filled by that entry point, so it is no run config
    "verl/experimental/async_policy/config/async_ppo_trainer.yaml": "hydra:\n  searchpath:\n"
    "    - file://verl/trainer/config\ndefaults:\n  - ppo_trainer\n  - _self_\nasync_training:\n  staleness: 1\n"
    "actor_rollout_ref:\n  rollout:\n    name: ???\n",
    "scripts/build.sh": "#!/usr/bin/env bash\nset -e\npip install -e .\npytest -q\n",
    "scripts/download.sh": "#!/bin/bash\nhuggingface-cli download Qwen/Qwen2.5-0.5B-Instruct\n",
}


def _local_config() -> str:
    """``.pre-commit-config.yaml`` running this repository's hooks as they are, as ``language: system``."""
    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    local = []
    for h in hooks:
        assert h["language"] == "python"  # what a user's pre-commit installs; replaced here (see the docstring)
        local.append({**h, "language": "system"})
    return yaml.safe_dump({"repos": [{"repo": "local", "hooks": local}]}, sort_keys=False)


def _scratch_repo(root: Path, with_bad: bool) -> Path:
    for rel, text in {
        **UNRELATED,
        "recipes/good_grpo.yaml": GOOD,
        **({"recipes/bad_grpo.yaml": BAD} if with_bad else {}),
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / ".pre-commit-config.yaml").write_text(_local_config())
    env = _env(root)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True, env=env)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True, env=env)
    return root


def _env(root: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "PRE_COMMIT_HOME": str(root.parent / "pre-commit-home"),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        "PIP_NO_INDEX": "1",
    }


def _run(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [PRE_COMMIT, "run", "--all-files", "--verbose", "--color", "never"],
        cwd=root,
        env=_env(root),
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_unrelated_files_pass_and_only_the_bad_recipe_fails(tmp_path: Path):
    good = _run(_scratch_repo(tmp_path / "good", with_bad=False))
    assert good.returncode == 0, good.stdout + good.stderr
    out = good.stdout
    # the files the patterns select reach the hooks; the skip infos say why the unrelated ones pass
    assert "recipes/good_grpo.yaml: passes" in out
    assert "deploy/trainer-configmap.yaml: skipped, not a fsdpcfg or verl config: it holds 2 YAML documents" in out
    assert "configs/helm/deployment.yaml: skipped, not a fsdpcfg or verl config: it is not plain YAML" in out
    assert "scripts/build.sh: skipped, not a verl run script" in out
    assert "scripts/download.sh: skipped, not a verl run script" in out
    assert "configs/train.yaml: skipped" in out and "configs/model/mnist.yaml: skipped" in out
    # the default patterns never hand these to the hooks
    for rel in (
        ".github/workflows/ci.yml",
        "docker-compose.yml",
        "deploy/job.yaml",
        ".pre-commit-config.yaml",
        "conf/engine/fsdp.yaml",
        "verl/trainer/config/actor/dp_actor.yaml",
        "verl/experimental/async_policy/config/async_ppo_trainer.yaml",
    ):
        assert rel not in out, rel

    bad = _run(_scratch_repo(tmp_path / "bad", with_bad=True))
    assert bad.returncode == 1, bad.stdout + bad.stderr
    out = bad.stdout
    hooks = {
        line.split(".")[0].strip(): line.rsplit(".", 1)[-1].strip()
        for line in out.splitlines()
        if line.startswith("fsdpcfg check") and line.rstrip().endswith(("Passed", "Failed"))
    }
    assert hooks == {"fsdpcfg check": "Failed", "fsdpcfg check (verl run scripts)": "Passed"}, out
    assert "recipes/bad_grpo.yaml: fails (1 error" in out
    assert "FC103" in out and "'fsdp3' is not one of fsdp, fsdp2" in out
    assert "recipes/good_grpo.yaml: passes" in out
