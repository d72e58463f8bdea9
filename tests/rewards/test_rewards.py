"""Reward values against verl's GSM8K semantics and the arith rule; the dispatcher and the loader."""

from __future__ import annotations

import pytest

from fsdpcfg import paths
from fsdpcfg.errors import ConfigError
from fsdpcfg.rewards import arith, default_compute_score, gsm8k, load_reward_fn


@pytest.mark.parametrize(
    "response,truth,expected",
    [
        ("She sold 48+24 = 72 clips.\n#### 72", "72", 1.0),
        ("#### 1,234", "1234", 1.0),  # commas removed (strict)
        ("#### $15", "15", 0.0),  # "$" is not part of the strict pattern after "#### "
        ("#### 72.0", "72", 0.0),  # verl compares strings: 72.0 != 72
        ("#### -3", "-3", 1.0),
        ("#### 7\n#### 8", "8", 1.0),  # the last #### wins
        ("The answer is 72", "72", 0.0),  # strict needs "#### "
        ("####72", "72", 0.0),  # ... with the space
    ],
)
def test_gsm8k_strict(response, truth, expected):
    assert gsm8k.compute_score(response, truth) == expected


def test_gsm8k_only_last_300_chars_are_read():
    assert gsm8k.compute_score("#### 72" + " " * 300, "72") == 0.0
    assert gsm8k.compute_score("x" * 1000 + "#### 72", "72") == 1.0


def test_gsm8k_format_score_and_flexible():
    assert gsm8k.compute_score("#### 71", "72", format_score=0.1) == 0.1
    assert gsm8k.extract_answer("so 3 apples, then 72.", "flexible") == "72."
    assert gsm8k.extract_answer("it is 5 and then 72", "flexible") == "72"
    assert gsm8k.extract_answer("no digits", "flexible") is None
    with pytest.raises(ValueError):
        gsm8k.extract_answer("#### 1", "lenient")


@pytest.mark.parametrize(
    "response,truth,expected",
    [
        ("7", "7", 1.0),
        (" 7<|im_end|>", "7", 1.0),
        ("7 because 3+4", "7", 1.0),
        ("78", "7", 0.0),
        ("8", "7", 0.0),
        ("", "7", 0.0),
        ("seven", "7", 0.0),
        ("0", "0", 1.0),
    ],
)
def test_arith(response, truth, expected):
    assert arith.compute_score("fsdpcfg/arith", response, truth) == expected


def test_default_dispatch():
    assert default_compute_score("openai/gsm8k", "#### 1,234", "1234") == 1.0
    assert default_compute_score("fsdpcfg/arith", "5", "5") == 1.0
    with pytest.raises(ConfigError) as e:
        default_compute_score("lighteval/MATH", "x", "y")
    msg = str(e.value)
    assert "lighteval/MATH" in msg and "openai/gsm8k" in msg and "fsdpcfg/arith" in msg


def test_load_reward_fn_default_and_custom(tmp_path):
    assert load_reward_fn({"custom_reward_function": {"path": None, "name": "compute_score"}}) is default_compute_score
    fn = load_reward_fn(
        {"custom_reward_function": {"path": str(paths.PACKAGE_DIR / "rewards" / "arith.py"), "name": "compute_score"}}
    )
    assert fn("fsdpcfg/arith", "9", "9") == 1.0 and fn("fsdpcfg/arith", "1", "9") == 0.0
    f = tmp_path / "my_reward.py"
    f.write_text(
        "def score(data_source, solution_str, ground_truth, extra_info=None, bonus=0.0):\n"
        "    return float(solution_str == ground_truth) + bonus\n"
    )
    fn = load_reward_fn({"custom_reward_function": {"path": str(f), "name": "score", "reward_kwargs": {"bonus": 0.5}}})
    assert fn("x", "a", "a") == 1.5


