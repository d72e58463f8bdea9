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
