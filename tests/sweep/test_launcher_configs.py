"""Hydra's launcher plugins compose over fsdpcfg's tree: basic, joblib, submitit (Slurm; no Slurm here, so the
launcher is only instantiated), fsdpcfg's own fsdpcfg_slurm option, and clear errors for unknown ones."""

from __future__ import annotations

import pytest

from fsdpcfg.errors import ConfigError
from fsdpcfg.sweep._hydra import HydraLaunch

POINT = ["+recipe=qwen_grpo"]


def test_basic_is_the_default(tmp_path):
    hl = HydraLaunch("ppo", [f"hydra.sweep.dir={tmp_path}"], POINT)
    assert hl.launcher_target.endswith("BasicLauncher") and hl.sweep_dir == str(tmp_path)


def test_joblib_composes_with_n_jobs(tmp_path):
    hl = HydraLaunch("ppo", ["hydra/launcher=joblib", "hydra.launcher.n_jobs=2", f"hydra.sweep.dir={tmp_path}"], POINT)
    assert hl.launcher_target.endswith("JoblibLauncher") and hl.cfg.hydra.launcher.n_jobs == 2
    assert type(hl.instantiate(lambda cfg: None)).__name__ == "JoblibLauncher"


def test_submitit_slurm_and_fsdpcfg_slurm_compose(tmp_path):
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    hl = HydraLaunch(
        "ppo",
        ["hydra/launcher=fsdpcfg_slurm", "hydra.launcher.partition=gpu", f"hydra.sweep.dir={tmp_path}"],
        [*POINT, "trainer=gpu_8x"],
    )
    launcher = hl.cfg.hydra.launcher
    assert hl.launcher_target.endswith("SlurmLauncher")
    assert launcher.gpus_per_node == 8 and launcher.tasks_per_node == 1 and launcher.partition == "gpu"
    assert launcher.name == "fsdpcfg-qwen_grpo" and launcher.submitit_folder.startswith(str(tmp_path))
    assert type(hl.instantiate(lambda cfg: None)).__name__ == "SlurmLauncher"
    plain = HydraLaunch("ppo", ["hydra/launcher=submitit_slurm", f"hydra.sweep.dir={tmp_path}"], POINT)
    assert plain.launcher_target.endswith("SlurmLauncher")


def test_unknown_launcher_and_bad_setting_are_config_errors():
    with pytest.raises(ConfigError, match="did you mean hydra/launcher=joblib"):
        HydraLaunch("ppo", ["hydra/launcher=joblb"], POINT)
    with pytest.raises(ConfigError, match="hydra.launcher.njobs"):
        HydraLaunch("ppo", ["hydra/launcher=joblib", "hydra.launcher.njobs=2"], POINT)
