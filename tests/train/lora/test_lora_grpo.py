"""A GRPO run with LoRA through `python -m fsdpcfg +recipe=qwen_grpo actor_rollout_ref.model.lora_rank=4` on 2 CPU
ranks (FSDP2): two steps, each synchronising the PEFT rollout replica (base + adapter, then the adapter only),
and a Hugging Face checkpoint of merged weights that `from_pretrained` loads without PEFT, with the PEFT adapter in
`lora_adapter/` that gives the same logits on the base (within 1e-4, fp32)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import pytest


@pytest.mark.distributed
@pytest.mark.slow
def test_grpo_with_lora_two_steps(tiny_model_path, tmp_path):
    run_dir, ckpt = tmp_path / "run", tmp_path / "ckpt"
    cmd = [
        sys.executable,
        "-m",
        "fsdpcfg",
        "+recipe=qwen_grpo",
        "actor_rollout_ref.model.lora_rank=4",
        "actor_rollout_ref.model.lora_alpha=8",
        "actor_rollout_ref.actor.optim.lr=1e-2",
        "trainer.total_training_steps=2",
        "trainer.save_freq=-1",
        f"fsdpcfg.run_dir={run_dir}",
        f"trainer.default_local_dir={ckpt}",
        "trainer.logger=[console]",
    ]
    proc = subprocess.run(
        cmd, capture_output=True, text=True, timeout=900, env={**os.environ, "PYTHONWARNINGS": "ignore"}
    )
    assert proc.returncode == 0, (proc.stdout[-3000:], proc.stderr[-3000:])
    # step 0 is the recipe's validation before training (trainer.val_before_train)
    metrics = [m for m in map(json.loads, (run_dir / "metrics.jsonl").read_text().splitlines()) if m["step"] > 0]
    assert [m["step"] for m in metrics] == [1, 2]
    assert all(math.isfinite(m["actor/grad_norm"]) for m in metrics)
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM

    names = set(load_file(str(ckpt / "global_step_2" / "model.safetensors")))
    assert "model.layers.0.self_attn.q_proj.weight" in names
    assert not [n for n in names if "lora_" in n or "base_layer" in n or n.startswith("base_model.")]
    merged = AutoModelForCausalLM.from_pretrained(ckpt / "global_step_2").eval()
    # the PEFT adapter beside the merged weights: on the base it gives the merged model's logits
    import torch
    from peft import PeftModel

    adapter = ckpt / "global_step_2" / "lora_adapter"
    assert (adapter / "adapter_config.json").is_file() and (adapter / "adapter_model.safetensors").is_file()
    assert all(".lora_A." in k or ".lora_B." in k for k in load_file(str(adapter / "adapter_model.safetensors")))
    peft_model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(tiny_model_path), adapter).eval()
    ids = torch.arange(3, 40).reshape(1, -1)
    with torch.no_grad():
        diff = float((peft_model(input_ids=ids).logits - merged(input_ids=ids).logits).abs().max())
    assert diff <= 1e-4, diff
