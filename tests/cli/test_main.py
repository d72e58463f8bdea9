"""The dispatcher: a mistyped subcommand is a usage error with a did-you-mean, not a Hydra override."""

from __future__ import annotations

import pytest

from fsdpcfg.cli.main import main


@pytest.mark.parametrize(
    "word, suggestion", [("chek", "check"), ("exprt", "export"), ("doctr", "doctor"), ("preveiw", "preview")]
)
def test_mistyped_command_suggests_the_command(capsys, word, suggestion):
    assert main([word, "+recipe=qwen_grpo"]) == 2
    err = capsys.readouterr().err
    assert f"unknown command `{word}`" in err and f"did you mean `fsdpcfg {suggestion}`" in err


def test_unrelated_word_lists_the_commands(capsys):
    assert main(["zzzz"]) == 2
    err = capsys.readouterr().err
    assert "did you mean" not in err and "commands: run, check" in err


@pytest.mark.slow  # end to end: a fresh Python process
def test_modules_in_the_working_folder_never_shadow_the_librarys(tmp_path):
    """``python -m`` puts the working folder first on ``sys.path``: a user's ``secrets.py`` (a common name for a
    file of keys), ``json.py`` or ``yaml.py`` there was imported in place of the library's and ran, in every command
    (break-it pass). The folder now goes last: none of them runs, and each command does its work."""
    import subprocess
    import sys

    names = ["secrets", "json", "yaml", "omegaconf", "hydra", "packaging", "attr", "typing_extensions"]
    for name in names:
        (tmp_path / f"{name}.py").write_text(f"open({str(tmp_path / ('RAN_' + name))!r}, 'w').write('x')\n")
    for argv in (
        ["check", "--no-plan", "+recipe=qwen_grpo"],
        ["show", "+recipe=qwen_grpo", "--key", "data.train_batch_size"],
        ["+recipe=qwen_grpo", "fsdpcfg.run_dir=run", "--dry-run"],
    ):
        p = subprocess.run([sys.executable, "-m", "fsdpcfg", *argv], cwd=tmp_path, capture_output=True, text=True)
        assert p.returncode == 0 and "Traceback" not in p.stderr, (argv, p.stderr[-2000:])
        assert not list(tmp_path.glob("RAN_*")), argv
