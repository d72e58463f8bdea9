"""No code a config names runs before training starts (issue 22 item 1), in any mode, for real: each command runs as
`python -m fsdpcfg ...` in a working folder holding a module that leaves a marker file when it is imported, when
its callback class is built and when its logging-handler factory is called, and the user's own files that a
`builtins.open(path, "w")` callback and a `logging.FileHandler(mode="w")` handler would empty. After dry runs
(native and verl), `check` (a file, `+recipe=`, `--verl`), `show`, `--cfg`, `export` (with `--verl-check`),
`preview` and a sweep's `--dry-run`, no marker exists, the user's files are byte-identical, and `check` reports
every such key (FC740). A sweep selects recipes by name, so it runs on a copy of the config tree whose recipe
folder also holds the test's recipes."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import fsdpcfg
from fsdpcfg import paths

CODE = str(Path(fsdpcfg.__file__).resolve().parents[1])  # the fsdpcfg under test, for a subprocess run elsewhere
MARKERS = ("IMPORTED", "BUILT", "HANDLER")

#: imported (IMPORTED), its callback built (BUILT), its handler factory called (HANDLER): each leaves a file.
MODULE = """\
import logging
import pathlib

HERE = pathlib.Path(__file__).resolve().parent
(HERE / "IMPORTED").write_text("imported")


class Marker:
    def __init__(self, **kwargs):
        (HERE / "BUILT").write_text("built")


def handler():
    (HERE / "HANDLER").write_text("called")
    return logging.NullHandler()
"""

#: the file names of the test's two recipes in the working folder (and in the sweep's copy of the tree).
HYDRA_RECIPE, TARGET_RECIPE = "cfgcode_hydra", "cfgcode_target"


def _hydra_code(work: Path) -> dict:
    """Callbacks (a class of the working folder's module, `builtins.open(user.txt, "w")`) and logging handlers."""
    return {
        "callbacks": {
            "marker": {"_target_": "cfgcodemod.Marker"},
            "wipe": {"_target_": "builtins.open", "file": str(work / "user.txt"), "mode": "w"},
        },
        "job_logging": {
            "handlers": {"wipe2": {"class": "logging.FileHandler", "filename": str(work / "user2.txt"), "mode": "w"}},
            "root": {"handlers": ["wipe2"]},
        },
        "hydra_logging": {"handlers": {"fact": {"()": "cfgcodemod.handler"}}, "root": {"handlers": ["fact"]}},
    }


def _write_recipe(folder: Path, name: str, body: dict) -> Path:
    f = folder / f"{name}.yaml"
    doc = {"defaults": ["/recipe/qwen_grpo@_global_", "_self_"], **body}
    f.write_text("# @package _global_\n" + yaml.safe_dump(doc, sort_keys=False))
    return f


@pytest.fixture
def work(tmp_path):
    """The working folder: the module, the user's files and the two recipes."""
    w = tmp_path / "work"
    w.mkdir()
    (w / "cfgcodemod.py").write_text(MODULE)
    (w / "user.txt").write_text("the user's own text\n")
    (w / "user2.txt").write_text("more of the user's own text\n")
    _write_recipe(w, HYDRA_RECIPE, {"hydra": _hydra_code(w)})
    _write_recipe(
        w,
        TARGET_RECIPE,
        {"algorithm": {"kl_ctrl": {"_target_": "cfgcodemod.Marker"}}, "hydra": _hydra_code(w)},
    )
    return w


def _state(w: Path) -> dict[str, bytes]:
    return {n: (w / n).read_bytes() for n in ("user.txt", "user2.txt")}


def _run(w: Path, args: list[str], *, tree: Path | None = None, timeout: int = 300) -> subprocess.CompletedProcess:
    """``python -m fsdpcfg ARGS`` in ``w`` (with ``tree``: the config tree's folder replaced by that copy)."""
    # the working folder on the path of every process, verl's second-opinion worker (run elsewhere) included
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([CODE, str(w)]), "WANDB_MODE": "disabled"}
    if tree is None:
        cmd = [sys.executable, "-m", "fsdpcfg", *args]
    else:  # `python -c` puts the working folder on sys.path as `-m` does: the module stays importable
        code = (
            "import sys, pathlib\n"
            "import fsdpcfg.paths as p\n"
            "real = p.conf_dir\n"
            "p.conf_dir = lambda kind='ppo': pathlib.Path(sys.argv[1]) if kind == 'ppo' else real(kind)\n"
            "from fsdpcfg.cli.main import main\n"
            "raise SystemExit(main(sys.argv[2:]))\n"
        )
        cmd = [sys.executable, "-c", code, str(tree), *args]
    return subprocess.run(cmd, cwd=w, env=env, capture_output=True, text=True, timeout=timeout)


