"""Hydra's launcher plugins compose over fsdpcfg's tree: basic, joblib, submitit (Slurm; no Slurm here, so the
launcher is only instantiated), fsdpcfg's own fsdpcfg_slurm option, and clear errors for unknown ones."""

from __future__ import annotations

import pytest

from fsdpcfg.errors import ConfigError
from fsdpcfg.sweep._hydra import HydraLaunch

POINT = ["+recipe=qwen_grpo"]


@pytest.fixture(autouse=True, scope="module")
def _verl_trees_stored():
    """HydraLaunch composes over verl's trees in Hydra's ConfigStore, which a compose stores; a sweep's preflight
    composes every point first. Without this the module failed when run alone (it passed after other modules)."""
    from fsdpcfg.compose import compose

    compose(POINT)


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


def test_an_object_inside_the_launchers_settings_is_refused_and_nothing_is_built(tmp_path):
    """Hydra builds a launcher plugin with a recursive instantiate: a `_target_` among its settings would be imported
    and called, in a dry run too (issue 22 item 1). Planning refuses it."""
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    marker = tmp_path / "opened"
    with pytest.raises(ConfigError, match=r"hydra.launcher.additional_parameters.x._target_='builtins.open'"):
        HydraLaunch(
            "ppo",
            [
                "hydra/launcher=submitit_slurm",
                "+hydra.launcher.additional_parameters.x._target_=builtins.open",
                f"+hydra.launcher.additional_parameters.x.file={marker}",
                "+hydra.launcher.additional_parameters.x.mode=w",
                f"hydra.sweep.dir={tmp_path}/sw",
            ],
            POINT,
        )
    assert not marker.exists() and not (tmp_path / "sw").exists()


def test_planning_a_sweep_builds_no_callback(tmp_path, monkeypatch):
    """The multirun config's callbacks are built only by the real launch (HydraLaunch.launch)."""
    built = []
    monkeypatch.setattr("builtins.print", lambda *a, **k: built.append(a))  # the callback's target, if built
    hl = HydraLaunch("ppo", ["+hydra.callbacks.c._target_=builtins.print", f"hydra.sweep.dir={tmp_path}"], POINT)
    hl.instantiate(lambda cfg: None)
    assert hl.callbacks.callbacks == [] and built == []
