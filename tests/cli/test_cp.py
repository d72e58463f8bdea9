"""``fsdpcfg cp``: a child recipe (or a flat copy) that composes to exactly the original's config."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from fsdpcfg import catalog
from fsdpcfg.cli.main import main
from fsdpcfg.compose import compose


@pytest.fixture(scope="module")
def original() -> dict:
    return catalog.flat(compose(["+recipe=qwen_grpo"]))


def _composed(path: Path) -> dict:
    return catalog.flat(compose([f"+recipe={path}"]))


def test_child_recipe_composes_like_the_original(tmp_path: Path, original, capsys):
    dest = tmp_path / "my_grpo"
    assert main(["cp", "qwen_grpo", str(dest)]) == 0
    f = tmp_path / "my_grpo.yaml"
    assert f"wrote {f}" in capsys.readouterr().out
    text = f.read_text()
    assert text.startswith("# @package _global_\n# yaml-language-server: $schema=")
    assert yaml.safe_load(text)["defaults"] == ["qwen_grpo", "_self_"]
    assert catalog.describe(f) == "Child of recipe `qwen_grpo`: GRPO on GSM8K with a Qwen2-architecture model."
    assert _composed(f) == original


def test_child_edits_override_the_parent(tmp_path: Path, original):
    main(["cp", "qwen_grpo", str(tmp_path / "mine.yaml")])
    f = tmp_path / "mine.yaml"
    f.write_text(f.read_text() + "data:\n  train_batch_size: 8\n")
    got = _composed(f)
    assert got["data.train_batch_size"] == 8
    assert {k for k in got if got[k] != original[k]} == {"data.train_batch_size"}


def test_expanded_copy_composes_like_the_original_and_stands_alone(tmp_path: Path, original):
    assert main(["cp", "qwen_grpo", str(tmp_path / "flat.yaml"), "--expand"]) == 0
    doc = yaml.safe_load((tmp_path / "flat.yaml").read_text())
    assert "qwen_grpo" not in doc["defaults"]
    assert {"override /engine": "fsdp2"} in doc["defaults"] and doc["defaults"][-1] == "_self_"
    assert doc["actor_rollout_ref"]["rollout"]["n"] == 4
    assert _composed(tmp_path / "flat.yaml") == original


def test_copy_of_a_copy_follows_the_chain(tmp_path: Path, original):
    main(["cp", "qwen_grpo", str(tmp_path / "a.yaml")])
    (tmp_path / "a.yaml").write_text((tmp_path / "a.yaml").read_text() + "trainer:\n  save_freq: 2\n")
    assert main(["cp", str(tmp_path / "a.yaml"), str(tmp_path / "b.yaml")]) == 0
    assert main(["cp", str(tmp_path / "b.yaml"), str(tmp_path / "c.yaml"), "--expand"]) == 0
    want = dict(original, **{"trainer.save_freq": 2})
    assert _composed(tmp_path / "b.yaml") == want
    assert _composed(tmp_path / "c.yaml") == want


@pytest.mark.parametrize(
    "args, message",
    [
        (["qwen_gpro", "x.yaml"], "did you mean qwen_grpo"),
        (["qwen_grpo", "qwen_grpo.yaml"], "shadows the shipped recipe"),
    ],
)
def test_cp_mistakes(tmp_path: Path, capsys, args, message, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["cp", *args]) == 2
    assert message in capsys.readouterr().err


def test_cp_refuses_to_overwrite_without_force(tmp_path: Path, capsys):
    dest = tmp_path / "x.yaml"
    dest.write_text("keep\n")
    assert main(["cp", "qwen_grpo", str(dest)]) == 2
    assert "pass --force" in capsys.readouterr().err and dest.read_text() == "keep\n"
    assert main(["cp", "qwen_grpo", str(dest), "--force"]) == 0


@pytest.mark.parametrize("dest", [".", "./.", "..", "/", "sub/", "sub"])
@pytest.mark.parametrize("command", ["cp", "import"])
def test_a_folder_as_the_destination_is_a_usage_error_that_writes_nothing(tmp_path, monkeypatch, capsys, dest, command):
    """``cp qwen_grpo .`` and ``import run.sh -o .`` tracebacked (``with_name`` on an empty name) and ``cp X dir/``
    wrote ``dir.yaml`` beside the folder (break-it pass): a folder is refused, naming the file to give."""

    work = tmp_path / "work"
    (work / "sub").mkdir(parents=True)
    monkeypatch.chdir(work)
    script = Path(__file__).resolve().parents[1] / "check" / "scripts" / "grpo_arrays.sh"
    argv = ["cp", "qwen_grpo", dest] if command == "cp" else ["import", str(script), "-o", dest]
    before = sorted(tmp_path.rglob("*"))
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{dest} is a folder, not a recipe file" in err and "-> name the file in it: " in err
    assert "Traceback" not in err and sorted(tmp_path.rglob("*")) == before
