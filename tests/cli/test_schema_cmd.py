"""``fsdpcfg schema``: write, check and print the JSON Schema files."""

from __future__ import annotations

import json
from pathlib import Path

from fsdpcfg.cli.main import main


def test_schema_writes_then_checks(tmp_path: Path, capsys):
    assert main(["schema", "--check", "--out", str(tmp_path)]) == 1
    assert "stale schema files" in capsys.readouterr().out
    assert main(["schema", "--out", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "fsdpcfg.schema.json",
        "fsdpcfg.sft.schema.json",
        "fsdpcfg.sft.strict.schema.json",
        "fsdpcfg.strict.schema.json",
    ]
    assert main(["schema", "--check", "--out", str(tmp_path)]) == 0
    (tmp_path / "fsdpcfg.schema.json").write_text("{}\n")
    assert main(["schema", "--check", "--out", str(tmp_path)]) == 1
    assert "fsdpcfg.schema.json" in capsys.readouterr().out


def test_schema_print(capsys):
    assert main(["schema", "--print", "fsdpcfg.schema.json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["$schema"].endswith("2020-12/schema")
    assert "required" not in doc and doc["additionalProperties"] is False
    assert main(["schema", "--print", "nope.json"]) == 2
    assert "choose one of: fsdpcfg.schema.json" in capsys.readouterr().err
