"""One atomic writer (:func:`fsdpcfg.paths.atomic_write_bytes`, which :func:`~fsdpcfg.paths.atomic_write_text`
calls) and one atomic folder publish
(:func:`fsdpcfg.paths.publish_folder`): no other module renames over a path or fsyncs a file it wrote."""

import ast
from pathlib import Path

import pytest

from fsdpcfg import paths

ROOT = Path(__file__).resolve().parents[1] / "fsdpcfg"

#: "module:function" -> why it calls os.replace/os.rename/os.fsync itself.
ALLOWED = {
    "paths.py:atomic_write_bytes": "the writer (atomic_write_text encodes and calls it)",
    "paths.py:fsync_file": "the writer's flush",
    "paths.py:fsync_folder": "the writer's flush",
    "paths.py:publish_folder": "the folder publish",
    "train/checkpoint.py:save_checkpoint": "pruning renames a checkpoint to *.deleting, then removes it",
    "runinfo/lock.py:write_record": "rewrites the held lock file in place (the flock'd inode must stay)",
    "runinfo/faults.py:require_writable": "the disk probe: writes, flushes and deletes a scratch file",
    "doctor/worker.py:write": "appends one event to a rank's log and flushes it",
}


def _calls() -> set[str]:
    out = set()
    for path in sorted(ROOT.rglob("*.py")):
        for fn in ast.walk(ast.parse(path.read_text())):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for n in ast.walk(fn):
                if (
                    isinstance(n, ast.Call)
                    and isinstance(n.func, ast.Attribute)
                    and isinstance(n.func.value, ast.Name)
                    and n.func.value.id == "os"
                    and n.func.attr in ("replace", "rename", "fsync")
                    and not any(  # the innermost function owns the call
                        isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) and m is not fn and n in ast.walk(m)
                        for m in ast.walk(fn)
                    )
                ):
                    out.add(f"{path.relative_to(ROOT).as_posix()}:{fn.name}")
    return out


def test_no_second_atomic_writer():
    found = _calls()
    assert sorted(found - set(ALLOWED)) == [], (
        "write through fsdpcfg.paths.atomic_write_text (or _bytes) / publish_folder"
    )
    assert sorted(set(ALLOWED) - found) == [], "an allowed function is gone or renamed: drop it from ALLOWED"


def test_publish_folder_replaces_the_old_folder(tmp_path):
    final, tmp = tmp_path / "out", tmp_path / ".tmp-out"
    final.mkdir()
    (final / "a").write_text("old")
    tmp.mkdir()
    (tmp / "b").write_text("new")
    assert paths.publish_folder(tmp, final, tmp_path / ".old-out") == final
    assert sorted(p.name for p in final.iterdir()) == ["b"] and not tmp.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    tmp.mkdir()
    with pytest.raises(OSError):
        paths.publish_folder(tmp_path / "missing", tmp_path / "x", tmp_path / ".old-x")
