"""Offline model-path inspection: info in check, error at launch (../shared/cases/README.md)."""

from __future__ import annotations

import json

import pytest

from fsdpcfg.errors import ConfigError
from fsdpcfg.schema import model_path_status, require_model_path


def test_folder_with_config(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "qwen2"}))
    st = model_path_status(str(tmp_path))
    assert st.kind == "folder" and st.inspectable and st.local == tmp_path


def test_folder_without_config_is_incomplete(tmp_path):
    (tmp_path / "tokenizer_config.json").write_text("{}")
    st = model_path_status(str(tmp_path))
    assert st.kind == "incomplete" and "tokenizer_config.json" in st.detail
    with pytest.raises(ConfigError, match="no config.json"):
        require_model_path(str(tmp_path))


def test_hub_id_uses_the_local_cache_only(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    from fsdpcfg.schema import model as model_schema

    assert model_path_status("Org/Model-1.5B").kind == "hub_id"
    monkeypatch.setattr(model_schema, "hub_reachable", lambda timeout_s=3.0: True)
    assert require_model_path("Org/Model-1.5B").kind == "hub_id"  # the hub may be used at launch
    monkeypatch.setattr(model_schema, "hub_reachable", lambda timeout_s=3.0: False)
    with pytest.raises(ConfigError, match="cannot be reached.*\n.*model=tiny_qwen2"):
        require_model_path("Org/Model-1.5B")  # online, but the hub does not answer (this machine)
    with pytest.raises(ConfigError, match="model=tiny_qwen2"):
        require_model_path("Org/Model-1.5B", offline=True)
    snap = tmp_path / "models--Org--Model-1.5B" / "snapshots" / "abc123"
    snap.mkdir(parents=True)
    (snap / "config.json").write_text("{}")
    st = model_path_status("Org/Model-1.5B")
    assert st.kind == "hub_cached" and st.local == snap
    assert require_model_path("Org/Model-1.5B", offline=True) == st


@pytest.mark.parametrize(
    "path,kind",
    [
        ("/no/such/cluster/path", "missing"),
        ("~/models/x-7b", "missing"),
        ("not a model", "invalid"),
        ("a/b/c", "missing"),
        ("", "invalid"),
        ("gpt2-nonexistent-legacy", "hub_id"),
    ],
)
def test_unreachable(path, kind, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    assert model_path_status(path).kind == kind
    with pytest.raises(ConfigError):
        require_model_path(path, offline=kind == "hub_id")
