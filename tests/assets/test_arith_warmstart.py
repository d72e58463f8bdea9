"""tiny-qwen2-arith knows the arith output format (a digit, then eos) but not the answers (chance accuracy)."""

from __future__ import annotations

import json

import pytest

from fsdpcfg import paths


@pytest.mark.slow
def test_arith_warmstart_format_without_answers(tiny_model):
    import torch
    import torch.nn.functional as F
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = tiny_model("tiny-qwen2-arith")
    tok = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    rows = [json.loads(x) for x in (paths.data_dir() / "datasets/arith/test.jsonl").read_text().splitlines()]
    ids = torch.tensor(
        [
            tok.apply_chat_template(r["prompt"], add_generation_prompt=True, tokenize=True, return_dict=False)
            for r in rows
        ]
    )
    truth = torch.tensor([int(r["reward_model"]["ground_truth"]) for r in rows])
    digits = torch.tensor([tok.convert_tokens_to_ids(str(d)) for d in range(10)])
    with torch.no_grad():
        p_first = F.softmax(model(ids).logits[:, -1], dim=-1)[:, digits]
        after = torch.cat([ids, digits[truth][:, None]], dim=1)
        p_eos = F.softmax(model(after).logits[:, -1], dim=-1)[:, tok.convert_tokens_to_ids(tok.eos_token)]
    assert p_first.sum(-1).min() > 0.95  # answers with a digit
    assert p_eos.min() > 0.9  # ... then stops
    expected_accuracy = p_first[torch.arange(len(rows)), truth].mean().item()
    assert 0.05 < expected_accuracy < 0.16  # chance is 0.1: the sums were not taught
    assert p_first.max(-1).values.mean() < 0.6  # and it is not confident: GRPO's samples still explore
