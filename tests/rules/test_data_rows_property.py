"""Property (issue 22 item 6): a bad row (a null or numeric message content too: a text chat template fails on it
mid-run) at any position of a training file. ``fsdpcfg check`` (FC411/FC412)
names it, with its file and row, exactly when the row lies inside the sample check reads (the first
``datafiles.SAMPLE_ROWS`` rows, at most ``SAMPLE_BYTES``); the run's loader (``PromptDataset``, which checks every
row before the first step) always refuses it, naming the row. Never a traceback from either."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fsdpcfg import datafiles
from fsdpcfg.compose import compose
from fsdpcfg.errors import ConfigError
from fsdpcfg.rules import data_files as d
from fsdpcfg.rules.context import Context
from fsdpcfg.schema.data import DataSection
from fsdpcfg.schema.model import ModelSection

#: how a row's prompt can be broken: how(row) changes the row in place (a parquet column has one type: only
#: PARQUET_FAULTS are written there)
FAULTS = {
    "no prompt": lambda row: row.pop("prompt"),
    "null prompt": lambda row: row.update(prompt=None),
    "empty list": lambda row: row.update(prompt=[]),
    "a number": lambda row: row.update(prompt=7),
    "no content": lambda row: row["prompt"][0].pop("content"),
    "null content": lambda row: row["prompt"][0].update(content=None),
    "number content": lambda row: row["prompt"][0].update(content=5),
    "no role": lambda row: row["prompt"][0].pop("role"),
    "message not an object": lambda row: row.update(prompt=["hello"]),
}
PARQUET_FAULTS = ("no prompt", "null prompt", "empty list", "no content", "null content")


def _row(i: int) -> dict:
    return {
        "data_source": "openai/gsm8k",
        "prompt": [{"role": "user", "content": f"What is {i}+1?"}],
        "reward_model": {"style": "rule", "ground_truth": str(i + 1)},
        "extra_info": {"index": i},
    }


def _write(path: Path, rows: list[dict]) -> str:
    if path.suffix == ".parquet":  # the columns of a good row (pyarrow would take the first row's keys)
        pq.write_table(pa.Table.from_pylist(rows, schema=pa.Table.from_pylist([_row(0)]).schema), path)
    else:
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


class _Base(tuple):
    """(composed main recipe, its resolved tree, a good validation file), shown short in a failure report."""

    def __repr__(self) -> str:
        return "<+recipe=qwen_grpo>"


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """The composed main recipe, its resolved tree and a good validation file (check reads both files)."""
    c = compose(["+recipe=qwen_grpo"])
    return _Base((c, c.to_container(), _write(tmp_path_factory.mktemp("val") / "v.jsonl", [_row(i) for i in range(4)])))


@pytest.fixture(scope="module")
def tokenizer(tiny_model_path):
    from fsdpcfg.train.model import load_tokenizer

    return load_tokenizer(ModelSection(path=str(tiny_model_path)))


def _check_errors(base, path: str) -> list:
    """FC411/FC412 errors of check's rules on the config with ``data.train_files=path``."""
    composed, cfg, val = base
    cfg = copy.deepcopy(cfg)
    cfg["data"]["train_files"] = path
    cfg["data"]["val_files"] = val
    ctx = Context(composed, cfg)
    return [f for fn in (d.prompt_column, d.chat_rows) for f in fn(ctx) if f.severity == "error"]


@settings(max_examples=40, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(
    n=st.integers(1, 1400),
    where=st.floats(0, 1, exclude_max=True),
    fault=st.sampled_from(sorted(FAULTS)),
    suffix=st.sampled_from([".jsonl", ".parquet"]),
)
def test_a_bad_row_anywhere_is_named_by_check_inside_its_sample_and_always_by_the_run(
    base, tokenizer, tmp_path_factory, n, where, fault, suffix
):
    if suffix == ".parquet" and fault not in PARQUET_FAULTS:
        fault = PARQUET_FAULTS[len(fault) % len(PARQUET_FAULTS)]
    p = int(where * n)
    rows = [_row(i) for i in range(n)]
    FAULTS[fault](rows[p])
    path = _write(tmp_path_factory.mktemp("rows") / f"train{suffix}", rows)
    sample = len(datafiles.peek(path, datafiles.SAMPLE_ROWS, max_bytes=datafiles.SAMPLE_BYTES).rows)

    found = _check_errors(base, path)
    if p < sample:
        assert [f.rule for f in found] in (["FC411"], ["FC412"]), (fault, p, found)
        no_column = f"{path} has no column 'prompt'"  # no row has one (a file of one row, here)
        assert f"row {p} of {path}" in found[0].message or (n == 1 and no_column in found[0].message), found[0]
    else:  # past what check reads: the run's to find
        assert found == [], (fault, p, sample, found)

    from fsdpcfg.train.data import PromptDataset

    with pytest.raises(ConfigError) as e:
        PromptDataset(DataSection(train_files=path, max_prompt_length=64), tokenizer)
    assert f"row {p}" in e.value.message, e.value.message
    if p > 0:  # the first row is read for its keys before the others: that message names the key instead
        assert path in e.value.message or path in str(getattr(e.value, "path", "")), e.value.message
