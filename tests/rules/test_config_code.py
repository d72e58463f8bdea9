"""FC740 (issue 22 item 1): `fsdpcfg check` names the code a config would have a real run import and call, Hydra
callbacks, logging handlers beyond Hydra's own, a `_target_` that is not verl's, and checking builds none of it:
the callback's module (in the working folder, writing a marker when imported) is never imported, the file a
`builtins.open(path, "w")` callback names is left intact."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

from fsdpcfg.check import check_overrides
from fsdpcfg.check.sources import check_yaml_file
from fsdpcfg.rules.config_code import module_text, shipped_logging

#: a module of the working folder: importing it, building its callback or calling its handler factory leaves a mark.
MODULE = """\
import pathlib
pathlib.Path("IMPORTED").write_text("imported")


class Marker:
    def __init__(self, path="BUILT"):
        pathlib.Path(path).write_text("built")


def handler():
    pathlib.Path("HANDLER").write_text("called")
    import logging
    return logging.NullHandler()
"""


def _recipe(folder: Path, body: dict, name: str = "evil.yaml") -> Path:
    f = folder / name
    f.write_text(
        "# @package _global_\n" + yaml.safe_dump({"defaults": ["/recipe/qwen_grpo@_global_", "_self_"], **body})
    )
    return f


HYDRA_CODE = {
    "hydra": {
        "callbacks": {
            "marker": {"_target_": "evilmod.Marker"},
            "wipe": {"_target_": "builtins.open", "file": "user.txt", "mode": "w"},
        },
        "job_logging": {
            "handlers": {"wipe2": {"class": "logging.FileHandler", "filename": "user2.txt", "mode": "w"}},
            "root": {"handlers": ["wipe2"]},
        },
        "hydra_logging": {"handlers": {"fact": {"()": "evilmod.handler"}}, "root": {"handlers": ["fact"]}},
    }
}


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A working folder holding the module and the user's files, current for the test."""
    (tmp_path / "evilmod.py").write_text(MODULE)
    (tmp_path / "user.txt").write_text("the user's own text\n")
    (tmp_path / "user2.txt").write_text("more of the user's text\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))  # as `python -m fsdpcfg` has it: the module is importable
    yield tmp_path
    sys.modules.pop("evilmod", None)


def _untouched(folder: Path) -> None:
    assert not [p.name for p in folder.iterdir() if p.name in ("IMPORTED", "BUILT", "HANDLER")]
    assert "evilmod" not in sys.modules
    assert (folder / "user.txt").read_text() == "the user's own text\n"
    assert (folder / "user2.txt").read_text() == "more of the user's text\n"


def _fc740(findings) -> dict[str, object]:
    return {f.keys[0]: f for f in findings if f.rule == "FC740"}


def test_callbacks_and_logging_handlers_in_a_recipe_are_named_and_nothing_is_built(workdir):
    checked = check_yaml_file(_recipe(workdir, HYDRA_CODE))
    found = _fc740(checked.findings)
    assert sorted(found) == [
        "hydra.callbacks.marker",
        "hydra.callbacks.wipe",
        "hydra.hydra_logging.handlers.fact",
        "hydra.job_logging.handlers.wipe2",
    ]
    assert all(f.severity == "warning" for f in found.values())
    wipe = found["hydra.callbacks.wipe"].message
    assert "builtins.open(file='user.txt', mode='w')" in wipe and "a sweep's launch" in wipe
    assert "a single run (`python -m fsdpcfg`, native or verl) ignores it" in wipe
    marker = found["hydra.callbacks.marker"].message
    assert f"module evilmod ({workdir / 'evilmod.py'}, in the working folder)" in marker
    handler = found["hydra.job_logging.handlers.wipe2"].message
    assert "logging.FileHandler(filename='user2.txt', mode='w')" in handler
    assert "opens user2.txt for writing; mode 'w' empties it" in handler
    assert "evilmod.handler()" in found["hydra.hydra_logging.handlers.fact"].message
    assert "(evil.yaml:" in found["hydra.callbacks.wipe"].provenance["hydra.callbacks.wipe"]
    assert not [f for f in checked.findings if f.severity == "error"]  # a warning: a sweep may mean it
    _untouched(workdir)


def test_the_same_on_the_command_line_and_through_plus_recipe(workdir):
    f = _recipe(workdir, HYDRA_CODE)
    assert len(_fc740(check_overrides([f"+recipe={f}"]))) == 4
    cli = _fc740(check_overrides(["+recipe=qwen_grpo", "+hydra.callbacks.m._target_=evilmod.Marker"]))
    assert list(cli) == ["hydra.callbacks.m"]
    assert "+hydra.callbacks.m._target_=evilmod.Marker" in cli["hydra.callbacks.m"].provenance["hydra.callbacks.m"]
    _untouched(workdir)


@pytest.mark.parametrize(
    "overrides",
    [
        [],
        ["hydra/job_logging=disabled", "hydra/hydra_logging=disabled"],
        ["hydra/job_logging=stdout", "hydra/hydra_logging=hydra_debug"],
        ["hydra/job_logging=none", "hydra/hydra_logging=none"],
        ["launcher=verl", "rollout=vllm"],
    ],
)
def test_hydra_and_verl_defaults_are_not_reported(overrides):
    assert not _fc740(check_overrides(["+recipe=qwen_grpo", *overrides]))


def test_a_changed_default_handler_file_is_reported():
    found = _fc740(check_overrides(["+recipe=qwen_grpo", "hydra.job_logging.handlers.file.filename=/tmp/x.log"]))
    assert list(found) == ["hydra.job_logging.handlers.file"]
    assert "opens /tmp/x.log for writing" in found["hydra.job_logging.handlers.file"].message


def test_shipped_logging_options_are_read_from_hydra_itself():
    shipped = shipped_logging()
    assert {"class": "logging.StreamHandler", "formatter": "simple", "stream": "ext://sys.stdout"} in shipped[
        "job_logging"
    ]["handlers.console"]


def test_a_target_that_is_not_verls_is_an_error_natively_and_a_warning_under_verl(workdir):
    body = {"algorithm": {"kl_ctrl": {"_target_": "evilmod.Marker"}}}
    native = _fc740(check_yaml_file(_recipe(workdir, body)).findings)
    assert list(native) == ["algorithm.kl_ctrl._target_"]
    f = native["algorithm.kl_ctrl._target_"]
    assert f.severity == "error" and "the native launcher builds none of them" in f.message
    assert "verl imports module evilmod" in f.message and "evilmod.Marker(" in f.message
    verl = _fc740(check_yaml_file(_recipe(workdir, {**body, "fsdpcfg": {"launcher": "verl"}}, "v.yaml")).findings)
    assert verl["algorithm.kl_ctrl._target_"].severity == "warning"
    own = {"algorithm": {"kl_ctrl": {"_target_": "verl.trainer.config.KLControlConfig"}}}
    assert not _fc740(check_yaml_file(_recipe(workdir, own, "own.yaml")).findings)
    _untouched(workdir)


def test_a_verl_config_file_says_verls_entry_point_builds_its_callbacks(workdir):
    f = workdir / "verl_cfg.yaml"
    f.write_text(
        yaml.safe_dump(
            {
                "defaults": ["ppo_trainer", "_self_"],
                "hydra": {
                    "searchpath": ["pkg://verl.trainer.config"],
                    **{"callbacks": HYDRA_CODE["hydra"]["callbacks"]},
                },
                "data": {"train_batch_size": 8},
            }
        )
    )
    found = _fc740(check_yaml_file(f).findings)
    assert sorted(found) == ["hydra.callbacks.marker", "hydra.callbacks.wipe"]
    assert "verl's entry point" in found["hydra.callbacks.wipe"].message
    _untouched(workdir)


def test_module_text_finds_the_module_without_importing_it(workdir):
    assert module_text("evilmod.Marker") == f"module evilmod ({workdir / 'evilmod.py'}, in the working folder)"
    assert module_text("builtins.open") == "module builtins (built into Python)"
    assert module_text("logging.FileHandler") == "module logging (the standard library)"
    assert module_text("no_such_module_xyz.A") == "module no_such_module_xyz (not found on this machine)"
    _untouched(workdir)