def _assert_nothing_ran(w: Path, before: dict[str, bytes], proc: subprocess.CompletedProcess) -> None:
    out = proc.stdout + proc.stderr
    assert "Traceback" not in out, out[-3000:]
    assert [m for m in MARKERS if (w / m).exists()] == [], out[-3000:]
    assert _state(w) == before


def _tree_with_recipes(tmp_path: Path, w: Path) -> Path:
    """A copy of the RL config tree (links to its files) whose recipe folder also holds the working folder's
    recipes, which a sweep can then select by name."""
    conf = tmp_path / "conf"
    conf.mkdir()
    real = paths.conf_dir("ppo")
    for entry in real.iterdir():
        if entry.name != "recipe":
            (conf / entry.name).symlink_to(entry.resolve())
    (conf / "recipe").mkdir()
    for r in paths.recipes_dir().glob("*.yaml"):
        (conf / "recipe" / r.name).symlink_to(r.resolve())
    for name in (HYDRA_RECIPE, TARGET_RECIPE):
        (conf / "recipe" / f"{name}.yaml").symlink_to(w / f"{name}.yaml")
    return conf


MODES = {
    "dry run, native": ["+recipe={w}/cfgcode_hydra.yaml", "fsdpcfg.run_dir={w}/runs/a", "--dry-run"],
    "dry run, native, a _target_ (refused)": [
        "+recipe={w}/cfgcode_target.yaml",
        "fsdpcfg.run_dir={w}/runs/b",
        "--dry-run",
    ],
    "dry run, verl": [
        "+recipe={w}/cfgcode_target.yaml",
        "launcher=verl",
        "rollout=vllm",
        "fsdpcfg.run_dir={w}/runs/c",
        "--dry-run",
    ],
    "check FILE": ["check", "{w}/cfgcode_hydra.yaml"],
    "check +recipe=FILE": ["check", "+recipe={w}/cfgcode_target.yaml"],
    "show": ["show", "+recipe={w}/cfgcode_target.yaml"],
    "--cfg all --resolve": ["+recipe={w}/cfgcode_target.yaml", "--cfg", "all", "--resolve"],
    "--cfg hydra": ["+recipe={w}/cfgcode_hydra.yaml", "--cfg", "hydra"],
    "export": ["export", "+recipe={w}/cfgcode_target.yaml", "-o", "{w}/export"],
    "preview": ["preview", "+recipe={w}/cfgcode_hydra.yaml"],
}


@pytest.mark.slow
@pytest.mark.parametrize("mode", sorted(MODES))
def test_no_mode_runs_code_the_config_names(work, mode):
    before = _state(work)
    proc = _run(work, [a.format(w=work) for a in MODES[mode]])
    _assert_nothing_ran(work, before, proc)
    out = proc.stdout + proc.stderr
    if mode.startswith("check"):
        assert out.count("FC740") >= 4, out[-3000:]  # two callbacks, two logging handlers (and the _target_)
    if "refused" in mode:
        assert proc.returncode == 1 and "[FC740]" in out and "algorithm.kl_ctrl._target_" in out
    elif mode.startswith(("dry run", "show", "--cfg", "export", "preview")):
        assert proc.returncode == 0, out[-3000:]


