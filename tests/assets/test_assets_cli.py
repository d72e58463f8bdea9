"""``fsdpcfg assets build|list`` and the build store: idempotence, atomic folders, errors."""

from __future__ import annotations

import pytest

from fsdpcfg import assets
from fsdpcfg.assets import _store
from fsdpcfg.cli.main import main


def test_build_name_then_list_then_skip(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FSDPCFG_HOME", str(tmp_path))
    assert main(["assets", "build", "--name", "qwen-v1-config"]) == 0
    assert "built" in capsys.readouterr().out
    assert assets.is_complete("qwen-v1-config")
    assert main(["assets", "build", "--name", "qwen-v1-config"]) == 0
    assert "up to date" in capsys.readouterr().out
    assert main(["assets", "list"]) == 0
    out = capsys.readouterr().out
    assert any(line.startswith("qwen-v1-config") and " built " in line for line in out.splitlines())
    assert any(line.startswith("tiny-qwen2 ") and " missing " in line for line in out.splitlines())


def test_cli_errors_without_traceback(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("FSDPCFG_HOME", str(tmp_path))
    assert main(["assets", "build", "--name", "tiny-qwen"]) == 1
    err = capsys.readouterr().err
    assert "unknown offline asset 'tiny-qwen'" in err and "Traceback" not in err
    assert main(["assets"]) == 2
    assert main(["assets", "build", "--all", "--name", "tiny-qwen2"]) == 2


def test_interrupted_build_leaves_no_folder(tmp_path, monkeypatch):
    """A build that fails half way leaves neither the final folder nor its temporary one."""
    monkeypatch.setenv("FSDPCFG_HOME", str(tmp_path))

    def boom(spec, tmp):
        (tmp / "config.json").write_text("{}")
        raise KeyboardInterrupt

    monkeypatch.setattr(assets, "_build_into", boom)
    with pytest.raises(KeyboardInterrupt):
        assets.build("qwen-v1-config", verbose=False)
    assert list((tmp_path / "models").iterdir()) == [tmp_path / "models" / ".qwen-v1-config.lock"]
    assert not assets.is_complete("qwen-v1-config")


def test_folder_without_manifest_is_rebuilt(tmp_path, monkeypatch):
    monkeypatch.setenv("FSDPCFG_HOME", str(tmp_path))
    half = assets.asset_path("qwen-v1-config")
    half.mkdir(parents=True)
    (half / "config.json").write_text("{}")
    assert not assets.is_complete("qwen-v1-config")
    path = assets.ensure("qwen-v1-config", verbose=False)
    assert _store.read_manifest(path)["name"] == "qwen-v1-config"
    assert '"model_type": "qwen"' in (path / "config.json").read_text()
