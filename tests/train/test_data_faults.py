"""Corrupt training data stops the run with a message naming data.train_files, the file and the line (issue 14
item 8), not a pyarrow or json traceback (fsdpcfg/train/data.py::read_rows)."""

from __future__ import annotations

import pytest

from fsdpcfg.errors import ConfigError
from fsdpcfg.train.data import read_rows


@pytest.mark.parametrize("name, content, says", [
    ("bad.parquet", b"PAR1 not really parquet", "cannot be read as parquet (ArrowInvalid: "),
    ("empty.parquet", b"", "cannot be read as parquet ("),
    ("bad.jsonl", b'{"prompt": []}\n{"prompt": [\n', ":2: not JSON ("),
    ("list.jsonl", b'{"prompt": []}\n[1, 2]\n', ":2: a list, not a JSON object"),
    ("latin1.jsonl", b'{"prompt": "caf\xe9"}\n', "not UTF-8 text ("),
])
def test_corrupt_data_file_is_a_config_error_naming_it(tmp_path, name, content, says):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(ConfigError) as e:
        read_rows(str(path))
    assert e.value.key == "data.train_files" and str(e.value).startswith(f"data.train_files: {path}")
    assert says in str(e.value)
    assert f"repair or re-create {path}" in e.value.fix
