"""Bad input found by trying to break the CLI: every case is a clear message and the right exit code, never a
traceback, and nothing the user had is overwritten."""

from __future__ import annotations

import pytest

from fsdpcfg.cli.main import main
from fsdpcfg.launch import signals  # the launcher starts torchrun through run_forwarding


@pytest.fixture
def bad(tmp_path):
    (tmp_path / "syntax.yaml").write_text("a: [1, 2\n")
    (tmp_path / "binary.yaml").write_bytes(bytes(range(128, 256)) * 2)
    (tmp_path / "empty.yaml").write_text("")
    (tmp_path / "list.yaml").write_text("- 1\n- 2\n")
    return tmp_path


def _run(capsys, argv):
    rc = main(argv)
    out = capsys.readouterr()
    assert "Traceback" not in out.err + out.out
    return rc, out.err


@pytest.mark.parametrize(
    "name, rc, words",
    [
        ("syntax.yaml", 1, "syntax.yaml:2: not valid YAML"),
        ("binary.yaml", 1, "not UTF-8 text"),
        ("empty.yaml", 1, "is empty"),
        ("list.yaml", 1, "a recipe is a mapping of keys, not a list"),
        ("missing.yaml", 2, "no such recipe file"),
    ],
)
def test_broken_recipe_files_in_every_command(bad, capsys, name, rc, words):
    path = str(bad / name)
    for argv in (
        ["+recipe=" + path, "--dry-run"],
        ["show", path],
        ["diff", path, "qwen_grpo"],
        ["cp", "--expand", path, str(bad / "out" / "copy.yaml")],
    ):
        got, err = _run(capsys, argv)
        assert got == rc and words in err, (argv, got, err)
    assert not (bad / "out" / "copy.yaml").exists()


def test_a_folder_is_not_a_recipe(tmp_path, capsys):
    assert _run(capsys, ["show", str(tmp_path)])[0] == 2
    rc, err = _run(capsys, ["check", str(tmp_path)])
    assert rc == 2 and "is a folder" in err


def test_check_takes_a_recipe_path_and_yaml_valued_overrides(tmp_path, capsys):
    mine = tmp_path / "mine.yaml"
    mine.write_text("# @package _global_\ndefaults:\n  - qwen_grpo\n  - _self_\n\ndata:\n  train_batch_size: 8\n")
    assert _run(capsys, ["check", f"+recipe={mine}"])[0] == 0
    # a key=value whose value ends in .yaml is an override, not a file
    assert _run(capsys, ["check", "+recipe=qwen_grpo", f"trainer.default_local_dir={tmp_path}/x.yaml"])[0] == 0


def test_diff_with_unbalanced_quotes_is_a_usage_error(capsys):
    rc, err = _run(capsys, ["diff", "--a", "qwen_grpo", "--b", 'qwen_grpo data.train_files="open'])
    assert rc == 2 and "No closing quotation" in err


def test_unusable_output_paths_are_errors_not_tracebacks(tmp_path, capsys):
    afile = tmp_path / "afile"
    afile.write_text("x")
    rc, err = _run(capsys, ["cp", "qwen_grpo", str(afile / "child.yaml")])
    assert rc == 1 and str(afile) in err
    rc, err = _run(capsys, ["export", "--launcher", "verl", "+recipe=qwen_grpo", "-o", str(afile)])
    assert rc == 1 and "is a file, not a folder" in err


def test_export_never_overwrites_a_file_it_did_not_write(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "config.yaml").write_text("keep\n")
    rc, err = _run(capsys, ["export", "--launcher", "verl", "+recipe=qwen_grpo", "-o", str(out)])
    assert rc == 1 and "already holds config.yaml" in err and "--force" in err
    assert (out / "config.yaml").read_text() == "keep\n" and not (out / "run_verl.sh").exists()
    assert _run(capsys, ["export", "--launcher", "verl", "+recipe=qwen_grpo", "-o", str(out), "--force"])[0] == 0
    assert (out / "config.yaml").read_text() != "keep\n"


def test_missing_training_data_is_an_info_in_check_and_refused_before_torchrun(tmp_path, capsys, monkeypatch):
    from fsdpcfg.check import check_overrides

    missing = str(tmp_path / "nodata.parquet")
    (f,) = [f for f in check_overrides(["+recipe=qwen_grpo", f"data.train_files={missing}"]) if f.rule == "FC408"]
    assert f.severity == "info" and f.keys == ["data.train_files"] and missing in f.message
    started = []
    monkeypatch.setattr(signals, "run_forwarding", lambda *a, **k: started.append(a) or 0)
    rc, err = _run(capsys, ["+recipe=qwen_grpo", f"data.train_files={missing}", f"fsdpcfg.run_dir={tmp_path}/run"])
    assert rc == 1 and not started and "data.train_files: no such file" in err


@pytest.mark.parametrize("launcher", ["native", "verl"])
def test_a_section_that_is_a_broken_interpolation_is_refused_by_the_run(tmp_path, capsys, monkeypatch, launcher):
    """`fsdpcfg=${nope.key}` (found by the 10,000-set property test): the run read `fsdpcfg.launcher` by resolving
    the section and died with omegaconf's InterpolationKeyError; now it refuses with check's FC100, as check does."""
    monkeypatch.chdir(tmp_path)
    argv = ["+recipe=qwen_grpo", f"launcher={launcher}", "fsdpcfg=${nope.key}"]
    rc, err = _run(capsys, [*argv, "--dry-run"])
    assert rc != 0
    assert "[FC100]" in err and "'${nope.key}' cannot be resolved" in err
    assert main(["check", *argv]) == 1
