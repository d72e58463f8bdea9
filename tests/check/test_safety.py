"""check never imports external_lib, never runs remote code, opens no network connection, and imports
neither torch, transformers nor verl (each in a fresh process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REMOTE_CODE_MODEL = Path("/work/shared/data/model_configs/Qwen__Qwen-7B")  # declares auto_map

PROBE = r"""
import json, socket, sys
attempts = []
def deny(*a, **k):
    attempts.append(repr(a[:2]))
    raise OSError("network disabled by the test")
socket.socket.connect = deny
socket.socket.connect_ex = deny
socket.create_connection = deny
socket.getaddrinfo = deny
from fsdpcfg.cli.main import main
rc = main(sys.argv[1:])
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "transformers", "verl", "huggingface_hub",
               "requests", "urllib3", "transformers_modules", "evil_ext", "ray", "vllm"))
print("PROBE" + json.dumps({"rc": rc, "heavy": heavy, "net": attempts}))
"""


def _probe(tmp_path: Path, *args: str, fmt: str = "json") -> dict:
    env = dict(
        os.environ,
        PYTHONPATH=f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
        HF_HUB_CACHE=str(tmp_path / "hub"),
    )
    out = subprocess.run(
        [sys.executable, "-c", PROBE, "check", "--format", fmt, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    line = [x for x in out.stdout.splitlines() if x.startswith("PROBE")]
    assert line, out.stdout + out.stderr
    return json.loads(line[0][5:])


def _evil(tmp_path: Path) -> Path:
    marker = tmp_path / "external_lib_was_imported"
    (tmp_path / "evil_ext.py").write_text(f"open({str(marker)!r}, 'w').write('imported')\n")
    return marker


@pytest.mark.slow  # end to end: a fresh Python process
def test_external_lib_is_never_imported(tmp_path):
    marker = _evil(tmp_path)
    got = _probe(
        tmp_path,
        "+recipe=qwen_grpo",
        "actor_rollout_ref.model.external_lib=evil_ext",
        "actor_rollout_ref.model.trust_remote_code=true",
    )
    assert got["rc"] in (0, 1)
    assert not marker.exists()
    assert got["heavy"] == []


@pytest.mark.slow  # end to end: a fresh Python process
def test_external_lib_list_in_a_recipe_file(tmp_path):
    marker = _evil(tmp_path)
    rec = tmp_path / "r.yaml"
    rec.write_text(
        "# @package _global_\ndefaults:\n  - qwen_grpo\n  - _self_\nactor_rollout_ref:\n  model:\n"
        "    external_lib: [evil_ext, evil_ext.sub]\n"
    )
    got = _probe(tmp_path, str(rec))
    assert got["rc"] in (0, 1) and not marker.exists() and got["heavy"] == []


@pytest.mark.slow  # end to end: a fresh Python process
def test_remote_code_model_and_hub_id_offline(tmp_path):
    assert REMOTE_CODE_MODEL.is_dir()
    for path in (str(REMOTE_CODE_MODEL), "Qwen/Qwen2.5-0.5B-Instruct", "some-org/not-cached-model"):
        got = _probe(
            tmp_path,
            "+recipe=qwen_grpo",
            f"actor_rollout_ref.model.path={path}",
            "actor_rollout_ref.model.trust_remote_code=true",
        )
        assert got["net"] == [], path
        assert got["heavy"] == [], (path, got["heavy"])


@pytest.mark.slow  # end to end: a fresh Python process
def test_cold_check_imports_nothing_heavy(tmp_path):
    got = _probe(tmp_path, "+recipe=qwen_grpo")
    assert got == {"rc": 0, "heavy": [], "net": []}


@pytest.mark.slow  # end to end: a fresh Python process
def test_human_report_with_derived_numbers_imports_nothing_heavy(tmp_path):
    got = _probe(tmp_path, "+recipe=qwen_grpo", "--plan", fmt="human")
    assert got == {"rc": 0, "heavy": [], "net": []}


@pytest.mark.slow  # end to end: a fresh Python process
def test_run_script_is_not_executed(tmp_path):
    marker = tmp_path / "script_ran"
    script = tmp_path / "run.sh"
    script.write_text(
        f"touch {marker}\npython3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm "
        f"$(touch {marker}) trainer.n_gpus_per_node=8\n"
    )
    got = _probe(tmp_path, str(script))
    assert got["rc"] in (0, 1) and not marker.exists() and got["heavy"] == [] and got["net"] == []
