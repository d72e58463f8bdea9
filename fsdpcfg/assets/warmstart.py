"""Post-build steps that turn a random-init tiny model into a useful starting point (deterministic).

``arith_format``: teach the output FORMAT of the arith task without its ANSWERS. For every arith prompt
(rendered with the model's chat template) the first response token is trained towards the uniform
distribution over the ten digit tokens (the expectation of training on random digit labels, without their
sampling noise) and the token after a digit towards ``eos`` (``<|im_end|>``). The result answers
"<digit><|im_end|>" (P(digit) ~0.999, P(eos | digit) ~0.99) with every digit about equally likely, so the
arith reward starts at chance (0.1) with maximal exploration among the digits, and anything above chance
has to be learned from the reward. Single-threaded (bit-reproducible), 60 AdamW steps.

Measured (single-process GRPO probe, 4 questions x 8 samples per step, one on-policy update per step):
this start does not make the sums easy: with lr 1e-2 the sampled reward rose from 0.11 to 0.2-0.28 around
steps 20-40 and fell back; 3e-3 stayed at chance for 60 steps; 3e-2 collapsed; lr 1e-2 with gradient clipping
1.0 over 100 steps gave 10-step means 0.11 0.15 0.20 0.29 0.17 0.23 0.12 0.10 0.23 0.20 (noisy, above chance).
A target that gives each digit a preference (total digit mass only, or random per-question labels) learned no better.
"""

from __future__ import annotations

import json
from pathlib import Path

from fsdpcfg import paths

#: Steps and learning rate of the format warm start (AdamW, cosine decay to zero).
ARITH_FORMAT_STEPS = 60
ARITH_FORMAT_LR = 2e-2


def run(name: str, folder: Path, seed: int) -> None:
    """Run the warm start ``name`` on the model saved in ``folder`` and save it back in place.

    Raises:
        KeyError: unknown warm start name.
    """
    {"arith_format": _arith_format}[name](folder, seed)


def settings(name: str) -> dict[str, object]:
    """Return the hyper-parameters of warm start ``name`` (part of the asset's fingerprint)."""
    return {"arith_format": {"steps": ARITH_FORMAT_STEPS, "lr": ARITH_FORMAT_LR, "prompts": arith_prompts()}}[name]


def arith_prompts() -> list[list[dict[str, str]]]:
    """Return the chat prompts of the 55 arith questions (``fsdpcfg/data/datasets/arith/test.jsonl``)."""
    path = paths.data_dir() / "datasets" / "arith" / "test.jsonl"
    return [json.loads(line)["prompt"] for line in path.read_text().splitlines()]


def _arith_format(folder: Path, seed: int) -> None:
    import torch
    import torch.nn.functional as F
    from transformers import AutoModelForCausalLM, AutoTokenizer

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        tok = AutoTokenizer.from_pretrained(folder)
        model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
        digits = torch.tensor([tok.convert_tokens_to_ids(str(d)) for d in range(10)])
        eos = tok.convert_tokens_to_ids(tok.eos_token)
        assert isinstance(eos, int)  # one token in, one id out
        prompts = [
            tok.apply_chat_template(p, add_generation_prompt=True, tokenize=True, return_dict=False)
            for p in arith_prompts()
        ]
        if len({len(p) for p in prompts}) != 1:
            raise ValueError("arith prompts must all have the same token length")
        prompt_ids = torch.tensor(prompts)
        gen = torch.Generator().manual_seed(seed)
        opt = torch.optim.AdamW(model.parameters(), lr=ARITH_FORMAT_LR, weight_decay=0.0, fused=True)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=ARITH_FORMAT_STEPS)
        model.train()
        for _ in range(ARITH_FORMAT_STEPS):
            fed = digits[torch.randint(0, 10, (len(prompts),), generator=gen)]
            ids = torch.cat([prompt_ids, fed[:, None]], dim=1)
            hidden = model.model(input_ids=ids).last_hidden_state[:, -2:]  # positions predicting digit, eos
            logits = model.lm_head(hidden)
            logp_first = F.log_softmax(logits[:, 0], dim=-1)
            loss_digit = -logp_first[:, digits].mean()  # cross-entropy to uniform over the ten digits
            loss_eos = F.cross_entropy(logits[:, 1], torch.full((len(prompts),), eos))
            opt.zero_grad(set_to_none=True)
            (loss_digit + loss_eos).backward()
            opt.step()
            sched.step()
        model.eval()
        model.save_pretrained(folder, safe_serialization=True)
    finally:
        torch.set_num_threads(threads)
