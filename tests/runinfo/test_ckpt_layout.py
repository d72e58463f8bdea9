"""Which checkpoint folder counts as complete (torch-free, fsdpcfg/native/ckpt_layout.py)."""

from __future__ import annotations

import json

from fsdpcfg.native.ckpt_layout import complete_checkpoints, find_resume_folder, is_complete
from fsdpcfg.schema.trainer import TrainerSection


def _ckpt(root, step, files=("model.safetensors",), manifest=True, world=2):
    d = root / f"global_step_{step}"
    d.mkdir(parents=True)
    for f in files:
        (d / f).write_bytes(b"x" * 10)
    if manifest:
        (d / "MANIFEST.json").write_text(
            json.dumps({"step": step, "world_size": world, "files": list(files), "sizes": {f: 10 for f in files}})
        )
    return d


def test_manifest_and_listed_files_make_a_checkpoint_complete(tmp_path):
    one = _ckpt(tmp_path, 1)
    two = _ckpt(tmp_path, 2, manifest=False)  # killed before the manifest
    three = _ckpt(tmp_path, 3)
    (three / "model.safetensors").unlink()  # a pruning killed half-way
    four = _ckpt(tmp_path, 4)
    (four / "model.safetensors").write_bytes(b"x")  # truncated
    (tmp_path / "global_step_5.tmp").mkdir()
    assert is_complete(one) and not is_complete(two) and not is_complete(three) and not is_complete(four)
    assert complete_checkpoints(tmp_path) == [one]
    (tmp_path / "latest_checkpointed_iteration.txt").write_text("3\n")  # names an incomplete one
    assert find_resume_folder(TrainerSection(resume_mode="auto", default_local_dir=str(tmp_path))) == one
    assert find_resume_folder(TrainerSection(resume_mode="disable", default_local_dir=str(tmp_path))) is None