def test_load_reward_fn_errors(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load_reward_fn({"custom_reward_function": {"path": str(tmp_path / "nope.py"), "name": "compute_score"}})
    f = tmp_path / "r.py"
    f.write_text("def other(*a):\n    return 0.0\n")
    with pytest.raises(ConfigError) as e:
        load_reward_fn({"custom_reward_function": {"path": str(f), "name": "compute_score"}})
    assert "other" in str(e.value) and e.value.key == "reward.custom_reward_function.name"
    bad = tmp_path / "bad.py"
    bad.write_text("import not_a_module_xyz\n")
    with pytest.raises(ConfigError, match="ModuleNotFoundError"):
        load_reward_fn({"custom_reward_function": {"path": str(bad), "name": "compute_score"}})


def test_load_reward_fn_not_a_python_file(tmp_path):
    """A file no import loader knows (``spec_from_file_location`` returns None): a ConfigError naming the key,
    not an AttributeError on None (found by mypy)."""
    f = tmp_path / "reward.txt"
    f.write_text("def compute_score(*a):\n    return 1.0\n")
    with pytest.raises(ConfigError) as e:
        load_reward_fn({"custom_reward_function": {"path": str(f), "name": "compute_score"}})
    assert "not a Python file" in str(e.value) and e.value.key == "reward.custom_reward_function.path"


# -- what a reward function returns (issue 22 item 5) ----------------------------------------------------------
def test_score_takes_numbers_and_refuses_the_rest_naming_function_and_row(tmp_path):
    import math

    from fsdpcfg.rewards import reward_label, score

    f = tmp_path / "rew.py"
    f.write_text(
        "import math\n"
        "def r(data_source, solution_str, ground_truth, extra_info=None):\n"
        "    return extra_info['out']\n"
        "def boom(data_source, solution_str, ground_truth, extra_info=None):\n"
        "    raise ValueError('cannot parse')\n"
    )
    section = {"custom_reward_function": {"path": str(f), "name": "r"}}
    fn, label = load_reward_fn(section), reward_label(section)
    assert label == (f"r in {f}", "reward.custom_reward_function.name")

    def got(out):
        return score(fn, "src", "42", "7", {"out": out}, label=label, where="row 3 of t.jsonl")

    assert got(1) == 1.0 and got(0.5) == 0.5 and got(True) == 1.0 and got({"score": 0.25, "acc": 1}) == 0.25
    for out, shown in [
        (None, "None"),
        (float("nan"), "nan"),
        (math.inf, "inf"),
        ("good", "'good'"),
        ({"acc": 1}, "a dict without 'score' (keys: acc)"),
        ({"score": None}, "None"),
        ([1.0], "list [1.0]"),
    ]:
        with pytest.raises(ConfigError) as e:
            got(out)
        assert e.value.key == "reward.custom_reward_function.name"
        assert e.value.message == (
            f"the reward function r in {f} returned {shown} on row 3 of t.jsonl (data_source 'src', ground truth "
            "'7'); a reward must be a finite number, or a dict whose 'score' is one"
        ), out
        assert e.value.fix.startswith("make the reward function return a float")
    section = {"custom_reward_function": {"path": str(f), "name": "boom"}}
    with pytest.raises(ConfigError) as e:
        score(load_reward_fn(section), "src", "", "7", None, label=reward_label(section), where="row 0 of t.jsonl")
    assert e.value.message == (
        f"the reward function boom in {f} raised ValueError: cannot parse (rew.py:5) on row 0 of t.jsonl "
        "(data_source 'src', ground truth '7')"
    )
    # the built-in dispatcher's own message passes through
    with pytest.raises(ConfigError, match="no built-in reward for data_source 'src'"):
        score(default_compute_score, "src", "", "7", None)


def test_a_reward_that_calls_sys_exit_is_a_message_not_the_end_of_the_rank(tmp_path):
    """``sys.exit()`` in the reward file (at import or in the call) is a ConfigError naming the function, as any
    exception is: it would otherwise end the rank with torchrun's report alone (break-it pass, issue 22)."""
    from fsdpcfg.rewards import reward_label, score

    f = tmp_path / "rew.py"
    f.write_text("import sys\ndef r(data_source, solution_str, ground_truth, extra_info=None):\n    sys.exit(3)\n")
    section = {"custom_reward_function": {"path": str(f), "name": "r"}}
    with pytest.raises(ConfigError) as e:
        score(load_reward_fn(section), "src", "42", "7", None, label=reward_label(section), where="row 0 of t.jsonl")
    assert e.value.message.startswith(f"the reward function r in {f} raised SystemExit: 3 (rew.py:3) on row 0")
    bad = tmp_path / "exits.py"
    bad.write_text("import sys\nsys.exit('no')\n")
    with pytest.raises(ConfigError, match="importing the reward file failed: SystemExit: no"):
        load_reward_fn({"custom_reward_function": {"path": str(bad), "name": "compute_score"}})
