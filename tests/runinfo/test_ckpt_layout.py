"""Which checkpoint folder counts as complete, which one a run resumes from, and what a damaged one stops
(torch-free, fsdpcfg/native/ckpt_layout.py; issue 22 item 2). The folders are written as
:func:`fsdpcfg.train.checkpoint.save_checkpoint` lays them out, the manifest from :func:`describe_files`."""

from __future__ import annotations

import json

import pytest

from fsdpcfg.errors import ConfigError
from fsdpcfg.native.ckpt_layout import (
    DamagedCheckpoint,
    check_resume_layout,
    complete_checkpoints,
    damage,
    describe_files,
    export_damage,
    find_resume_folder,
    is_complete,
    seal,
)
from fsdpcfg.schema.trainer import TrainerSection

STATE = {
    "trainer_state/trainer.pt": b"t" * 64,
    "trainer_state/dcp/.metadata": b"m" * 32,
    "trainer_state/dcp/__0_0.distcp": bytes(range(256)) * 4,
    "trainer_state/dcp/__1_0.distcp": bytes(range(255, -1, -1)) * 4,
}
EXPORT = {"config.json": b"{}", "model.safetensors": b"w" * 512}


def _ckpt(root, step, manifest=True):
    d = root / f"global_step_{step}"
    for name, data in {**STATE, **EXPORT}.items():
        (d / name).parent.mkdir(parents=True, exist_ok=True)
        (d / name).write_bytes(data)
    if manifest:
        (d / "MANIFEST.json").write_text(json.dumps(seal({"step": step, "world_size": 2, **describe_files(d)})))
    return d


def _auto(root):
    return TrainerSection(resume_mode="auto", default_local_dir=str(root))


def _truncate(p):
    p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])