@pytest.mark.slow
def test_check_reports_each_key_and_what_a_real_run_would_do(work):
    proc = _run(work, ["check", "--format", "json", str(work / "cfgcode_target.yaml")])
    found = {f["keys"][0]: f for i in json.loads(proc.stdout)["inputs"] for f in i["findings"] if f["rule"] == "FC740"}
    assert sorted(found) == [
        "algorithm.kl_ctrl._target_",
        "hydra.callbacks.marker",
        "hydra.callbacks.wipe",
        "hydra.hydra_logging.handlers.fact",
        "hydra.job_logging.handlers.wipe2",
    ]
    assert f"builtins.open(file='{work / 'user.txt'}', mode='w')" in found["hydra.callbacks.wipe"]["message"]
    assert "verl imports module cfgcodemod" in found["algorithm.kl_ctrl._target_"]["message"]
    assert "in the working folder" in found["hydra.callbacks.marker"]["message"]
    assert [m for m in MARKERS if (work / m).exists()] == []


@pytest.mark.slow
@pytest.mark.parametrize("recipe", [HYDRA_RECIPE, "qwen_grpo"])
def test_a_sweeps_dry_run_builds_no_callback_and_configures_no_logging(work, tmp_path, recipe):
    """The recipe's callbacks and handlers, and the same given as Hydra overrides on the command line."""
    tree = _tree_with_recipes(tmp_path, work)
    before = _state(work)
    extra = [] if recipe == HYDRA_RECIPE else ["+hydra.callbacks.m._target_=cfgcodemod.Marker"]
    proc = _run(
        work,
        [
            "-m",
            f"+recipe={recipe}",
            "actor_rollout_ref.actor.optim.lr=1e-6,2e-6",
            f"hydra.sweep.dir={work}/sweep",
            "--dry-run",
            *extra,
        ],
        tree=tree,
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert "dry run: nothing was started" in proc.stdout
    _assert_nothing_ran(work, before, proc)
    assert sorted(p.name for p in (work / "sweep").iterdir()) == ["0", "1"]


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("verl") is None, reason="needs verl 0.9.1 (the second opinion)")
@pytest.mark.parametrize(
    "args",
    [
        ["check", "--verl", "+recipe={w}/cfgcode_target.yaml", "launcher=verl", "rollout=vllm"],
        ["export", "+recipe={w}/cfgcode_target.yaml", "-o", "{w}/x", "--verl-check"],
    ],
)
def test_verls_second_opinion_does_not_instantiate_a_target_that_is_not_verls(work, args):
    before = _state(work)
    proc = _run(work, [a.format(w=work) for a in args], timeout=600)
    _assert_nothing_ran(work, before, proc)
    out = proc.stdout + proc.stderr
    assert "verl's checks were not run: algorithm.kl_ctrl._target_='cfgcodemod.Marker'" in out, out[-3000:]


def test_a_package_on_hydras_search_path_is_refused_before_hydra_imports_it(tmp_path, monkeypatch):
    """``hydra.searchpath=[pkg://MOD]`` would make Hydra import MOD to list its configs: its code ran in check,
    show, dry runs, sweeps and export (break-it pass, issue 22). Every path composes through the one refusal."""
    from fsdpcfg.check import check_overrides
    from fsdpcfg.compose import ComposeError, compose
    from fsdpcfg.sweep import expand

    pkg = tmp_path / "cfgcode_search_pkg"
    pkg.mkdir()
    marker = tmp_path / "imported"
    (pkg / "__init__.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    ovr = "hydra.searchpath=[pkg://cfgcode_search_pkg]"
    with pytest.raises(ComposeError) as e:
        compose(["+recipe=arith_grpo", ovr])
    assert e.value.key == "hydra.searchpath" and "file://" in (e.value.fix or "")
    (f,) = [f for f in check_overrides(["+recipe=arith_grpo", ovr]) if f.severity == "error"]
    assert f.keys == ["hydra.searchpath"] and "pkg://cfgcode_search_pkg" in f.message
    with pytest.raises(ComposeError):
        expand(["+recipe=arith_grpo", ovr, "data.train_batch_size=8,16"])
    assert not marker.exists() and "cfgcode_search_pkg" not in sys.modules
