"""The guarded YAML reader keeps one parse per text (:func:`fsdpcfg.yamlio.load`): a check reads a recipe file up to
ten times, so each read after the first is a copy; the copy is the caller's own and a changed file is read anew."""

from __future__ import annotations

import pytest

from fsdpcfg import yamlio
from fsdpcfg.errors import ConfigError


def test_each_load_is_a_fresh_copy_of_the_one_parse(tmp_path):
    f = tmp_path / "r.yaml"
    f.write_text("data:\n  train_batch_size: 8\n  files: [a, b]\n")
    first = yamlio.load_file(f)
    first["data"]["train_batch_size"] = 99
    first["data"]["files"].append("c")
    again = yamlio.load_file(f)
    assert again == {"data": {"train_batch_size": 8, "files": ["a", "b"]}}
    assert again["data"] is not first["data"]


def test_a_file_rewritten_at_once_with_the_same_size_is_read_anew(tmp_path):
    f = tmp_path / "r.yaml"
    f.write_text("n: 1\n")
    assert yamlio.load_file(f) == {"n": 1}
    f.write_text("n: 2\n")  # same size, same timestamp tick: keyed by the text, not the file's mtime
    assert yamlio.load_file(f) == {"n": 2}


def test_an_error_is_raised_again_on_every_read_with_its_own_label():
    bad = "a: [1, 2\n"
    for label in ("one.yaml", "two.yaml"):
        with pytest.raises(ConfigError, match=f"{label}:.*not valid YAML"):
            yamlio.load(bad, label)
