"""``fsdpcfg ls``: recipes and every group option with descriptions, from the tree."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from fsdpcfg.cli.main import main


def test_ls_lists_recipes_and_options(capsys):
    assert main(["ls"]) == 0
    out = capsys.readouterr().out
    import re

    # columns are padded to the longest name, so match the row, not the exact spacing
    assert re.search(r"^qwen_grpo\s+ppo\s+GRPO on GSM8K with a Qwen2-architecture model\.$", out, re.M)
    assert re.search(r"^qwen_sft\s+sft\s+\S", out, re.M)
    line = next(ln for ln in out.splitlines() if ln.startswith("engine ") and " fsdp2 *" in ln)
    assert "FSDP2: torch.distributed.fsdp.fully_shard" in line
    for group in ("patches", "rollout", "algorithm", "model", "data", "reward", "trainer", "launcher"):
        assert any(ln.startswith(group + " ") for ln in out.splitlines()), group


def test_ls_one_group_and_json(capsys):
    assert main(["ls", "rollout", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["recipes"] == []
    assert {o["name"] for o in doc["options"]} == {"hf", "vllm", "sglang"}
    hf = next(o for o in doc["options"] if o["name"] == "hf")
    assert hf["default"] is True and hf["description"].startswith("Rollout with an unsharded Hugging Face")


def test_ls_unknown_group_suggests(capsys):
    assert main(["ls", "rolout"]) == 2
    err = capsys.readouterr().err
    assert "no config group `rolout`" in err and "did you mean `rollout`" in err and "Traceback" not in err


@pytest.mark.slow  # end to end: a fresh Python process
def test_catalogue_commands_do_not_import_torch():
    code = (
        "import sys; from fsdpcfg.cli.main import main; "
        "[main(a) for a in (['ls'], ['show', 'qwen_grpo', '-k', 'data'], ['diff', 'qwen_grpo', 'qwen_grpo'], "
        "['explain', 'FC601'], ['explain', 'actor_rollout_ref.rollout.n', 'qwen_grpo'], ['schema', '--check'])]; "
        "bad = [m for m in ('torch', 'transformers', 'verl') if m in sys.modules]; "
        "sys.exit(f'imported {bad}' if bad else 0)"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
