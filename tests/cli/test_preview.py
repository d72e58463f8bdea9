"""``fsdpcfg preview``: the first data rows through the training loop's own data path, with real values."""

from __future__ import annotations

import json

import pytest

from fsdpcfg.cli.main import main

pytestmark = pytest.mark.slow  # loads the real Qwen2.5 tokenizer (a few seconds)


def _json(capsys, *argv: str) -> tuple[int, dict]:
    rc = main(["preview", "--format", "json", *argv])
    out = capsys.readouterr().out
    return rc, json.loads(out[out.index("{") : out.rindex("}") + 1])


def test_rl_rows_template_tokens_and_reward(capsys):
    rc, out = _json(capsys, "+recipe=qwen_grpo", "--rows", "2")
    assert rc == 0 and out["kind"] == "ppo" and out["split"] == "train"
    first = out["rows"][0]
    # the shipped GSM8K slice's first row (Natalia's clips), through the Qwen2.5 chat template
    assert first["data_source"] == "openai/gsm8k" and first["ground_truth"] == "72"
    assert first["text"].startswith("<|im_start|>system\n") and first["text"].endswith("<|im_start|>assistant\n")
    assert first["tokens"] == 83 and first["max_prompt_length"] == 256 and first["action"] == "keep"
    assert first["reference_response"] == "#### 72"
    assert (first["score_correct"], first["score_empty"]) == (1.0, 0.0)
    assert [r["index"] for r in out["rows"]] == [0, 1]


@pytest.mark.parametrize(
    "extra, action",
    [
        (["data.truncation=left"], "truncate-left"),
        (["data.truncation=middle"], "truncate-middle"),
        (["data.filter_overlong_prompts=true"], "filtered"),
        ([], "error"),
    ],
)
def test_rl_overlong_prompt_actions(capsys, extra, action):
    rc, out = _json(capsys, "+recipe=qwen_grpo", "data.max_prompt_length=40", "--rows", "1", *extra)
    assert out["rows"][0]["tokens"] == 83 and out["rows"][0]["action"] == action


def test_val_split_reads_val_files(capsys):
    rc, out = _json(capsys, "+recipe=qwen_grpo", "--split", "val", "--rows", "1")
    assert rc == 0 and out["split"] == "val"
    assert out["rows"][0]["ground_truth"] != "72"  # the test set's first question, not the train set's


def test_reward_that_fails_a_correct_answer_exits_1(capsys, tmp_path):
    reward = tmp_path / "never.py"
    reward.write_text("def compute_score(data_source, solution_str, ground_truth, extra_info=None):\n    return 0.0\n")
    rc, out = _json(capsys, "+recipe=qwen_grpo", "--rows", "1", f"reward.custom_reward_function.path={reward}")
    assert rc == 1 and out["rows"][0]["score_correct"] == 0.0


def test_sft_rows_mark_the_loss_tokens(capsys):
    rc = main(["preview", "+recipe=qwen_sft", "--rows", "1"])
    out = capsys.readouterr().out
    assert rc == 0
    header, text = out.split("\n", 1)
    from fsdpcfg.cli.preview import LOSS_CLOSE, LOSS_OPEN

    # only the assistant's answer carries the loss: the user's question is outside the marks
    inside = text[text.index(LOSS_OPEN) + 1 : text.index(LOSS_CLOSE)]
    assert inside.startswith("Natalia sold 48/2") and "#### 72" in inside
    assert "How many clips" in text[: text.index(LOSS_OPEN)]
    assert "tokens=144/512  loss tokens=61" in header


def test_bad_rows_is_a_usage_error(capsys):
    assert main(["preview", "+recipe=qwen_grpo", "--rows", "0"]) == 2
    assert "--rows must be at least 1" in capsys.readouterr().err


def test_preview_gives_the_runs_messages_for_rows_templates_and_rewards(capsys, tmp_path):
    """A bad row, a chat template that raises and a reward returning None: the run's one message each, exit 1, no
    traceback (issue 22 item 5)."""
    from fsdpcfg.paths import data_dir

    rows = [json.loads(x) for x in (data_dir() / "datasets/gsm8k/train.jsonl").read_text().splitlines()[:3]]
    del rows[1]["prompt"][0]["content"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(json.dumps(r) + "\n" for r in rows))
    reward = tmp_path / "rew.py"
    reward.write_text("def compute_score(data_source, solution_str, ground_truth, extra_info=None):\n    return None\n")
    cases = [
        (
            [f"data.train_files={bad}"],
            f"fsdpcfg: error: data.train_files: {bad}: row 1: 'prompt' (data.prompt_key): message 0 is "
            "{'role': 'user'}, not a {'role': ..., 'content': ...} object",
        ),
        (
            ["actor_rollout_ref.model.custom_chat_template=\"{{ raise_exception('no') }}\""],
            "fsdpcfg: error: actor_rollout_ref.model.custom_chat_template: the chat template failed on row 0 of "
            f"{data_dir() / 'datasets/gsm8k/train.jsonl'}: TemplateError: no",
        ),
        (
            [f"reward.custom_reward_function.path={reward}"],
            f"fsdpcfg: error: reward.custom_reward_function.name: the reward function compute_score in {reward} "
            f"returned None on row 0 of {data_dir() / 'datasets/gsm8k/train.jsonl'} (a correct answer)",
        ),
    ]
    for extra, says in cases:
        rc = main(["preview", "+recipe=qwen_grpo", "--rows", "2", *extra])
        err = capsys.readouterr().err
        assert rc == 1 and "Traceback" not in err and says in err, err
