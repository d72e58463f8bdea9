"""Folders that hold (issue 22 item 3): fsdpcfg writes its run files only into a run folder that is new, empty or
its own (fsdpcfg.paths.claim_folder, rule FC731, checked where the run starts). `fsdpcfg.run_dir=.`, an empty
value, or a user's folder with its own files: a dry run leaves every file byte-identical (its files go to a
temporary folder, with the finding as a warning), a run is refused before anything is written, naming the key,
the folder, the rule and the fix. No write follows a link out of the run folder (a `tensorboard`, `config.yaml`,
`metrics.jsonl` or `verl` link pointing elsewhere). Sweep folders are held to the same."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from fsdpcfg.check import check_overrides
from fsdpcfg.cli.main import main
from fsdpcfg.launch import signals
from fsdpcfg.paths import OWNED_MARK, FolderNotOwned, PathEscape, claim_folder, foreign_entries, owned

RUN = ["+recipe=qwen_grpo", "trainer.logger=[console]"]


@pytest.fixture
def no_torchrun(monkeypatch):
    """Record torchrun starts instead of starting it."""
    started: list = []
    monkeypatch.setattr(signals, "run_forwarding", lambda cmd, env, **kw: started.append(cmd) or 0)
    return started


@pytest.fixture
def user_folder(tmp_path, monkeypatch):
    """A user's project folder, the current folder: their own config.yaml, a README, a sub-folder."""
    f = tmp_path / "project"
    (f / "notes").mkdir(parents=True)
    (f / "config.yaml").write_text("my: own config\n")
    (f / "README.md").write_text("# my project\n")
    (f / "notes" / "todo.txt").write_text("nothing\n")
    monkeypatch.chdir(f)
    return f


