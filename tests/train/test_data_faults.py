"""Corrupt training data stops the run with a message naming data.train_files, the file and the line (issue 14
item 8), not a pyarrow or json traceback (fsdpcfg/datafiles.py::read_rows, the reader check uses too)."""

from __future__ import annotations

import pytest

from fsdpcfg.errors import ConfigError
from fsdpcfg.train.data import read_rows


@pytest.mark.parametrize(
    "name, content, says",
    [
        ("bad.parquet", b"PAR1 not really parquet", "not a readable parquet file (Parquet magic bytes not found"),
        ("empty.parquet", b"", "the file is empty (0 bytes)"),
        ("bad.jsonl", b'{"prompt": []}\n{"prompt": [\n', "line 2 is not JSON ("),
        ("list.jsonl", b'{"prompt": []}\n[1, 2]\n', "line 2: a row must be a JSON object, got list"),
        ("latin1.jsonl", b'{"prompt": "caf\xe9"}\n', "line 1 is not JSON ('utf-8' codec can't decode byte 0xe9"),
    ],
)
def test_corrupt_data_file_is_a_config_error_naming_it(tmp_path, name, content, says):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(ConfigError) as e:
        read_rows(str(path))
    assert e.value.key == "data.train_files" and str(e.value).startswith(f"data.train_files: {path}")
    assert says in str(e.value)
    assert e.value.fix.startswith(("regenerate the file", "repair the line", "write one JSON object per line"))


# -- bad rows anywhere, a chat template that raises (issue 22 item 5) ---------------------------------------------
import json  # noqa: E402

ROW = {
    "data_source": "openai/gsm8k",
    "prompt": [{"role": "user", "content": "What is 1+1?"}],
    "reward_model": {"ground_truth": "2"},
}
RAISES_ON_WENG = (
    "{% for m in messages %}{% if 'Weng' in m['content'] %}{{ raise_exception('no Weng here') }}{% endif %}"
    "{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}{% if add_generation_prompt %}assistant: {% endif %}"
)


@pytest.fixture(scope="module")
def tok(tiny_model_path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model_path)


def _files(tmp_path, rows, n_files=2):
    """``rows`` split over ``n_files`` JSON Lines files; returns their paths."""
    per = -(-len(rows) // n_files)
    paths = []
    for k in range(n_files):
        p = tmp_path / f"part{k}.jsonl"
        p.write_text("".join(json.dumps(r) + "\n" for r in rows[k * per : (k + 1) * per]))
        paths.append(str(p))
    return paths


def _prompts(files, tok, **data):
    from fsdpcfg.schema.data import DataSection
    from fsdpcfg.train.data import PromptDataset

    base = {"train_files": files, "prompt_key": "prompt", "max_prompt_length": 512, "truncation": "error"}
    base |= {"apply_chat_template_kwargs": {}, "train_max_samples": -1, "filter_overlong_prompts": False}
    return PromptDataset(DataSection.model_construct(**{**base, **data}), tok)


@pytest.mark.parametrize(
    "fault, says",
    [
        ("no prompt", "missing"),
        ("no content", "message 0 is {'role': 'user'}, not a {'role': ..., 'content': ...} object"),
        ("not a list", "int 7, not a non-empty list of chat messages"),
    ],
)
def test_a_bad_row_anywhere_stops_the_run_at_load_naming_file_and_row(tmp_path, tok, fault, says):
    """Past check's sample (1,000 rows), in the second file: the run checks every row when it loads them."""
    rows = [json.loads(json.dumps(ROW)) for _ in range(4000)]
    bad = rows[3400]  # row 1400 of the second file
    if fault == "no prompt":
        del bad["prompt"]
    elif fault == "no content":
        del bad["prompt"][0]["content"]
    else:
        bad["prompt"] = 7
    files = _files(tmp_path, rows)
    with pytest.raises(ConfigError) as e:
        _prompts(files, tok)
    assert e.value.key == "data.train_files"
    assert e.value.message == f"{files[1]}: row 1400: 'prompt' (data.prompt_key): {says}"
    assert e.value.fix.startswith('write \'prompt\' in every row as [{"role": "user", "content": ...}')


def test_a_chat_template_that_raises_on_a_row_names_the_row_and_the_key(tmp_path, tok):
    rows = [json.loads(json.dumps(ROW)) for _ in range(10)]
    rows[7]["prompt"][0]["content"] = "Weng earns $12 an hour."
    files = _files(tmp_path, rows)
    tok.chat_template, saved = RAISES_ON_WENG, tok.chat_template
    try:
        ds = _prompts(files, tok)
        assert ds.batch([0, 1, 2]).input_ids.shape[0] == 3  # the other rows render
        with pytest.raises(ConfigError) as e:
            ds.batch([7, 2])  # row 2 of the second file
        assert e.value.key == "actor_rollout_ref.model.custom_chat_template"
        assert e.value.message == f"the chat template failed on row 2 of {files[1]}: TemplateError: no Weng here"
        with pytest.raises(ConfigError, match=r"failed on row 2 of .*part1.jsonl: TemplateError: no Weng here"):
            _prompts(files, tok, filter_overlong_prompts=True)  # rendered at load to measure every prompt
        tok.chat_template = "{{ raise_exception('x') }}"
        rows[7]["prompt"][0]["content"] = "fine"
        ds = _prompts(_files(tmp_path, rows), tok, filter_overlong_prompts=False)
        with pytest.raises(ConfigError, match=r"failed on row 0 of .*part0.jsonl: TemplateError: x\n"):
            ds.batch([0])
    finally:
        tok.chat_template = saved


def test_after_filtering_a_row_is_still_named_by_its_place_in_the_file(tmp_path, tok):
    rows = [json.loads(json.dumps(ROW)) for _ in range(6)]
    rows[1]["prompt"][0]["content"] = "long " * 600  # filtered out (over 512 tokens)
    ds = _prompts(_files(tmp_path, rows, 1), tok, filter_overlong_prompts=True)
    assert len(ds) == 5 and ds.where(1) == f"row 2 of {tmp_path / 'part0.jsonl'}"


def test_sft_rows_and_templates_name_file_and_row(tmp_path, tok):
    from fsdpcfg.schema.sft import SftData
    from fsdpcfg.train.sft.dataset import SFTDataset

    conv = {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}
    rows = [json.loads(json.dumps(conv)) for _ in range(3000)]
    del rows[2500]["messages"][1]["content"]
    files = _files(tmp_path, rows)

    def ds(files):
        return SFTDataset(SftData(train_files=files, max_length=1024, truncation="error"), tok)

    with pytest.raises(ConfigError) as e:
        ds(files)
    assert e.value.message == (
        f"{files[1]}: row 1000: 'messages' (data.messages_key): message 1 is {{'role': 'assistant'}}, not a "
        "{'role': ..., 'content': ...} object"
    )
    rows[2500] = json.loads(json.dumps(conv))
    rows[2600]["messages"][0]["content"] = "Weng?"
    files = _files(tmp_path, rows)
    tok.chat_template, saved = RAISES_ON_WENG, tok.chat_template
    try:
        d = ds(files)
        with pytest.raises(ConfigError) as e:
            d[2600]
        assert e.value.key == "model.custom_chat_template"
        assert e.value.message == f"the chat template failed on row 1100 of {files[1]}: TemplateError: no Weng here"
        tok.chat_template = "{{ raise_exception('x') }}"
        with pytest.raises(ConfigError) as e:
            ds(files)
        assert e.value.message == "the chat template failed on a one-message conversation ([user '']): TemplateError: x"
    finally:
        tok.chat_template = saved