def _flip(p):  # same size, one byte changed
    data = bytearray(p.read_bytes())
    data[len(data) // 2] ^= 0xFF
    p.write_bytes(bytes(data))


def test_the_manifest_records_every_file_with_size_and_crc32(tmp_path):
    d = _ckpt(tmp_path, 3)
    manifest = json.loads((d / "MANIFEST.json").read_text())
    assert manifest["files"] == sorted({**STATE, **EXPORT})
    assert manifest["sizes"]["trainer_state/dcp/__0_0.distcp"] == 1024
    assert manifest["checksum"] == "crc32"
    import zlib

    assert manifest["checksums"]["model.safetensors"] == f"{zlib.crc32(b'w' * 512):08x}"
    assert damage(d) == [] and is_complete(d)


@pytest.mark.parametrize(
    ("hurt", "file", "why"),
    [
        (lambda d: _truncate(d / "trainer_state/dcp/__1_0.distcp"), "trainer_state/dcp/__1_0.distcp", "512 bytes"),
        (lambda d: _flip(d / "trainer_state/dcp/__0_0.distcp"), "trainer_state/dcp/__0_0.distcp", "contents changed"),
        (lambda d: (d / "trainer_state/dcp/.metadata").unlink(), "trainer_state/dcp/.metadata", "missing"),
        (lambda d: _truncate(d / "trainer_state/trainer.pt"), "trainer_state/trainer.pt", "32 bytes"),
        (lambda d: _truncate(d / "MANIFEST.json"), "MANIFEST.json", "unreadable"),
        (lambda d: (d / "MANIFEST.json").unlink(), "MANIFEST.json", "missing"),
    ],
    ids=["truncated-shard", "flipped-shard", "no-metadata", "short-trainer-pt", "short-manifest", "no-manifest"],
)
def test_damaged_trainer_state_of_the_newest_stops_the_run_naming_the_file(tmp_path, hurt, file, why):
    older = _ckpt(tmp_path, 1)
    newest = _ckpt(tmp_path, 2)
    hurt(newest)
    (tmp_path / "latest_checkpointed_iteration.txt").write_text("2\n")
    with pytest.raises(DamagedCheckpoint) as e:
        find_resume_folder(_auto(tmp_path))
    msg = str(e.value)
    assert f"{newest}, is damaged: {file}: " in msg and why in msg
    assert e.value.key == "trainer.resume_mode"
    # no silent fall back to the older one: it is named as the fix
    assert f"trainer.resume_mode=resume_path trainer.resume_from_path={older}" in e.value.fix
    assert "move global_step_2" in e.value.fix
    # resume_path on the damaged one is refused too; on the intact older one it is taken
    cfg = TrainerSection(resume_mode="resume_path", default_local_dir=str(tmp_path), resume_from_path=str(newest))
    if file != "MANIFEST.json":
        with pytest.raises(DamagedCheckpoint):
            find_resume_folder(cfg)
    cfg = TrainerSection(resume_mode="resume_path", default_local_dir=str(tmp_path), resume_from_path=str(older))
    assert find_resume_folder(cfg) == older


def test_damaged_newest_without_an_intact_older_one_says_move_or_start_over(tmp_path):
    newest = _ckpt(tmp_path, 4)
    _flip(newest / "trainer_state/trainer.pt")
    with pytest.raises(DamagedCheckpoint) as e:
        check_resume_layout(_auto(tmp_path))
    assert f"move {newest} out of {tmp_path}" in e.value.fix and "trainer.default_local_dir" in e.value.fix


@pytest.mark.parametrize("left", [[1, 2], []], ids=["older_left", "none_left"])
def test_a_newest_checkpoint_gone_is_named_never_resumed_past(tmp_path, left):
    """``latest_checkpointed_iteration.txt`` names step 3 (the last save that completed) but its folder was
    deleted or moved: ``auto`` resumed global_step_2 without a word (issue 22, break-it pass), redoing a step and
    hiding the loss. The run now stops, naming the tracker, the missing folder and the newest left."""
    import shutil

    for step in [*left, 3]:
        _ckpt(tmp_path, step)
    (tmp_path / "latest_checkpointed_iteration.txt").write_text("3\n")
    shutil.rmtree(tmp_path / "global_step_3")
    with pytest.raises(ConfigError) as e:
        check_resume_layout(_auto(tmp_path))
    assert e.value.key == "trainer.resume_mode"
    assert f"latest_checkpointed_iteration.txt names step 3, but {tmp_path / 'global_step_3'} is missing" in (
        e.value.message
    )
    if left:
        assert "(the newest left is global_step_2)" in e.value.message
        assert f"trainer.resume_mode=resume_path trainer.resume_from_path={tmp_path / 'global_step_2'}" in e.value.fix
    else:
        assert "(no checkpoint is left)" in e.value.message and "another trainer.default_local_dir" in e.value.fix


def test_a_tracker_behind_the_newest_folder_resumes_the_newest(tmp_path):
    """A save killed after its folder was published and before the tracker was rewritten: the newest complete
    folder is resumed (the tracker lags, nothing is lost)."""
    _ckpt(tmp_path, 1)
    newest = _ckpt(tmp_path, 2)
    (tmp_path / "latest_checkpointed_iteration.txt").write_text("1\n")
    assert check_resume_layout(_auto(tmp_path)) == newest


@pytest.mark.parametrize("hurt", [_truncate, _flip, lambda p: p.unlink()], ids=["truncated", "flipped", "missing"])
def test_a_damaged_export_with_intact_state_is_resumed_and_named(tmp_path, hurt):
    d = _ckpt(tmp_path, 2)
    hurt(d / "model.safetensors")
    assert find_resume_folder(_auto(tmp_path)) == d
    assert check_resume_layout(_auto(tmp_path)) == d
    assert [f for f, _ in export_damage(d)] == ["model.safetensors"]
    assert not is_complete(d) or hurt is _flip  # sizes catch the first two kinds cheaply; the checksum the third


def test_a_manifest_without_checksums_is_held_to_sizes(tmp_path):
    d = _ckpt(tmp_path, 1)
    manifest = json.loads((d / "MANIFEST.json").read_text())
    del manifest["checksum"], manifest["checksums"], manifest["manifest_crc32"]  # as an older fsdpcfg wrote it
    (d / "MANIFEST.json").write_text(json.dumps(manifest))
    _flip(d / "trainer_state/trainer.pt")
    assert damage(d) == []  # a manifest of an older fsdpcfg: sizes only
    _truncate(d / "trainer_state/trainer.pt")
    assert [f for f, _ in damage(d)] == ["trainer_state/trainer.pt"]


def test_a_byte_changed_inside_the_manifest_is_the_manifests_damage(tmp_path):
    d = _ckpt(tmp_path, 1)
    text = (d / "MANIFEST.json").read_text()
    (d / "MANIFEST.json").write_text(text.replace("__1_0.distcp", "__1_0.dis4cp", 1))  # still JSON, a name changed
    ((f, why),) = damage(d)
    assert f == "MANIFEST.json" and why.startswith("contents changed (crc32 ") and "it records '" in why
    # sealed: the recorded value is what the writer computed over the other entries
    manifest = json.loads(text)
    assert seal(manifest) == manifest


def test_a_state_file_the_manifest_does_not_list_is_damage(tmp_path):
    """A manifest that lost a shard's entry (and its own checksum, as an older fsdpcfg wrote it) no longer lets
    that shard go unchecked: every file of the folder must be listed (break-it pass, issue 22)."""
    d = _ckpt(tmp_path, 1)
    manifest = json.loads((d / "MANIFEST.json").read_text())
    shard = "trainer_state/dcp/__1_0.distcp"
    del manifest["manifest_crc32"]
    manifest["files"].remove(shard)
    (d / "MANIFEST.json").write_text(json.dumps(manifest))
    _truncate(d / shard)
    assert damage(d) == [(shard, "not in the manifest (added later, or the manifest lost its entry)")]
    with pytest.raises(DamagedCheckpoint, match=shard):
        find_resume_folder(_auto(tmp_path))


def test_the_run_never_starts_below_an_existing_step_folder(tmp_path):
    one, two = _ckpt(tmp_path, 1), _ckpt(tmp_path, 2)
    # disable: it would start at step 0 and save global_step_1 and _2 over these
    disable = TrainerSection(resume_mode="disable", default_local_dir=str(tmp_path))
    assert find_resume_folder(disable) is None
    with pytest.raises(ConfigError) as e:
        check_resume_layout(disable)
    assert "starts at step 0" in str(e.value) and "global_step_1, global_step_2" in str(e.value)
    assert e.value.key == "trainer.default_local_dir" and "trainer.experiment_name" in e.value.fix
    # resume_path below the newest: its step-2 save would replace global_step_2
    older = TrainerSection(resume_mode="resume_path", default_local_dir=str(tmp_path), resume_from_path=str(one))
    with pytest.raises(ConfigError) as e:
        check_resume_layout(older)
    assert f"resumes step 1 of {one}" in str(e.value) and "holds global_step_2: " in str(e.value)
    # the newest, or an empty folder, starts
    assert check_resume_layout(_auto(tmp_path)) == two
    assert check_resume_layout(TrainerSection(resume_mode="disable", default_local_dir=str(tmp_path / "new"))) is None


def test_tmp_old_and_linked_folders_are_not_step_folders(tmp_path):
    one = _ckpt(tmp_path, 1)
    (tmp_path / "global_step_5.tmp").mkdir()  # a save killed half-way
    (tmp_path / "global_step_6.deleting").mkdir()  # a pruning killed half-way
    assert complete_checkpoints(tmp_path) == [one]
    assert find_resume_folder(_auto(tmp_path)) == one
    assert check_resume_layout(_auto(tmp_path)) == one
    (tmp_path / "global_step_7").symlink_to(one)
    assert complete_checkpoints(tmp_path) == [one]  # pruning never follows a link
    with pytest.raises(ConfigError, match="global_step_7 is a link"):  # nor does a resume pass it silently
        find_resume_folder(_auto(tmp_path))


# -- property (issue 22 item 6): any damage to any file of the newest checkpoint ------------------------------
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


def _hurt(p, how: str, at: float) -> None:
    """Damage file ``p``: ``truncate`` (to a fraction ``at`` of its size), ``flip`` (one byte at ``at``),
    ``append`` (a byte), ``zero`` (the same size, all zero bytes), ``delete``."""
    data = bytearray(p.read_bytes())
    i = min(int(at * len(data)), len(data) - 1)
    if how == "truncate":
        p.write_bytes(bytes(data[:i]))
    elif how == "flip":
        data[i] ^= 1 + int(at * 254)  # never 0: the byte changes
        p.write_bytes(bytes(data))
    elif how == "append":
        p.write_bytes(bytes(data) + b"\0")
    elif how == "zero":
        p.write_bytes(b"\0" * len(data) if any(data) else b"\1" * len(data))
    else:
        p.unlink()


@settings(max_examples=150, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(
    file=st.sampled_from(sorted({**STATE, **EXPORT, "MANIFEST.json": b""})),
    how=st.sampled_from(["truncate", "flip", "append", "zero", "delete"]),
    at=st.floats(0, 1, exclude_max=True),
    older=st.booleans(),
)
def test_any_damage_to_the_newest_checkpoint_is_named_never_resumed_past(tmp_path_factory, file, how, at, older):
    """Damage to the trainer state or the manifest stops an ``auto`` resume, naming the file (and the intact
    older checkpoint when there is one: never a silent fall-back); damage to the Hugging Face export alone
    resumes the newest state and is named as the export's (the run writes it again)."""
    root = tmp_path_factory.mktemp("ckpts")
    if older:
        _ckpt(root, 2)
    newest = _ckpt(root, 4)
    _hurt(newest / file, how, at)
    state = file == "MANIFEST.json" or file.startswith("trainer_state/")
    if state:
        with pytest.raises(DamagedCheckpoint) as e:
            find_resume_folder(_auto(root))
        assert str(newest) in e.value.message and file in e.value.message, e.value.message
        if older:
            assert f"trainer.resume_from_path={root / 'global_step_2'}" in e.value.fix
    else:
        assert find_resume_folder(_auto(root)) == newest
        assert [f for f, _ in export_damage(newest)] == [file]


@pytest.mark.parametrize("kind", ["link", "file"])
def test_a_newer_step_that_is_a_link_or_a_file_is_named_never_passed(tmp_path, kind):
    """A ``global_step_4`` that is a link to its folder on another disk (or a file) beside a real ``global_step_2``:
    ``auto`` resumed step 2 without a word (break-it pass). It now stops, naming the entry and the fix."""
    _ckpt(tmp_path, 2)
    elsewhere = _ckpt(tmp_path / "other_disk", 4)
    entry = tmp_path / "global_step_4"
    if kind == "link":
        entry.symlink_to(elsewhere, target_is_directory=True)
    else:
        entry.write_text("x")
    with pytest.raises(ConfigError) as e:
        check_resume_layout(_auto(tmp_path))
    assert f"{entry} is {'a link' if kind == 'link' else 'not a folder'}" in e.value.message
    assert "would pass step 4 by and resume global_step_2" in e.value.message
    assert "move the real global_step_4 folder into" in e.value.fix