def _tree(root: Path) -> dict[str, bytes]:
    """Every file and folder under ``root`` (links as their target), to compare before and after."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        out[rel] = (
            b"<link> " + str(p.readlink()).encode() if p.is_symlink() else p.read_bytes() if p.is_file() else b"<dir>"
        )
    return out


@pytest.mark.parametrize("value", [".", "''", "{folder}"])
@pytest.mark.parametrize("launcher", [[], ["launcher=verl", "rollout=vllm"]])
def test_a_dry_run_into_a_users_folder_leaves_every_file_byte_identical(user_folder, tmp_path, capsys, value, launcher):
    before = _tree(user_folder)
    run_dir = value.format(folder=user_folder)
    rc = main([*RUN, *launcher, f"fsdpcfg.run_dir={run_dir}", f"trainer.default_local_dir={tmp_path}/ck", "--dry-run"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    assert _tree(user_folder) == before
    text = out.out + out.err
    assert f"warning: fsdpcfg.run_dir: [FC731] {user_folder} holds files fsdpcfg did not write" in text
    assert "(README.md, config.yaml, notes)" in text
    assert "a real run refuses it: point fsdpcfg.run_dir at a new or empty folder" in text
    assert f"dry run: {user_folder} is left as it is" in text
    # check runs no launch-time rule: it and the dry run agree (both pass)
    assert not [f for f in check_overrides([*RUN, *launcher, f"fsdpcfg.run_dir={run_dir}"]) if f.rule == "FC731"]


@pytest.mark.parametrize("value", [".", "''"])
def test_a_run_into_a_users_folder_is_refused_before_anything_is_written(
    user_folder, tmp_path, capsys, no_torchrun, value
):
    before = _tree(user_folder)
    rc = main([*RUN, f"fsdpcfg.run_dir={value}", f"trainer.default_local_dir={tmp_path}/ck"])
    err = capsys.readouterr().err
    assert rc == 1 and not no_torchrun
    assert _tree(user_folder) == before
    assert not (tmp_path / "ck").exists()  # refused before the checkpoint folder was made
    assert (
        f"fsdpcfg.run_dir: [FC731] {user_folder} holds files fsdpcfg did not write (README.md, config.yaml, notes)"
        in err
    )
    assert (
        f"-> point fsdpcfg.run_dir at a new or empty folder (e.g. fsdpcfg.run_dir=runs/my_run), or move those "
        f"files out of {user_folder}" in err
    )
    assert "Traceback" not in err


def test_new_empty_and_own_folders_are_taken(tmp_path, no_torchrun, capsys):
    new, empty, earlier = tmp_path / "new" / "run", tmp_path / "empty", tmp_path / "earlier"
    empty.mkdir()
    earlier.mkdir()  # a run folder of an fsdpcfg before the mark: its run_info.json and its files
    (earlier / "run_info.json").write_text(json.dumps({"overrides": [], "provenance": {}}))
    (earlier / "config.yaml").write_text("old: run\n")
    for folder in (new, empty, earlier, new):  # `new` twice: the second run takes the folder it marked
        assert main([*RUN, f"fsdpcfg.run_dir={folder}", f"trainer.default_local_dir={tmp_path}/ck"]) == 0
        assert (folder / OWNED_MARK).is_file() and "actor_rollout_ref" in yaml.safe_load(
            (folder / "config.yaml").read_text()
        )
    assert len(no_torchrun) == 4
    # a dry run into a folder it took writes there, as before
    assert main([*RUN, f"fsdpcfg.run_dir={tmp_path}/dry", "--dry-run"]) == 0
    assert (tmp_path / "dry" / OWNED_MARK).is_file() and (tmp_path / "dry" / "config.yaml").is_file()
    capsys.readouterr()


def test_another_tools_metrics_beside_its_own_config_is_a_users_folder(tmp_path):
    """``{"step": N}`` rows are what many trackers write: a folder of another tool's ``metrics.jsonl`` and its own
    ``config.yaml`` (or ``run_info.json``) is the user's, never taken as an earlier fsdpcfg run folder, whose
    ``config.yaml`` a run would write over (issue 22, D3). An earlier fsdpcfg's folder (metrics rows and a
    config with the ``fsdpcfg:`` section, or metrics alone) is still taken."""
    tool = tmp_path / "tool"
    tool.mkdir()
    (tool / "metrics.jsonl").write_text('{"step": 1, "loss": 0.5}\n')
    (tool / "config.yaml").write_text("model: mine\nlr: 0.1\n")
    assert foreign_entries(tool) == ["config.yaml", "metrics.jsonl"]
    with pytest.raises(FolderNotOwned):
        claim_folder(tool, "fsdpcfg.run_dir")
    assert (tool / "config.yaml").read_text() == "model: mine\nlr: 0.1\n" and not (tool / OWNED_MARK).exists()
    (tool / "config.yaml").unlink()
    (tool / "run_info.json").write_text('{"tool": "mine"}')
    assert foreign_entries(tool) == ["metrics.jsonl", "run_info.json"]
    (tool / "run_info.json").unlink()
    (tool / "README.md").write_text("my notes\n")  # another tool's metrics beside files of the user's: theirs
    assert foreign_entries(tool) == ["README.md", "metrics.jsonl"]
    ours = tmp_path / "ours"
    ours.mkdir()
    (ours / "metrics.jsonl").write_text('{"step": 1, "actor/pg_loss": 0.1}\n')
    assert foreign_entries(ours) == []  # metrics alone: ranks started without the launcher
    (ours / "config.yaml").write_text("data:\n  train_batch_size: 4\nfsdpcfg:\n  run_dir: runs/x\n")
    (ours / "tensorboard").mkdir()
    (ours / "stack-rank0.log").write_text("")
    assert foreign_entries(ours) == [] and claim_folder(ours, "fsdpcfg.run_dir") == ours


def test_claim_and_foreign_entries(tmp_path):
    f = tmp_path / "f"
    assert foreign_entries(f) == [] and claim_folder(f, "fsdpcfg.run_dir") == f and (f / OWNED_MARK).is_file()
    g = tmp_path / "g"
    g.mkdir()
    (g / ".hydra").mkdir()  # Hydra's job record and job log, written before a sweep's job starts
    (g / "fsdpcfg.log").write_text("")
    assert foreign_entries(g) == []
    (g / "mine.txt").write_text("x")
    assert foreign_entries(g) == ["mine.txt"]
    with pytest.raises(FolderNotOwned) as e:
        owned(g, "config.yaml", key="fsdpcfg.run_dir")
    assert e.value.key == "fsdpcfg.run_dir" and e.value.value == str(g) and "[FC731]" in e.value.message
    assert not (g / OWNED_MARK).exists()


@pytest.fixture
def linked(tmp_path):
    """A run folder fsdpcfg took, whose tensorboard/, metrics.jsonl, config.yaml and verl/ are links out of it."""
    outside = tmp_path / "outside"
    (outside / "tb").mkdir(parents=True)
    (outside / "verl").mkdir()
    (outside / "metrics.jsonl").write_text("")
    (outside / "config.yaml").write_text("someone: else's\n")
    run = tmp_path / "run"
    claim_folder(run, "fsdpcfg.run_dir")
    (run / "tensorboard").symlink_to(outside / "tb")
    (run / "metrics.jsonl").symlink_to(outside / "metrics.jsonl")
    (run / "verl").symlink_to(outside / "verl")
    return run, outside


def test_the_metric_sinks_never_write_through_a_link_out_of_the_run_folder(linked):
    pytest.importorskip("torch.utils.tensorboard")
    from fsdpcfg.train.metrics import MetricsLogger
    from fsdpcfg.train.trackers import TensorBoardSink

    run, outside = linked
    before = _tree(outside)
    with pytest.raises(PathEscape, match="tensorboard resolves to"):
        TensorBoardSink(run)
    with pytest.raises(PathEscape, match="metrics.jsonl resolves to"):
        MetricsLogger(run, total_steps=1)
    assert _tree(outside) == before


@pytest.mark.parametrize("link", ["config.yaml", "verl"])
def test_a_dry_run_never_writes_through_a_link_out_of_the_run_folder(linked, tmp_path, capsys, link):
    run, outside = linked
    if link == "config.yaml":
        (run / "config.yaml").symlink_to(outside / "config.yaml")
        extra = []
    else:
        extra = ["launcher=verl", "rollout=vllm"]
    (run / "metrics.jsonl").unlink()  # otherwise the folder holds a run and the dry run goes elsewhere
    (run / "tensorboard").unlink()
    before = _tree(outside)
    rc = main([*RUN, *extra, f"fsdpcfg.run_dir={run}", f"trainer.default_local_dir={tmp_path}/ck", "--dry-run"])
    err = capsys.readouterr().err
    assert rc == 1 and f"{run / link}" in err and "outside" in err and "Traceback" not in err
    assert _tree(outside) == before


def test_a_sweep_into_a_users_folder_is_refused_and_its_dry_run_goes_elsewhere(user_folder, tmp_path, capsys):
    before = _tree(user_folder)
    sweep = [*RUN, "actor_rollout_ref.actor.optim.lr=1e-6,2e-6", f"hydra.sweep.dir={user_folder}"]
    assert main(["-m", *sweep, f"trainer.default_local_dir={tmp_path}/ck"]) == 1
    err = capsys.readouterr().err
    assert f"hydra.sweep.dir: [FC731] {user_folder} holds files fsdpcfg did not write" in err
    assert main(["-m", *sweep, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert f"dry run: {user_folder} is left as it is" in out
    assert _tree(user_folder) == before
