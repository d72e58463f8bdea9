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


def test_an_integer_past_pythons_digit_limit_is_refused_with_its_line(tmp_path):
    """PyYAML's int() raised ValueError (a traceback in `check FILE`); 4,300 digits still load (issue 22 item 5)."""
    import sys

    from fsdpcfg import yamlio
    from fsdpcfg.errors import ConfigError

    limit = sys.get_int_max_str_digits()
    assert yamlio.load(f"a:\n  b: {'9' * limit}\n", "ok.yaml") == {"a": {"b": int("9" * limit)}}
    assert yamlio.load(f"a: '{'9' * (limit + 1)}'\n", "q.yaml") == {"a": "9" * (limit + 1)}  # quoted: a string
    with pytest.raises(ConfigError) as e:
        yamlio.load(f"a:\n  b: -{'9' * (limit + 1)}\n", "big.yaml")
    assert e.value.message == (
        f"big.yaml:2: an integer of {limit + 1:,} digits, more than Python converts ({limit:,}: "
        "sys.get_int_max_str_digits()); no key takes such a number"
    )
