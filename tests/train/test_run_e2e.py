"""The run command end to end: ``python -m fsdpcfg +recipe=qwen_grpo trainer.total_training_steps=2 ...`` writes
per-step metrics (JSONL, TensorBoard), the resolved config and a checkpoint ``from_pretrained`` loads; a second
invocation resumes from it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml

REPO = Path(__file__).resolve().parents[2]
METRIC_KEYS = [
    "critic/rewards/mean",
    "critic/rewards/max",
    "actor/pg_loss",
    "actor/kl_loss",
    "actor/pg_clipfrac",
    "actor/grad_norm",
    "response_length/mean",
    "perf/throughput",
    "timing_s/step",
    "actor/lr",
    "actor/entropy",
    "perf/max_rss_gb",
    "perf/cpu_memory_used_gb",
    "timing_per_token_ms/gen",
    *(f"timing_s/{p}" for p in ("update_weights", "gen", "reward", "old_log_prob", "ref", "adv", "update_actor")),
]


def _run(args: list[str], timeout: int = 400) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "fsdpcfg", *args], cwd=REPO, capture_output=True, text=True, timeout=timeout
    )


@pytest.mark.distributed
@pytest.mark.slow
def test_qwen_grpo_two_steps_then_resume(tiny_model_path, tmp_path):
    run_dir, ckpt_dir = tmp_path / "run", tmp_path / "ckpt"
    common = [
        "+recipe=qwen_grpo",
        f"fsdpcfg.run_dir={run_dir}",
        f"trainer.default_local_dir={ckpt_dir}",
        "data.max_response_length=8",
        "trainer.save_freq=1",
    ]
    proc = _run(common + ["trainer.total_training_steps=2"])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    # qwen_grpo validates before the first step (a row of its own at step 0) and after the last
    assert [r["step"] for r in rows] == [0, 1, 2]
    assert "val-core/openai/gsm8k/reward/mean@1" in rows[0] and "timing_s/step" not in rows[0]
    rows = rows[1:]
    for r in rows:
        missing = [k for k in METRIC_KEYS if k not in r]
        assert not missing, missing
        assert r["response_length/mean"] <= 8
        assert r["timing_s/step"] > 0 and r["perf/throughput"] > 0
        phases = sum(
            r[f"timing_s/{p}"]
            for p in ("update_weights", "gen", "reward", "old_log_prob", "ref", "adv", "update_actor")
        )
        assert phases <= r["timing_s/step"] * 1.001  # the phases are inside the step
        # a random tiny model is near uniform over Qwen2.5's 151,936 tokens: entropy just under ln(V) = 11.93
        assert 8.0 < r["actor/entropy"] < 11.94
        assert 0.1 < r["perf/max_rss_gb"] < 24
    assert list((run_dir / "tensorboard").glob("events.out.tfevents.*"))
    cfg = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert cfg["trainer"]["total_training_steps"] == 2
    assert cfg["actor_rollout_ref"]["model"]["path"] == str(tiny_model_path)
    text = (run_dir / "config.yaml").read_text()
    assert "${" not in "".join(ln for ln in text.splitlines(True) if not ln.startswith("#"))  # values resolved
    assert text.startswith('# fsdpcfg given: fsdpcfg.run_dir = "')  # the folders as given, for a rerun from it
    assert (ckpt_dir / "latest_checkpointed_iteration.txt").read_text().strip() == "2"
    step2 = ckpt_dir / "global_step_2"
    assert (step2 / "MANIFEST.json").is_file() and (ckpt_dir / "global_step_1" / "MANIFEST.json").is_file()
    assert not list(ckpt_dir.glob("*.tmp"))
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(step2)
    tok = AutoTokenizer.from_pretrained(step2)
    assert type(model).__name__ == "Qwen2ForCausalLM"
    assert tok("Hello world").input_ids == [9707, 1879]
    base = AutoModelForCausalLM.from_pretrained(tiny_model_path)
    changed = any(
        (a - b).abs().max() > 0 for a, b in zip(model.state_dict().values(), base.state_dict().values(), strict=True)
    )
    assert changed, "two GRPO steps left every weight unchanged"
    # the Hugging Face export of global_step_2 is cut short; its trainer state is intact
    from fsdpcfg.native.ckpt_layout import damage

    weights = step2 / "model.safetensors"
    saved = {k: v.clone() for k, v in model.state_dict().items()}  # from_pretrained's tensors map the file itself
    del model
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    assert [f for f, _ in damage(step2)] == ["model.safetensors"]
    dry = _run(common + ["trainer.total_training_steps=3", "--dry-run"])
    assert f"would resume {step2} (step 2); its Hugging Face export is damaged" in dry.stdout + dry.stderr
    # resume: one more step continues from global_step_2 (sampler, optimizer, scheduler restored) and writes
    # global_step_2 again from its state first
    proc = _run(common + ["trainer.total_training_steps=3"])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "resumed from" in proc.stdout + proc.stderr
    assert "export of" in proc.stdout and "writing global_step_2 again" in proc.stdout
    assert damage(step2) == [] and damage(ckpt_dir / "global_step_3") == []
    again = AutoModelForCausalLM.from_pretrained(step2).state_dict()
    differ = [k for k, v in saved.items() if not torch.equal(v, again[k])]
    assert not differ, differ
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [0, 1, 2, 3]  # one row per step; the resumed run does not re-validate
    assert (ckpt_dir / "latest_checkpointed_iteration.txt").read_text().strip() == "3"


@pytest.mark.distributed
@pytest.mark.slow
def test_worker_config_error_is_reported_without_traceback(tiny_model_path, tmp_path):
    # GSM8K prompts are ~80-200 tokens: max_prompt_length 16 with truncation=error fails in the workers.
    proc = _run(
        [
            "+recipe=qwen_grpo",
            f"fsdpcfg.run_dir={tmp_path / 'run'}",
            f"trainer.default_local_dir={tmp_path / 'ckpt'}",
            "data.max_prompt_length=16",
        ],
        timeout=200,
    )
    assert proc.returncode == 1
    assert "data.max_prompt_length" in proc.stderr and "truncation" in proc.stderr
    assert not list((tmp_path / "ckpt").glob("global_step_*"))
