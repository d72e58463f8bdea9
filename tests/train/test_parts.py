"""Single-process parts of the native loop: data (chat template, left padding, truncation, sampler state), the
lr schedule, the response mask, bucketing, and model-loading errors."""

from __future__ import annotations

import json
import math

import pytest
import torch

from fsdpcfg.errors import ConfigError
from fsdpcfg.schema.actor import Optim
from fsdpcfg.schema.data import DataSection
from fsdpcfg.schema.model import ModelSection
from fsdpcfg.train.data import PromptDataset, StatefulSampler, read_rows
from fsdpcfg.train.engine.fsdp import bucketed
from fsdpcfg.train.engine.optim import lr_lambda, warmup_steps
from fsdpcfg.train.rollout.hf import response_mask_until_eos


@pytest.fixture(scope="module")
def tokenizer(tiny_model_path):
    from fsdpcfg.train.model import load_tokenizer

    return load_tokenizer(ModelSection(path=str(tiny_model_path)))


def _data_cfg(path, **kw) -> DataSection:
    """The ``data`` section (validated) of prompts in ``path``, 64 prompt tokens unless ``kw`` says otherwise."""
    return DataSection(**{"train_files": str(path), "max_prompt_length": 64, **kw})


@pytest.fixture()
def rows_file(tmp_path):
    rows = [
        {
            "data_source": "fsdpcfg/arith",
            "prompt": [{"role": "user", "content": "1+1=" + " x" * k}],
            "reward_model": {"ground_truth": "2"},
            "extra_info": {"index": k},
        }
        for k in (0, 3, 40)
    ]
    f = tmp_path / "train.jsonl"
    f.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return f


def test_chat_template_left_padding_and_truncation(tokenizer, rows_file):
    ds = PromptDataset(_data_cfg(rows_file, max_prompt_length=200), tokenizer)
    b = ds.batch([0, 1])
    lens = [len(ds.token_ids(0)), len(ds.token_ids(1))]
    assert lens[1] == lens[0] + 3 and b.input_ids.shape == (2, lens[1])
    assert b.attention_mask[0].tolist() == [0] * 3 + [1] * lens[0]  # left-padded
    assert (b.input_ids[0, :3] == tokenizer.pad_token_id).all()
    text = tokenizer.decode(ds.token_ids(0))
    assert text.endswith("<|im_start|>assistant\n")  # add_generation_prompt=True
    short = len(ds.token_ids(1))
    with pytest.raises(ConfigError, match="max_prompt_length"):
        PromptDataset(_data_cfg(rows_file, max_prompt_length=short - 1), tokenizer).token_ids(1)
    left = PromptDataset(_data_cfg(rows_file, max_prompt_length=short - 1, truncation="left"), tokenizer)
    assert left.token_ids(1) == ds.token_ids(1)[1:]
    right = PromptDataset(_data_cfg(rows_file, max_prompt_length=short - 1, truncation="right"), tokenizer)
    assert right.token_ids(1) == ds.token_ids(1)[:-1]
    filt = PromptDataset(_data_cfg(rows_file, max_prompt_length=short, filter_overlong_prompts=True), tokenizer)
    assert len(filt) == 2  # the 40-word prompt is dropped


def test_read_rows_errors(tmp_path):
    with pytest.raises(ConfigError, match="no such file"):
        read_rows(str(tmp_path / "missing.jsonl"))
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n")
    with pytest.raises(ConfigError, match="unknown file type"):
        read_rows(str(bad))


def test_parquet_rows(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(
        pa.Table.from_pylist([{"prompt": [{"role": "user", "content": "hi"}], "data_source": "x"}]),
        tmp_path / "t.parquet",
    )
    assert read_rows(str(tmp_path / "t.parquet"))[0]["prompt"][0]["content"] == "hi"


def test_sampler_epochs_drop_last_and_resume():
    s = StatefulSampler(10, 4, shuffle=True, seed=3)
    seen = [s.next_batch() for _ in range(2)]
    assert len(set(seen[0] + seen[1])) == 8  # one epoch: 2 full batches, the last 2 indices dropped
    state = s.state_dict()
    nxt = s.next_batch()  # epoch 1, a new permutation
    assert s.epoch == 1
    r = StatefulSampler(10, 4, shuffle=True, seed=3)
    r.load_state_dict(state)
    assert r.next_batch() == nxt
    with pytest.raises(ConfigError, match="batch_size"):
        StatefulSampler(10, 5, shuffle=True, seed=3).load_state_dict(state)
    assert StatefulSampler(10, 4, shuffle=False, seed=0).next_batch() == [0, 1, 2, 3]


def test_lr_schedules_as_verl():
    cfg = Optim(lr_warmup_steps=-1, lr_warmup_steps_ratio=0.2, lr_scheduler_type="constant", min_lr_ratio=0.0)
    assert cfg.num_cycles == 0.5
    assert warmup_steps(cfg, 10) == 2
    f = lr_lambda(cfg, 10)
    assert [f(s) for s in range(4)] == [0.0, 0.5, 1.0, 1.0]
    cos = lr_lambda(
        Optim(lr_scheduler_type="cosine", lr_warmup_steps=0, lr_warmup_steps_ratio=0.0, min_lr_ratio=0.1), 10
    )
    # progress p: max(0.1, 0.45 cos(pi p) + 0.55): 1.0 at 0, 0.55 at 5, 0.1 at 10
    assert cos(0) == pytest.approx(1.0) and cos(5) == pytest.approx(0.55) and cos(10) == pytest.approx(0.1)
    assert cos(2) == pytest.approx(0.45 * math.cos(math.pi * 0.2) + 0.55)


def test_response_mask_stops_after_the_first_eos():
    r = torch.tensor([[5, 9, 7, 9], [5, 6, 7, 8], [2, 5, 5, 5]])
    assert response_mask_until_eos(r, [9, 2]).tolist() == [[1, 1, 0, 0], [1, 1, 1, 1], [1, 0, 0, 0]]


def test_bucketed_respects_the_size_limit():
    pairs = [(f"t{i}", torch.zeros(2**18)) for i in range(5)]  # 1 MiB each in fp32
    buckets = list(bucketed(iter(pairs), 2.5))
    assert [len(b) for b in buckets] == [2, 2, 1]
    assert [len(b) for b in bucketed(iter(pairs), 0.1)] == [1] * 5  # oversized tensors travel alone


def test_model_path_errors_are_config_errors(tmp_path):
    from fsdpcfg.train.model import import_external_libs, load_hf_config

    with pytest.raises(ConfigError) as e:
        load_hf_config(str(tmp_path / "nope"), False)
    assert e.value.key == "actor_rollout_ref.model.path"
    with pytest.raises(ConfigError) as e:
        import_external_libs(["json", "no_such_module_fsdpcfg"])
    assert e.value.key == "actor_rollout_ref.model.external_lib"
