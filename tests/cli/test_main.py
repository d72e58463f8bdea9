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
