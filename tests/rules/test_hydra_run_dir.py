"""FC741: ``hydra.run.dir`` moves nothing in a run fsdpcfg starts; its folder is ``fsdpcfg.run_dir`` (issue 23
item 5). The composition names that folder as Hydra's run dir, so ``--cfg hydra`` shows what the run uses."""

from __future__ import annotations

import subprocess
import sys

import pytest
from rule_helpers import REPO, run

from fsdpcfg.check import check_config
from fsdpcfg.compose import compose
from fsdpcfg.rules.hydra_run_dir import hydra_run_dir


def test_hydra_run_dir_on_the_command_line_is_refused_naming_fsdpcfg_run_dir():
    (f,) = run(hydra_run_dir, "hydra.run.dir=/tmp/elsewhere")
    assert (f.rule, f.severity, f.keys) == ("FC741", "error", ["hydra.run.dir", "fsdpcfg.run_dir"])
    assert f.message.startswith("hydra.run.dir = /tmp/elsewhere: fsdpcfg writes the run folder at fsdpcfg.run_dir ")
    assert "(runs/fsdpcfg/qwen_grpo)" in f.message
    assert f.fix == "set fsdpcfg.run_dir=/tmp/elsewhere instead (hydra.run.dir follows it)"
    assert f.provenance == {"hydra.run.dir": "command line (hydra.run.dir=/tmp/elsewhere)"}


def test_silent_by_default_and_when_only_fsdpcfg_run_dir_moves():
    assert not run(hydra_run_dir)
    assert not run(hydra_run_dir, "fsdpcfg.run_dir=/tmp/mine")


def test_sft_tree_too_and_check_fails_on_it():
    composed = compose(["+recipe=qwen_sft", "hydra.run.dir=/tmp/x"])
    assert [f.rule for f in check_config(composed) if f.severity == "error"] == ["FC741"]
    assert not [f for f in check_config(compose(["+recipe=qwen_sft"])) if f.rule == "FC741"]


@pytest.mark.slow  # end to end: a fresh Python process
def test_cfg_hydra_shows_the_run_folder():
    out = subprocess.run(
        [sys.executable, "-m", "fsdpcfg", "+recipe=qwen_grpo", "--cfg", "hydra"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    assert "  run:\n    dir: ${fsdpcfg.run_dir}\n" in out
