"""Resume identity (issue 14 item 4, fsdpcfg/runinfo/ckpt_identity.py): a checkpoint records what it was trained
from; resuming it with another model (same architecture, other path or weights; another architecture; other
LoRA shapes) is refused before torchrun, naming both and the fix."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fsdpcfg.cli.main import main
from fsdpcfg.compose import compose
from fsdpcfg.launch import signals  # the launcher starts torchrun through run_forwarding
from fsdpcfg.runinfo import run_config
from fsdpcfg.runinfo.ckpt_identity import differences, identity
from fsdpcfg.schema import RunConfig, parse_run_config


@pytest.fixture
def no_torchrun(monkeypatch):
    started = []
    monkeypatch.setattr(signals, "run_forwarding", lambda cmd, env, **kw: started.append(cmd) or 0)
    return started


def _cfg(*overrides: str) -> dict:
    return run_config(compose(["+recipe=qwen_grpo", *overrides]))


def _typed(*overrides: str) -> RunConfig:
    """The typed config of qwen_grpo with ``overrides`` (what :func:`identity` reads)."""
    return parse_run_config(_cfg(*overrides))


def _checkpoint(root: Path, trained_from: dict | None, step: int = 1) -> Path:
    """A complete global_step_N as the native loop leaves it, as far as the launcher reads it (manifest last)."""
    d = root / f"global_step_{step}"
    d.mkdir(parents=True)
    (d / "model.safetensors").write_bytes(b"w" * 16)
    (d / "trainer_state" / "dcp").mkdir(parents=True)
    (d / "trainer_state" / "dcp" / ".metadata").write_bytes(b"m" * 8)
    files = ["model.safetensors", "trainer_state/dcp/.metadata"]
    manifest = {
        "step": step,
        "world_size": 2,
        "files": files,
        "sizes": {"model.safetensors": 16, "trainer_state/dcp/.metadata": 8},
    }
    if trained_from is not None:
        manifest["trained_from"] = trained_from
    (d / "MANIFEST.json").write_text(json.dumps(manifest))
    (root / "latest_checkpointed_iteration.txt").write_text(f"{step}\n")
    return d


def _retrained(src: Path, dest: Path) -> Path:
    """A copy of the model folder ``src`` at ``dest`` whose weights have the same names, shapes and file size but
    other values (one tensor moved by 1e-3): a model retrained from the same config.json."""
    from safetensors.torch import load_file, save_file

    shutil.copytree(src, dest)
    tensors = load_file(src / "model.safetensors")
    name = sorted(tensors)[0]
    tensors[name] = tensors[name] + 1e-3
    save_file(tensors, dest / "model.safetensors", metadata={"format": "pt"})
    assert (dest / "model.safetensors").stat().st_size == (src / "model.safetensors").stat().st_size
    return dest


def _run(tmp_path: Path, model: Path, *more: str) -> list[str]:
    return [
        "+recipe=qwen_grpo",
        f"fsdpcfg.run_dir={tmp_path}/run",
        f"trainer.default_local_dir={tmp_path}/ckpt",
        f"actor_rollout_ref.model.path={model}",
        *more,
    ]


def test_same_architecture_other_model_is_refused_at_resume(tmp_path, tiny_model, capsys, no_torchrun):
    qwen = tiny_model("tiny-qwen2")
    other = _retrained(qwen, tmp_path / "retrained")  # same config.json, other weights
    folder = _checkpoint(tmp_path / "ckpt", identity(_typed(f"actor_rollout_ref.model.path={qwen}")))
    assert main(_run(tmp_path, other)) == 1 and not no_torchrun
    err = capsys.readouterr().err
    assert f"would resume {folder}, trained from {qwen}, but this run's model is {other}" in err
    assert "weights: sha256" in err  # same files and sizes, other contents
    for fix in (
        "trainer.experiment_name",
        f"move the checkpoints in {folder.parent} away",
        f"trainer.resume_mode=resume_path trainer.resume_from_path={folder}",
    ):
        assert fix in err
    assert "Traceback" not in err and not (tmp_path / "run").exists()
    # the same model resumes
    assert main(_run(tmp_path, qwen)) == 0 and len(no_torchrun) == 1
    # resume_path: the user chose that checkpoint; another model of the same shapes is allowed, and said so
    capsys.readouterr()
    assert main(_run(tmp_path, other, "trainer.resume_mode=resume_path", f"trainer.resume_from_path={folder}")) == 0
    assert (
        f"note: resuming {folder} (trained from {qwen}) with actor_rollout_ref.model.path={other}"
        in capsys.readouterr().out
    )
    # disable beside that checkpoint: nothing is resumed, and the run's saves would write over it: refused
    capsys.readouterr()
    assert main(_run(tmp_path, other, "trainer.resume_mode=disable")) == 1 and len(no_torchrun) == 2
    assert f"already holds {folder.name}" in capsys.readouterr().err


def test_weights_replaced_at_the_same_path_are_refused(tmp_path, tiny_model, capsys, no_torchrun):
    model = tmp_path / "model"
    shutil.copytree(tiny_model("tiny-qwen2"), model)
    _checkpoint(tmp_path / "ckpt", identity(_typed(f"actor_rollout_ref.model.path={model}")))
    _retrained(tiny_model("tiny-qwen2"), tmp_path / "retrained")
    shutil.copy(tmp_path / "retrained" / "model.safetensors", model / "model.safetensors")
    assert main(_run(tmp_path, model)) == 1 and not no_torchrun
    assert "weights: sha256" in capsys.readouterr().err


def test_other_architecture_is_refused_even_with_resume_path(tmp_path, tiny_model, capsys, no_torchrun):
    qwen, phi3 = tiny_model("tiny-qwen2"), tiny_model("tiny-phi3")
    folder = _checkpoint(tmp_path / "ckpt", identity(_typed(f"actor_rollout_ref.model.path={qwen}")))
    for extra in ([], ["trainer.resume_mode=resume_path", f"trainer.resume_from_path={folder}"]):
        assert main(_run(tmp_path, phi3, *extra)) == 1 and not no_torchrun
        err = capsys.readouterr().err
        assert "the weights' shapes differ" in err and '"model_type": "qwen2"' in err and '"phi3"' in err
        assert f"set actor_rollout_ref.model.path back to {qwen}" in err and "resume_from_path=" not in err


def test_other_lora_rank_is_refused(tmp_path, tiny_model, capsys, no_torchrun):
    qwen = tiny_model("tiny-qwen2")
    _checkpoint(tmp_path / "ckpt", identity(_typed(f"actor_rollout_ref.model.path={qwen}")))
    assert main(_run(tmp_path, qwen, "actor_rollout_ref.model.lora_rank=8")) == 1 and not no_torchrun
    assert (
        '"actor_rollout_ref.model.lora_rank": 0} -> {"actor_rollout_ref.model.lora_rank": 8}' in capsys.readouterr().err
    )


def test_checkpoint_without_a_record_resumes_with_a_note(tmp_path, tiny_model, capsys, no_torchrun):
    _checkpoint(tmp_path / "ckpt", None)
    assert main(_run(tmp_path, tiny_model("tiny-qwen2"))) == 0 and len(no_torchrun) == 1
    assert "does not record the model it was trained from" in capsys.readouterr().out


def test_identity_of_an_unreadable_hub_id_is_its_path(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    rec = identity(_typed("model=qwen2_5_0_5b_instruct"))
    assert rec["model_path"] == "Qwen/Qwen2.5-0.5B-Instruct" and "weights" not in rec
    other = dict(rec, model_path="Qwen/Qwen2.5-1.5B-Instruct")
    assert [d[0] for d in differences(rec, other)] == ["model path"]
    assert differences(rec, rec) == []


def test_ranks_started_directly_check_the_identity_too(tmp_path, tiny_model, monkeypatch):
    """torchrun -m fsdpcfg.train CONFIG without the launcher: rank 0 refuses the changed model before it builds
    anything (fsdpcfg.train.entry)."""
    import yaml

    from fsdpcfg.errors import ConfigError
    from fsdpcfg.runinfo.lock import HOLDER_ENV
    from fsdpcfg.train import entry

    qwen = tiny_model("tiny-qwen2")
    other = _retrained(qwen, tmp_path / "retrained")
    _checkpoint(tmp_path / "ckpt", identity(_typed(f"actor_rollout_ref.model.path={qwen}")))
    cfg = _cfg(
        f"actor_rollout_ref.model.path={other}",
        f"fsdpcfg.run_dir={tmp_path}/run",
        f"trainer.default_local_dir={tmp_path}/ckpt",
    )
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(cfg))
    monkeypatch.delenv("FSDPCFG_ERROR_FILE", raising=False)
    monkeypatch.delenv(HOLDER_ENV, raising=False)
    with pytest.raises(ConfigError, match=f"trained from {qwen}, but this run's model is {other}"):
        entry._rank0_preflight(str(tmp_path / "config.yaml"))
    from fsdpcfg.runinfo import lock

    while lock._RANK_LOCK:  # the locks rank 0 took (held for its process's life; this process is pytest)
        lock._RANK_LOCK.pop().release()


@pytest.mark.parametrize("text", ["[" * 100_000 + "]" * 100_000, "[1, 2]", "{not json"])
def test_identity_of_a_model_whose_config_json_is_not_an_object(tmp_path, text):
    # nested past the recursion limit, a list, not JSON: recorded without an architecture, never a traceback
    model = tmp_path / "m"
    model.mkdir()
    (model / "config.json").write_text(text)
    rec = identity(_typed(f"actor_rollout_ref.model.path={model}"))
    assert rec["model_path"] == str(model) and rec["architecture"] == {}
