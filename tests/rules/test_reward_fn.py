"""FC415: the custom reward function file, parsed and never imported."""

from __future__ import annotations

import pytest
from rule_helpers import errors, run

from fsdpcfg.rules import reward_fn as r

GOOD = "def compute_score(data_source, solution_str, ground_truth, extra_info=None):\n    return 1.0\n"


def _on(path, name="compute_score", *extra):
    return (f"reward.custom_reward_function.path={path}", f"reward.custom_reward_function.name={name}", *extra)


def _write(tmp_path, text, name="reward.py"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_good_function_passes(tmp_path):
    assert not run(r.custom_reward_function, *_on(_write(tmp_path, GOOD)))
    kw = "async def compute_score(*, data_source, solution_str, ground_truth, extra_info, **kw):\n    return 0.0\n"
    assert not run(r.custom_reward_function, *_on(_write(tmp_path, kw, "b.py")))
    # bound by an import: its signature cannot be known without importing, so no finding
    assert not run(r.custom_reward_function, *_on(_write(tmp_path, "from x import compute_score\n", "c.py")))
    # file:// prefix, as verl's load_module takes it
    assert not run(r.custom_reward_function, *_on(f"file://{_write(tmp_path, GOOD, 'd.py')}"))


def test_file_without_the_function(tmp_path):
    p = _write(tmp_path, "def score(a):\n    pass\n\ndef helper():\n    pass\n")
    found = errors(run(r.custom_reward_function, *_on(p)), "FC415")
    assert len(found) == 1
    assert found[0].message == f"{p} defines no top-level 'compute_score'; its functions: score, helper"
    assert found[0].keys[0] == "reward.custom_reward_function.name"


def test_syntax_error_is_reported_with_its_line_and_nothing_runs(tmp_path):
    marker = tmp_path / "ran"
    p = _write(tmp_path, f"open({str(marker)!r}, 'w').write('x')\ndef compute_score(:\n    pass\n")
    found = errors(run(r.custom_reward_function, *_on(p)), "FC415")
    assert len(found) == 1 and "has a syntax error (line 2:" in found[0].message
    ok = _write(tmp_path, f"open({str(marker)!r}, 'w').write('x')\n" + GOOD, "ok.py")
    assert not run(r.custom_reward_function, *_on(ok))
    assert not marker.exists()  # parsed, never imported


@pytest.mark.parametrize(
    "sig, words",
    [
        ("def compute_score(solution_str, ground_truth):", "does not accept data_source, extra_info"),
        (
            "def compute_score(data_source, solution_str, ground_truth, extra_info, tokenizer):",
            "requires tokenizer, which verl does not pass",
        ),
        ("def compute_score(data_source, solution_str, ground_truth, extra_info, /):", "positional-only"),
    ],
)
def test_signature_verl_cannot_call(tmp_path, sig, words):
    p = _write(tmp_path, sig + "\n    return 0.0\n")
    found = errors(run(r.custom_reward_function, *_on(p)), "FC415")
    assert len(found) == 1 and words in found[0].message, found


def test_reward_kwargs_must_be_accepted(tmp_path):
    p = _write(tmp_path, GOOD)
    found = errors(
        run(r.custom_reward_function, *_on(p), "+reward.custom_reward_function.reward_kwargs.scale=2"), "FC415"
    )
    assert len(found) == 1 and "does not accept scale" in found[0].message


def test_missing_file_is_an_info_and_pkg_modules_are_not_checked(tmp_path):
    found = run(r.custom_reward_function, *_on(tmp_path / "nope.py"))
    assert [f.severity for f in found] == ["info"]
    assert not run(r.custom_reward_function, *_on("pkg://my_rewards.gsm8k"))


def test_shipped_reward_groups_pass():
    """reward=arith names fsdpcfg/rewards/arith.py; reward=gsm8k uses verl's default scorer (path null)."""
    from fsdpcfg.check import check_overrides

    for reward in ("arith", "gsm8k"):
        assert not [f for f in check_overrides(["+recipe=qwen_grpo", f"reward={reward}"]) if f.rule == "FC415"]
