"""No file fsdpcfg writes and no line it prints holds a secret's value (issue 14 item 1).

Each path runs with a unique secret in the environment (referenced as ``${oc.env:MYKEY}``, the recommended way)
or written as a literal; every file under the output folders and the captured stdout/stderr are searched for
the value, and the reference is checked to stand where the value would be.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import yaml

from fsdpcfg.redact import REDACTED, register, scrub_text, shell_value, write_private
from fsdpcfg.secrets import is_secret_key, is_secret_name, literal_secrets, secret_shapes

REPO = Path(__file__).resolve().parents[2]
REF = "+fsdpcfg.env.WANDB_API_KEY=${oc.env:MYKEY}"


def _secret() -> str:
    return "Zq" + uuid.uuid4().hex[:20]  # unique per test, no token shape: only the registry can find it


def _fsdpcfg(*args: str, env: dict[str, str], cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "fsdpcfg", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env},
    )


def _hits(value: str, *folders: Path) -> list[str]:
    """Files under ``folders`` whose bytes contain ``value``."""
    out = []
    for folder in folders:
        for p in folder.rglob("*"):
            if p.is_file() and value.encode() in p.read_bytes():
                out.append(str(p))
    return out


# --- detection ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key",
    [
        "fsdpcfg.env.WANDB_KEY",
        "fsdpcfg.env.GITHUB_PAT",
        "fsdpcfg.env.OPENAI_KEY",
        "fsdpcfg.env.HF_TOKEN",
        "fsdpcfg.env.DB_PASSWORD_MAIN",
        "fsdpcfg.env.AWS_SECRET",
        "fsdpcfg.env.GCP_CREDENTIALS",
        "ray_kwargs.ray_init.runtime_env.env_vars.MY_TOKEN",
        "trainer.wandb_api_key",
        "trainer.hf_token",
        "trainer.db_password",
        "trainer.credentials",
        "trainer.github_pat",
        "OPENAI_API_KEY",
    ],
)
def test_secret_names(key):
    assert is_secret_key(key)


@pytest.mark.parametrize(
    "key",
    [
        "fsdpcfg.env.TOKENIZERS_PARALLELISM",
        "fsdpcfg.env.NCCL_DEBUG",
        "fsdpcfg.env.AWS_ACCESS_KEY_ID",
        "fsdpcfg.env.HF_TOKEN_PATH",
        "data.prompt_key",
        "data.reward_fn_key",
        "actor_rollout_ref.model.tokenizer_path",
        "data.image_key",
        "actor_rollout_ref.rollout.pad_token_id",
        "trainer.eos_token",
    ],
)
def test_not_secret_names(key):
    assert not is_secret_key(key)
    assert not is_secret_name(key.rsplit(".", 1)[-1]) or not key.startswith("fsdpcfg.env")


@pytest.mark.parametrize(
    "value",
    [
        "hf_" + "a1B2" * 9,
        "sk-" + "aB3" * 14,
        "sk-proj-" + "Ab1" * 12,
        "ghp_" + "Z9" * 18,
        "github_pat_" + "11ABC_" * 6,
        "xoxb-1234-5678-abcdef",
        "AKIA" + "ABCDEFGH23456789",
        "https://bob:hunter2pw@tracker.example.com/x",
        "see hf_" + "Qq" * 17 + " here",
    ],
)
def test_secret_shapes(value):
    assert secret_shapes(value)
    assert REDACTED in scrub_text(value)
    assert scrub_text(scrub_text(value)) == scrub_text(value)  # idempotent


@pytest.mark.parametrize(
    "value",
    [
        "https://host.example/path",
        "https://bob@host.example/x",
        "https://bob:${oc.env:TRACKER_PW}@host",
        "task-sk-short",
        "/data/sk-learn-experiments-2024-abcdefghijk",
        "hf_" + "lowercaseletters" * 3,
        "a" * 40,
        "9c11ea5" + "e" * 33,
        "Qwen/Qwen2.5-0.5B-Instruct",
    ],
)
def test_not_secret_shapes(value):
    assert not secret_shapes(value, "trainer.experiment_name")
    assert scrub_text(value) == value


def test_a_40_hex_value_is_a_wandb_key_only_under_a_wandb_name():
    key = "0123456789abcdef0123456789abcdef01234567"
    assert secret_shapes(key, "fsdpcfg.env.WANDB") == [key] and not secret_shapes(key, "trainer.git_commit")


def test_fc720_names_shapes_and_urls():
    from omegaconf import OmegaConf

    from fsdpcfg.compose import compose

    raw = OmegaConf.to_container(
        compose(
            [
                "+recipe=qwen_grpo",
                "+fsdpcfg.env.WANDB_KEY=LITwandbZ0123456789",
                "+fsdpcfg.env.URL=https://bob:LITpwZ01234@host.example/x",
                "+fsdpcfg.env.NOTE=AKIAABCDEFGH23456789",
                "+fsdpcfg.env.OK_URL=https://bob:${oc.env:PW}@host.example/x",
                REF,
            ]
        ).cfg,
        resolve=False,
    )
    assert set(literal_secrets(raw)) == {"fsdpcfg.env.WANDB_KEY", "fsdpcfg.env.URL", "fsdpcfg.env.NOTE"}


# --- the one scrubber ----------------------------------------------------------------------------------------


def test_registered_values_become_their_reference_and_shell_names_the_variable(tmp_path):
    secret = _secret()
    register(secret, "MYKEY_T1")
    assert (
        scrub_text(f"key: {secret}\nurl: https://u:{secret}@h")
        == "key: ${oc.env:MYKEY_T1}\nurl: https://u:${oc.env:MYKEY_T1}@h"
    )
    assert shell_value("WANDB_API_KEY", secret) == '"${MYKEY_T1}"'
    assert shell_value("OPENAI_KEY", "literalZ0123") == '"${OPENAI_KEY:?set OPENAI_KEY in the environment}"'
    assert shell_value("NCCL_DEBUG", "WARN") == "WARN"
    path = write_private(tmp_path / "f.json", json.dumps({"a": secret}))
    assert secret not in path.read_text() and "${oc.env:MYKEY_T1}" in path.read_text()
    assert [p.name for p in tmp_path.iterdir()] == ["f.json"]  # no temporary file left


def test_a_secret_with_quotes_is_found_as_json_and_yaml_write_it():
    secret = "Zq'\"\\" + uuid.uuid4().hex[:12]
    register(secret, "MYKEY_T4")
    for text in (json.dumps({"k": secret}), yaml.safe_dump({"k": secret}), secret):
        assert "${oc.env:MYKEY_T4}" in scrub_text(text) and uuid_part(secret) not in scrub_text(text)


def uuid_part(secret: str) -> str:
    return secret[-12:]


def test_sweep_summary_and_metrics_writers_scrub(tmp_path, monkeypatch):
    from fsdpcfg.sweep.summary import write_summary
    from fsdpcfg.train.metrics import MetricsLogger

    secret = _secret()
    register(secret, "MYKEY_T2")
    row = {
        "point": 0,
        "status": "failed",
        "final_reward": None,
        "steps": None,
        "wall_s": 1.0,
        "run_dir": None,
        "overrides": [f"+trainer.note={secret}"],
        "error": f"boom {secret}",
        "job": 0,
    }
    json_path, csv_path = write_summary(tmp_path, [row], launcher="basic", overrides=[])
    monkeypatch.setenv("VERL_FILE_LOGGER_ROOT", str(tmp_path / "verl-file"))  # verl's file layout, scrubbed too
    logger = MetricsLogger(tmp_path / "run", 1, loggers=["console", "file"], project="p", experiment="e")
    logger.log(1, {"note": f"x{secret}", "loss": 1.0})
    logger.close()
    assert not _hits(secret, tmp_path)
    assert "${oc.env:MYKEY_T2}" in json_path.read_text() + csv_path.read_text()


# --- every path, end to end ------------------------------------------------------------------------------------


@pytest.mark.slow  # end to end: a fresh Python process
def test_native_dry_run(tmp_path):
    secret = _secret()
    run_dir = tmp_path / "run"
    p = _fsdpcfg(
        "+recipe=qwen_grpo",
        REF,
        "+fsdpcfg.env.TRACKER_URL=https://bob:${oc.env:MYKEY}@wandb.example",
        f"fsdpcfg.run_dir={run_dir}",
        "--dry-run",
        env={"MYKEY": secret},
    )
    assert p.returncode == 0, p.stderr
    assert secret not in p.stdout + p.stderr and not _hits(secret, run_dir)
    cfg = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert cfg["fsdpcfg"]["env"]["WANDB_API_KEY"] == "${oc.env:MYKEY}"
    assert cfg["fsdpcfg"]["env"]["TRACKER_URL"] == "https://bob:${oc.env:MYKEY}@wandb.example"
    assert {"config.yaml", "overrides.yaml", "run_info.json"} <= {f.name for f in run_dir.iterdir()}


@pytest.mark.slow  # end to end: a fresh Python process
def test_export_verl_keeps_references(tmp_path):
    secret = _secret()
    out = tmp_path / "exp"
    p = _fsdpcfg("export", "--launcher", "verl", "+recipe=qwen_grpo", REF, "-o", str(out), env={"MYKEY": secret})
    assert p.returncode == 0, p.stderr
    assert secret not in p.stdout + p.stderr and not _hits(secret, out)
    script = (out / "run_verl.sh").read_text()
    assert 'export WANDB_API_KEY="${MYKEY}"' in script  # read from the environment when the script runs
    doc = yaml.safe_load((out / "config.yaml").read_text())
    assert doc["ray_kwargs"]["ray_init"]["runtime_env"]["env_vars"]["WANDB_API_KEY"] == "${oc.env:MYKEY}"
    # the script still hands the value over: bash expands it (verl itself is not run here)
    shown = subprocess.run(
        ["bash", "-c", 'set -u; export WANDB_API_KEY="${MYKEY}"; printf %s "$WANDB_API_KEY"'],
        capture_output=True,
        text=True,
        env={**os.environ, "MYKEY": secret},
    ).stdout
    assert shown == secret


@pytest.mark.slow  # end to end: a fresh Python process
def test_verl_dry_run_command_line(tmp_path):
    secret = _secret()
    run_dir = tmp_path / "run"
    p = _fsdpcfg(
        "+recipe=qwen_grpo",
        "launcher=verl",
        "rollout=vllm",
        REF,
        f"fsdpcfg.run_dir={run_dir}",
        "--dry-run",
        env={"MYKEY": secret},
    )
    assert p.returncode == 0, p.stderr
    assert secret not in p.stdout + p.stderr and not _hits(secret, run_dir)
    assert 'WANDB_API_KEY="${MYKEY}" ' in p.stdout
    doc = yaml.safe_load((run_dir / "verl" / "config.yaml").read_text())
    assert doc["ray_kwargs"]["ray_init"]["runtime_env"]["env_vars"]["WANDB_API_KEY"] == "${oc.env:MYKEY}"


def test_verl_invocation_keeps_the_value_for_the_child_only():
    from fsdpcfg.compose import compose
    from fsdpcfg.launch.verl import build_verl_invocation

    secret = _secret()
    os.environ["MYKEY_T3"] = secret
    try:
        inv = build_verl_invocation(
            compose(
                ["+recipe=qwen_grpo", "launcher=verl", "rollout=vllm", "+fsdpcfg.env.WANDB_API_KEY=${oc.env:MYKEY_T3}"]
            )
        )
    finally:
        del os.environ["MYKEY_T3"]
    assert inv.env["WANDB_API_KEY"] == secret  # what the verl process gets in its environment
    assert secret not in inv.yaml_text + inv.command_line() + json.dumps(inv.tree)


@pytest.mark.slow
def test_sweep_dry_run_point_folders(tmp_path):
    secret = _secret()
    sweep = tmp_path / "sweep"
    p = _fsdpcfg(
        "-m",
        "+recipe=qwen_grpo",
        REF,
        f"fsdpcfg.run_dir={tmp_path / 'run'}",
        f"hydra.sweep.dir={sweep}",
        "actor_rollout_ref.actor.optim.lr=1e-6,2e-6",
        "--dry-run",
        env={"MYKEY": secret},
    )
    assert p.returncode == 0, p.stderr
    assert secret not in p.stdout + p.stderr and not _hits(secret, tmp_path)
    for job in ("0", "1"):
        assert "${oc.env:MYKEY}" in (sweep / job / "config.yaml").read_text()


@pytest.mark.slow
def test_show_and_check_print_the_reference(tmp_path):
    secret = _secret()
    out = {}
    for cmd in (["show"], ["check"], ["check", "--format", "json"]):
        p = _fsdpcfg(*cmd, "+recipe=qwen_grpo", REF, env={"MYKEY": secret})
        assert p.returncode == 0, p.stderr
        assert secret not in p.stdout + p.stderr
        out[" ".join(cmd)] = p.stdout
    # show's own output, from the run above (the same command and environment: it is not run a second time)
    assert "${oc.env:MYKEY}" in out["show"]


@pytest.mark.slow
def test_doctor_report_hides_a_token_in_a_model_path(tmp_path):
    token = "hf_Xy" + uuid.uuid4().hex[:32]
    p = _fsdpcfg(
        "doctor",
        "+recipe=qwen_grpo",
        f"actor_rollout_ref.model.path=/nonexistent/{token}",
        "--format",
        "json",
        "--work-dir",
        str(tmp_path / "work"),
        env={},
    )
    assert p.returncode == 1
    assert token not in p.stdout + p.stderr and not _hits(token, tmp_path)
    assert "FC720" in p.stdout


@pytest.mark.slow
@pytest.mark.parametrize(
    "override",
    [
        "+fsdpcfg.env.WANDB_KEY=LITwandbZ0123456789",
        "+fsdpcfg.env.GITHUB_PAT=LITpatZ0123456789",
        "+fsdpcfg.env.OPENAI_KEY=LITopenaiZ0123456789",
        "+fsdpcfg.env.TRACKER_URL=https://bob:LITpwZ0123456789@host.example/x",
        "+trainer.note=hf_LITZabcdefghijklmnopqrstuvwxyz0123",
    ],
)
def test_literal_secrets_are_refused_unprinted_and_unwritten(override, tmp_path):
    value = override.split("=", 1)[1]
    secret = value.split("bob:")[-1].split("@")[0]
    run_dir = tmp_path / "run"
    p = _fsdpcfg("+recipe=qwen_grpo", override, f"fsdpcfg.run_dir={run_dir}", "--dry-run", env={})
    assert p.returncode == 1 and "[FC720]" in p.stderr, p.stdout + p.stderr
    assert secret not in p.stdout + p.stderr
    assert not run_dir.exists()  # refused before anything was written


def test_the_cli_streams_are_scrubbed_and_put_back(capsys, monkeypatch):
    from fsdpcfg.cli.main import main

    secret = _secret()
    monkeypatch.setenv("MYKEY", secret)
    before = sys.stdout, sys.stderr
    assert main(["show", "+recipe=qwen_grpo", REF]) == 0
    assert (sys.stdout, sys.stderr) == before
    out = capsys.readouterr()
    assert secret not in out.out + out.err and "${oc.env:MYKEY}" in out.out
