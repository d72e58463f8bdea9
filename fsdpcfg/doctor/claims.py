"""The compatibility article's models (issue 16's list, with what verl's own documentation and examples claim for
each) as data, set beside what the doctor measured on their rows of ``docs/compatibility.md``.

Each :class:`Claim` names the real checkpoint, what is claimed and where, the matrix rows (assets) that stand for
it, and what fsdpcfg knows beyond the rows (rules, tests). :func:`render_claims` writes the section; the measured
part comes from the rows' reports, never from this file.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Claim:
    """One model of the article.

    Attributes:
        model: the real checkpoint (Hub id) or kind of checkpoint.
        claim: what is claimed about it, with its source.
        rows: the matrix assets that stand for it (same architecture class and model_type).
        known: what fsdpcfg found beyond the rows (the rule or test that shows it).
    """

    model: str
    claim: str
    rows: tuple[str, ...]
    known: str = ""


CLAIMS: list[Claim] = [
    Claim(
        "google/gemma-2-2b-it (Gemma2ForCausalLM)",
        "verl lists Gemma2 among its Hugging Face models (verl README) and reports GSM8K SFT and SFT+PPO runs of "
        "gemma-2-2b-it (docs/algo/baseline.md); its remove-padding note names llama, mistral, gemma1 and qwen only "
        "(docs/perf/perf_tuning.rst).",
        ("tiny-gemma2",),
        "transformers 5.10's sdpa skips attention logit soft-capping (tests/train/patches/test_gemma2.py: sdpa's "
        "logits with a cap equal its logits without), eager and flash-attention apply it: rule FC471 warns on the "
        "native launcher's sdpa default and the matrix runs Gemma 2 with "
        "`override_config.attn_implementation=eager` (the native loader now honours that key). remove_padding: "
        "packed log-probs equal padded ones with a sliding window that bites (window 3, both sdpa and eager), so "
        "gemma2 is a supported model type of the patch; the hf rollout replica loads with the same attention "
        "setting as the actor.",
    ),
    Claim(
        "berkeley-nest/Starling-LM-7B-alpha",
        "a Mistral-7B fine-tune: its config.json names MistralForCausalLM, model_type mistral.",
        ("tiny-starling", "tiny-mistral"),
        "no row of its own is needed: every rule and patch dispatches on model_type, so the mistral rows cover "
        "it (tiny-starling is MistralConfig()'s Mistral-7B-v0.1 sizes with a 4096-token sliding window; "
        "tiny-mistral is Mistral-7B-Instruct-v0.3's real config, no sliding window).",
    ),
    Claim(
        "microsoft/Phi-3-mini-128k-instruct, microsoft/Phi-3-medium-4k-instruct (Phi3ForCausalLM)",
        "native Phi3ForCausalLM in transformers; mini is MHA with longrope scaling, medium GQA (40 / 10 heads).",
        ("tiny-phi3", "tiny-phi3-medium"),
        "Phi-3-mini's config.json keeps its auto_map but model_type phi3 is native, so no remote code is needed "
        "(FC402 stays silent).",
    ),
    Claim(
        "MoE: mistralai/Mixtral-8x7B-v0.1, Qwen/Qwen3-30B-A3B",
        "verl runs Mixtral on its Megatron backend (docs/perf/dpsk.md) and Qwen3-30B-A3B-Base with actor "
        "strategy fsdp2 and offload (v0.9.0 examples/sapo_trainer/run_qwen3_30b_a3b_fsdp.sh).",
        ("tiny-mixtral", "tiny-qwen3-moe"),
        "both MoE classes shard per decoder layer under FSDP1 and FSDP2 and pass remove_padding's packed-vs-padded "
        "comparison (tests/train/patches/test_remove_padding.py).",
    ),
    Claim(
        "a config.json whose architectures names a class transformers does not define",
        "transformers' Auto classes build by model_type and ignore the name; vLLM and SGLang resolve the name.",
        ("tiny-unknown-arch",),
        "`fsdpcfg check` reports FC470 (an error naming the class, the class transformers would build instead, "
        "and the fix), with no traceback; the doctor stops at stage 0 on it.",
    ),
]


def render_claims(outcome: Callable[[str], str]) -> list[str]:
    """Markdown lines of the section; ``outcome(asset)`` is what the doctor measured on that row (one phrase)."""
    lines = [
        "## The compatibility article's models",
        "",
        "What is claimed for each model of the article, the rows above that stand for it, and what the doctor "
        "measured on those rows (CPU, tiny scaled-down models: plumbing, not quality).",
        "",
    ]
    for c in CLAIMS:
        measured = "; ".join(f"{a}: {outcome(a)}" for a in c.rows)
        lines.append(
            f"- **{c.model}**. Claimed: {c.claim} Rows: {', '.join(c.rows)}. Measured: {measured}."
            + (f" Also known: {c.known}" if c.known else "")
        )
    return lines + [""]
