"""FC410-FC414: data files opened in `check` (first rows, row count), with small parquet/jsonl files written here;
and the native run's reader (one reader for both) failing with one fsdpcfg message on a corrupt file."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from rule_helpers import errors, run, warnings

from fsdpcfg import datafiles
from fsdpcfg.check import check_overrides
from fsdpcfg.errors import ConfigError
from fsdpcfg.rules import data_files as d


def _row(i: int = 0, **over) -> dict:
    row = {
        "data_source": "openai/gsm8k",
        "prompt": [{"role": "user", "content": f"What is {i}+1?"}],
        "ability": "math",
        "reward_model": {"style": "rule", "ground_truth": str(i + 1)},
        "extra_info": {"split": "train", "index": i},
    }
    row.update(over)
    return {k: v for k, v in row.items() if v is not None}


def _parquet(path, rows):
    pq.write_table(pa.Table.from_pylist(rows), path)
    return str(path)


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def _on(train, *extra, val=None):
    """Overrides putting ``train`` (and ``val``, default the train file) in the config."""
    return (f"data.train_files={train}", f"data.val_files={val or train}", *extra)


# -- the reader ---------------------------------------------------------------------------------------
def test_peek_reads_the_head_and_the_count_of_parquet_and_jsonl(tmp_path):
    rows = [_row(i) for i in range(10)]
    for path in (_parquet(tmp_path / "t.parquet", rows), _jsonl(tmp_path / "t.jsonl", rows)):
        head = datafiles.peek(path, 3)
        assert head.rows == rows[:3] and head.num_rows == 10 and head.exact
        assert head.columns == ["data_source", "prompt", "ability", "reward_model", "extra_info"]
        assert datafiles.read_rows(path) == rows
        assert datafiles.read_rows(path, 4) == rows[:4]
    (tmp_path / "arr.json").write_text(json.dumps(rows))
    assert datafiles.peek(str(tmp_path / "arr.json"), 2).num_rows == 10
    assert datafiles.read_rows(str(tmp_path / "arr.json")) == rows


def test_peek_reads_one_row_group_of_a_large_parquet(tmp_path):
    """Only the first batch is decoded: the metadata gives the count of 50,000 rows."""
    path = tmp_path / "big.parquet"
    pq.write_table(pa.Table.from_pylist([_row(i) for i in range(50_000)]), path, row_group_size=1000)
    head = datafiles.peek(str(path), 4)
    assert head.num_rows == 50_000 and len(head.rows) == 4 and head.rows[3] == _row(3)


@pytest.mark.parametrize(
    "name, content, problem, words",
    [
        ("empty.parquet", b"", "empty", "empty (0 bytes)"),
        ("corrupt.parquet", b"PAR1 this is not parquet at all", "corrupt", "not a readable parquet file"),
        ("text.parquet", b'{"prompt": "x"}\n', "corrupt", "not a readable parquet file"),
        ("bad.jsonl", b'{"prompt": [}\n', "corrupt", "line 1 is not JSON"),
        ("blank.jsonl", b"\n\n", "empty", "no rows"),
        ("list.jsonl", b"[1, 2]\n", "format", "must be a JSON object, got list"),
        ("data.csv", b"a,b\n1,2\n", "format", "unknown file type '.csv'"),
    ],
)
def test_bad_files_are_data_file_errors_naming_the_file(tmp_path, name, content, problem, words):
    path = tmp_path / name
    path.write_bytes(content)
    for read in (lambda: datafiles.peek(str(path)), lambda: datafiles.read_rows(str(path))):
        with pytest.raises(datafiles.DataFileError) as e:
            read()
        assert e.value.problem == problem and words in str(e.value) and str(path) in str(e.value)
        assert e.value.key == "data.train_files" and e.value.fix


def test_parquet_with_a_schema_and_no_rows_is_empty(tmp_path):
    path = tmp_path / "none.parquet"
    pq.write_table(pa.Table.from_pylist([_row()]).slice(0, 0), path)
    for read in (datafiles.peek, datafiles.read_rows):
        with pytest.raises(datafiles.DataFileError, match="holds no rows") as e:
            read(str(path))
        assert e.value.problem == "empty"


def test_truncated_parquet_fails_in_the_run_reader_with_one_message(tmp_path):
    """A file cut short after check (a copy still in progress): the native run's read_rows raises ConfigError,
    not a pyarrow traceback."""
    from fsdpcfg.train.data import read_rows as train_read_rows

    good = _parquet(tmp_path / "good.parquet", [_row(i) for i in range(100)])
    cut = tmp_path / "cut.parquet"
    cut.write_bytes(Path(good).read_bytes()[:-200])
    with pytest.raises(ConfigError, match="cut.parquet: not a readable parquet file"):
        train_read_rows(str(cut))
    assert train_read_rows is datafiles.read_rows


# -- FC410 ---------------------------------------------------------------------------------------------
def test_fc410_corrupt_and_empty_files_are_errors_in_check(tmp_path):
    corrupt = tmp_path / "train.parquet"
    corrupt.write_bytes(b"garbage" * 10)
    empty = tmp_path / "val.jsonl"
    empty.write_text("")
    found = errors(run(d.files_readable, *_on(corrupt, val=empty)), "FC410")
    assert [f.keys for f in found] == [["data.train_files"], ["data.val_files"]]
    assert f"{corrupt}: not a readable parquet file" in found[0].message
    assert f"{empty}: the file is empty (0 bytes)" in found[1].message


def test_fc410_missing_val_file_is_an_info(tmp_path):
    good = _jsonl(tmp_path / "t.jsonl", [_row()])
    found = run(d.files_readable, *_on(good, val=tmp_path / "no.jsonl"))
    assert [(f.severity, f.keys) for f in found] == [("info", ["data.val_files"])]


def test_fc410_good_files_pass_in_the_whole_check(tmp_path):
    rows = [_row(i) for i in range(8)]
    f = check_overrides(["+recipe=qwen_grpo", *_on(_parquet(tmp_path / "t.parquet", rows))])
    assert not [x for x in f if x.rule.startswith("FC41") or x.rule == "FC408"], f


def test_fc410_verl_sft_reads_parquet_only(tmp_path):
    rows = [{"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}] * 8
    jl = _jsonl(tmp_path / "s.jsonl", rows)
    pa_ = _parquet(tmp_path / "s.parquet", rows)
    base = ["+recipe=qwen_sft", "launcher=verl"]
    got = [x for x in check_overrides([*base, f"data.train_files={jl}"]) if x.rule == "FC410"]
    assert len(got) == 1 and "pandas.read_parquet" in got[0].message and got[0].severity == "error"
    assert not [x for x in check_overrides([*base, f"data.train_files={pa_}"]) if x.rule == "FC410"]
    # the native SFT loader reads JSON Lines
    assert not [x for x in check_overrides(["+recipe=qwen_sft", f"data.train_files={jl}"]) if x.rule == "FC410"]


# -- FC411 / FC412 -------------------------------------------------------------------------------------
def test_fc411_prompt_less_file(tmp_path):
    rows = [{"question": "What is 1+1?", "data_source": "x", "reward_model": {"ground_truth": "2"}}]
    path = _parquet(tmp_path / "t.parquet", rows)
    found = errors(run(d.prompt_column, *_on(path)), "FC411")
    assert len(found) == 2  # train and val
    assert (
        "has no column 'prompt' (data.prompt_key); its columns: question, data_source, reward_model" in found[0].message
    )
    assert not run(d.prompt_column, *_on(path, "data.prompt_key=question"))


def test_fc411_sft_messages_key(tmp_path):
    path = _jsonl(tmp_path / "s.jsonl", [{"conversations": [{"role": "user", "content": "q"}]}])
    f = [x for x in check_overrides(["+recipe=qwen_sft", f"data.train_files={path}"]) if x.rule == "FC411"]
    assert len(f) == 1 and "no column 'messages' (data.messages_key)" in f[0].message


def test_fc412_plain_string_prompts(tmp_path):
    path = _jsonl(tmp_path / "t.jsonl", [_row(prompt="What is 1+1?")])
    native = run(d.chat_rows, *_on(path))
    assert {f.severity for f in native} == {"warning"} and "a plain string" in native[0].message
    verl = run(d.chat_rows, *_on(path, "launcher=verl", "rollout=vllm"))
    assert verl and {f.severity for f in verl} == {"error"}


def test_fc412_messages_without_role(tmp_path):
    path = _parquet(tmp_path / "t.parquet", [_row(prompt=[{"text": "hi"}])])
    found = errors(run(d.chat_rows, *_on(path)), "FC412")
    assert found and "message 0 is {'text': 'hi'}, not a {'role': ..., 'content': ...} object" in found[0].message


def test_fc412_sft_without_assistant_turn_is_a_warning(tmp_path):
    path = _jsonl(tmp_path / "s.jsonl", [{"messages": [{"role": "user", "content": "q"}]}] * 8)
    f = [x for x in check_overrides(["+recipe=qwen_sft", f"data.train_files={path}"]) if x.rule == "FC412"]
    assert len(f) == 1 and f[0].severity == "warning" and "no assistant message" in f[0].message


# -- FC413 ---------------------------------------------------------------------------------------------
def test_fc413_rows_without_ground_truth_or_data_source(tmp_path):
    path = _parquet(tmp_path / "t.parquet", [_row(reward_model=None, data_source=None)])
    found = errors(run(d.reward_fields, *_on(path)), "FC413")
    assert (
        found
        and "has no 'data_source' (data.reward_fn_key) and no 'reward_model': {'ground_truth': ...}" in found[0].message
    )
    # a reward model scores the samples: the rule fields are not read
    assert not run(d.reward_fields, *_on(path, "reward.reward_model.enable=true"))


# -- FC414 ---------------------------------------------------------------------------------------------
def test_fc414_fewer_rows_than_one_batch(tmp_path):
    path = _parquet(tmp_path / "t.parquet", [_row(i) for i in range(3)])
    found = errors(run(d.rows_for_steps, *_on(path)), "FC414")  # qwen_grpo: train_batch_size 4
    assert len(found) == 1 and "holds 3 rows" in found[0].message and "data.train_batch_size=4" in found[0].message
    big = _parquet(tmp_path / "b.parquet", [_row(i) for i in range(40)])
    assert not run(d.rows_for_steps, *_on(big))
    # train_max_samples counts
    found = errors(run(d.rows_for_steps, *_on(big, "data.train_max_samples=2")), "FC414")
    assert found and "holds 2 rows" in found[0].message


def test_fc414_steps_past_the_epochs_under_verl(tmp_path):
    path = _jsonl(tmp_path / "t.jsonl", [_row(i) for i in range(40)])  # 10 batches of 4
    ov = (*_on(path), "launcher=verl", "rollout=vllm", "trainer.total_training_steps=25", "trainer.total_epochs=2")
    found = warnings(run(d.rows_for_steps, *ov), "FC414")
    assert (
        len(found) == 1
        and "40 rows // 4 = 10 batches per epoch x trainer.total_epochs=2 = 20 steps" in found[0].message
        and "at least 3" in found[0].fix
    )
    assert not run(d.rows_for_steps, *ov[:-1], "trainer.total_epochs=3")
    # the native loop runs further epochs
    assert not run(d.rows_for_steps, *_on(path), "trainer.total_training_steps=25", "trainer.total_epochs=2")


def test_check_does_not_read_a_whole_jsonl_file(tmp_path, monkeypatch):
    """Only the head is parsed: json.loads is called for the first rows, not for every line."""
    path = _jsonl(tmp_path / "t.jsonl", [_row(i) for i in range(2000)])
    calls = []
    real = json.loads
    monkeypatch.setattr(datafiles.json, "loads", lambda s, *a, **k: calls.append(1) or real(s, *a, **k))
    d._peek_cached.cache_clear()
    head = datafiles.peek(path, 4)
    assert head.num_rows == 2000 and len(calls) == 4


def test_run_script_data_rules_read_only_the_files_the_script_names(tmp_path):
    """A verl run script that does not set data.train_files reads verl's default path, not fsdpcfg's shipped
    data: no data-file finding for it. One that names a 3-row file with a batch of 1024 gets FC414."""
    from fsdpcfg.check.sources import check_run_script

    base = (
        "python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo data.train_batch_size=1024 "
        "actor_rollout_ref.rollout.name=vllm actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4 "
        "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4 "
        "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=4 trainer.n_gpus_per_node=8"
    )
    plain = tmp_path / "run.sh"
    plain.write_text(f"#!/bin/bash\n{base} $@\n")
    rules = {f.rule for c in check_run_script(plain) for f in c.findings}
    assert not rules & {"FC410", "FC411", "FC412", "FC413", "FC414"}, rules
    small = _parquet(tmp_path / "t.parquet", [_row(i) for i in range(3)])
    named = tmp_path / "run_named.sh"
    named.write_text(f"#!/bin/bash\n{base} data.train_files={small} data.val_files={small}\n")
    found = [f for c in check_run_script(named) for f in c.findings if f.rule == "FC414"]
    assert len(found) == 1 and "holds 3 rows" in found[0].message


# -- a bounded sample beyond the first rows (issue 22 item 5) -------------------------------------------------
def _bad_at(rows, n, fault):
    rows = json.loads(json.dumps(rows))
    if fault == "no prompt":
        del rows[n]["prompt"]
    elif fault == "no content":
        del rows[n]["prompt"][0]["content"]
    else:
        rows[n]["prompt"] = None
    return rows


@pytest.mark.parametrize(
    "fault, suffix, rule, says",
    [
        ("no prompt", "jsonl", "FC411", "row 700 of {path} has no 'prompt' (data.prompt_key)"),
        ("no content", "jsonl", "FC412", "row 700 of {path}: 'prompt' is message 0 is {{'role': 'user'}}, not a"),
        ("null prompt", "parquet", "FC412", "row 700 of {path}: 'prompt' is NoneType None, not a non-empty list"),
    ],
)
def test_a_bad_row_past_the_head_names_the_file_and_row(tmp_path, fault, suffix, rule, says):
    rows = _bad_at([_row(i) for i in range(1200)], 700, fault)
    path = (_jsonl if suffix == "jsonl" else _parquet)(tmp_path / f"t.{suffix}", rows)
    found = [f for f in check_overrides(["+recipe=qwen_grpo", f"data.train_files={path}"]) if f.severity == "error"]
    assert [f.rule for f in found] == [rule], found
    assert (
        found[0].message == f"data.train_files: {says.format(path=path)}" or says.format(path=path) in found[0].message
    )


def test_sft_rows_past_the_head_are_checked(tmp_path):
    conv = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]
    rows = [{"messages": json.loads(json.dumps(conv))} for _ in range(300)]
    del rows[250]["messages"][1]["content"]
    rows[260] = {"other": 1}
    path = _jsonl(tmp_path / "s.jsonl", rows)
    found = sorted(
        (f.rule, f.message)
        for f in check_overrides(["+recipe=qwen_sft", f"data.train_files={path}"])
        if f.severity == "error"
    )
    assert found == [
        (
            "FC411",
            f"data.train_files: row 260 of {path} has no 'messages' (data.messages_key); the dataset reads it "
            "from every row",
        ),
        (
            "FC412",
            f"data.train_files: row 250 of {path}: 'messages' is message 1 is {{'role': 'assistant'}}, not a "
            "{'role': ..., 'content': ...} object",
        ),
    ]


def test_the_sample_is_bounded_by_rows_and_bytes(tmp_path):
    """check reads at most SAMPLE_ROWS rows, and stops once the rows read hold SAMPLE_BYTES: a bad row past
    either bound is the run's to find (it checks every row when it loads them)."""
    rows = [_row(i) for i in range(datafiles.SAMPLE_ROWS + 10)]
    path = _jsonl(tmp_path / "t.jsonl", _bad_at(rows, datafiles.SAMPLE_ROWS, "no prompt"))
    d._peek_cached.cache_clear()
    head = datafiles.peek(path, datafiles.SAMPLE_ROWS, max_bytes=datafiles.SAMPLE_BYTES)
    assert len(head.rows) == datafiles.SAMPLE_ROWS == 1000 and head.num_rows == 1010
    assert not errors(run(d.prompt_column, *_on(path)))
    big = [_row(i, ability="x" * 10_000) for i in range(200)]  # ~10 KB a row: 1 MiB after 105 rows
    path = _jsonl(tmp_path / "big.jsonl", big)
    line = len(json.dumps(big[0])) + 1
    assert len(datafiles.peek(path, 1000, max_bytes=datafiles.SAMPLE_BYTES).rows) == -(-(1 << 20) // line)
    pq_path = _parquet(tmp_path / "big.parquet", big)
    assert len(datafiles.peek(pq_path, 1000, max_bytes=datafiles.SAMPLE_BYTES).rows) < 200


@pytest.mark.parametrize("value, says", [("", "is empty (''): no data file to read"), ("[]", "is empty ([])")])
@pytest.mark.parametrize("recipe", ["qwen_grpo", "qwen_sft"])
def test_empty_train_files_is_an_error_in_check_as_in_the_run(recipe, value, says):
    found = [f for f in check_overrides([f"+recipe={recipe}", f"data.train_files={value}"]) if f.severity == "error"]
    assert [(f.rule, f.keys) for f in found] == [("FC410", ["data.train_files"])]
    assert found[0].message == f"data.train_files {says}" or found[0].message.startswith(f"data.train_files {says}")
    with pytest.raises(ConfigError) as e:
        datafiles.read_rows("" if value == "" else [])
    assert "data.train_files is empty: no data file to read" in str(e.value)


def test_deeply_nested_json_row_is_a_data_file_error(tmp_path):
    path = tmp_path / "deep.jsonl"
    path.write_text(json.dumps(_row(0)) + "\n" + "[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(datafiles.DataFileError) as e:
        datafiles.read_rows(str(path))
    assert f"{path}: line 2 is not JSON (maximum recursion depth exceeded" in str(e.value)
