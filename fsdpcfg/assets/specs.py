"""The table of offline model assets: which real config each tiny model scales down, with which tokenizer.

Pure data, no torch: ``fsdpcfg assets list`` and the checker may read it cheaply. Real configs live in
``fsdpcfg/data/model_configs/<dir>/`` and real tokenizers in ``fsdpcfg/data/tokenizers/<name>/`` (public models'
files, copied byte for byte; source, commit and license of each in the ``SOURCES.md`` beside them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: Default scale-down: small enough that the whole default set builds in seconds on 2 CPU cores.
TINY: dict[str, Any] = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 128}


@dataclass(frozen=True)
class ModelSpec:
    """One buildable (or config-only) offline model folder under ``$FSDPCFG_HOME/models/<name>``.

    Attributes:
        name: folder name, e.g. ``tiny-qwen2``.
        source: directory under ``fsdpcfg/data/model_configs`` holding the real ``config.json``.
        tokenizer: directory under ``fsdpcfg/data/tokenizers`` whose files are copied verbatim, or ``None``.
        model_tokenizer_files: files of the real model's folder copied over the tokenizer's own (its real
            ``tokenizer_config.json`` etc.), used when the model's tokenizer is the tokenizer folder's family.
        scale: keys set on the real config (after the generic :data:`TINY` scale-down).
        weights: ``False`` for a config-only folder (the installed transformers cannot build the model_type
            without remote code).
        default: built by ``fsdpcfg assets build`` without ``--all``.
        seed: torch seed of the random initialisation (byte-identical weights for a given seed).
        notes: why a stand-in tokenizer or an unusual choice was made; written to the folder's SOURCES.md.
        warmstart: name of a post-build step (see :mod:`fsdpcfg.assets.warmstart`), or ``None``.
        base: for a warm-started asset, the spec whose config and tokenizer it starts from.
        defaults: a ``model_type`` whose transformers config class, called with ``defaults_args``, gives the
            config instead of ``source``'s ``config.json`` (for models whose real config the project does not
            have; ``source`` then only supplies ``model_tokenizer_files``, and may be ``None``).
        defaults_args: keyword arguments of that config class call (``architectures`` at least).
        edits: keys set on the config after scaling (e.g. an ``architectures`` entry the installed transformers
            does not define), listed in the folder's SOURCES.md.
        init_on_accelerator: run ``from_config`` under ``torch.device("cuda")`` when CUDA is available (a large
            asset; the bytes then differ from a CPU build of the same seed).
        covers: real checkpoints this asset's row stands for beyond ``source`` (a fine-tune of the same
            architecture), shown by ``fsdpcfg assets list`` and the compatibility report.
    """

    name: str
    source: str | None
    tokenizer: str | None
    model_tokenizer_files: tuple[str, ...] = ()
    scale: dict[str, Any] = field(default_factory=dict)
    weights: bool = True
    default: bool = True
    seed: int = 0
    notes: str = ""
    warmstart: str | None = None
    base: str | None = None
    defaults: str | None = None
    defaults_args: dict[str, Any] = field(default_factory=dict)
    edits: dict[str, Any] = field(default_factory=dict)
    covers: tuple[str, ...] = ()
    init_on_accelerator: bool = False

    @property
    def built_from(self) -> str:
        """``real config file`` or ``transformers defaults`` (the ``assets list`` column)."""
        return "transformers defaults" if self.defaults else "real config file"

    @property
    def source_label(self) -> str:
        """Where the config comes from, for people: the real config's folder, or the config class call."""
        if self.defaults:
            n = len([k for k in self.defaults_args if k != "architectures"])
            return f"{_CONFIG_CLASSES.get(self.defaults, self.defaults)}()" + (f" + {n} keys" if n else "")
        return str(self.source)


#: transformers config class of each ``ModelSpec.defaults`` model_type (for labels; the build looks it up itself).
_CONFIG_CLASSES = {
    "gemma2": "Gemma2Config",
    "phi3": "Phi3Config",
    "mistral": "MistralConfig",
    "qwen3_moe": "Qwen3MoeConfig",
}

_QWEN_TOK = ("qwen2.5-0.5b-instruct", "Qwen2.5 BPE (vocab.json + merges.txt) and its real tokenizer_config.json")

SPECS: dict[str, ModelSpec] = {
    s.name: s
    for s in [
        ModelSpec(
            "tiny-qwen2",
            "Qwen__Qwen2.5-0.5B-Instruct__resaved",
            "qwen2.5-0.5b-instruct",
            notes="The main offline model: Qwen2.5-0.5B-Instruct scaled down, real Qwen2.5 tokenizer and chat "
            "template (tokenizer_config.json is the Hub original, not the resaved one).",
        ),
        ModelSpec(
            "tiny-qwen3",
            "Qwen__Qwen3-8B",
            "qwen3",
            notes="Qwen3-8B scaled down (head_dim set explicitly, as Qwen3 configs do), real Qwen3 tokenizer.",
        ),
        ModelSpec(
            "tiny-llama3",
            "meta-llama__Llama-3.2-3B-Instruct",
            "gpt2",
            notes="Llama-3.2's own tiktoken-style tokenizer (128256 ids) is not available offline; the GPT-2 "
            "byte-level BPE stands in (ids < 50257 fit the real 128256-row embedding). Its special "
            "ids therefore differ from config.json's bos 128000 / eos 128009, and there is no chat "
            "template. tokenizer_config.json is authored (tokenizer_class GPT2Tokenizer).",
        ),
        ModelSpec(
            "tiny-llama2",
            "meta-llama__Llama-2-7b-hf",
            "llama2-7b-hf",
            notes="Llama-2-7b base: real sentencepiece tokenizer, no chat template, no pad token (both real).",
        ),
        ModelSpec(
            "tiny-mistral",
            "mistralai__Mistral-7B-Instruct-v0.3",
            "mistral-7b-instruct-v0.3",
            notes="Mistral-7B-Instruct-v0.3: real v3 tokenizer (32768) and [INST] chat template; pad null.",
        ),
        ModelSpec(
            "tiny-mixtral",
            "mistralai__Mixtral-8x7B-v0.1",
            "llama2-7b-hf",
            model_tokenizer_files=("tokenizer_config.json", "special_tokens_map.json"),
            scale={"num_local_experts": 4, "num_experts_per_tok": 2},
            notes="Mixtral-8x7B base (4 of its 8 experts kept, top-2 routing kept). Mixtral uses the Mistral "
            "v0.1 sentencepiece (32000 ids), which is not available; the v0.3 tokenizer has 32768 ids "
            "and would overflow the real 32000-row embedding, so the Llama-2 sentencepiece (32000 ids, "
            "same <unk>/<s>/</s> = 0/1/2) stands in, with Mixtral's real tokenizer_config.json "
            "(no chat template, pad null).",
        ),
        ModelSpec(
            "tiny-gemma",
            "google__gemma-2b-it",
            "llama2-7b-hf",
            notes="gemma-2b-it (MQA: 1 KV head kept, real 256000-row embedding). Gemma's sentencepiece is not "
            "available: the Llama-2 tokenizer stands in, so token ids and specials differ from Gemma's "
            "and there is no chat template; config.json's hidden_act 'gelu' is kept as in the real file.",
        ),
        ModelSpec(
            "tiny-phi3",
            "microsoft__Phi-3-mini-128k-instruct",
            "llama2-7b-hf",
            model_tokenizer_files=("tokenizer_config.json", "special_tokens_map.json", "added_tokens.json"),
            notes="Phi-3-mini-128k-instruct built with the native phi3 class (config.json keeps its real "
            "auto_map). Phi-3 uses the Llama-2 sentencepiece plus 11 added tokens (32000-32010): the "
            "Llama-2 tokenizer with Phi-3's real tokenizer_config.json/added_tokens.json is that "
            "tokenizer. longrope long/short factors are subsampled to head_dim/2 entries.",
        ),
        ModelSpec(
            "tiny-deepseek-v2",
            "deepseek-ai__DeepSeek-V2-Lite",
            "llama2-7b-hf",
            scale={
                "n_routed_experts": 4,
                "n_shared_experts": 1,
                "num_experts_per_tok": 2,
                "moe_intermediate_size": 32,
                "kv_lora_rank": 16,
                "qk_nope_head_dim": 16,
                "qk_rope_head_dim": 8,
                "v_head_dim": 16,
            },
            notes="DeepSeek-V2-Lite (MLA + MoE, first layer dense) built with the native deepseek_v2 class; "
            "config.json keeps its real auto_map. DeepSeek's own tokenizer (102400 ids) is not "
            "available: the Llama-2 sentencepiece stands in, so its bos/eos (1/2) differ from "
            "config.json's 100000/100001.",
        ),
        ModelSpec(
            "tiny-gemma2",
            None,
            "llama2-7b-hf",
            defaults="gemma2",
            defaults_args={"architectures": ["Gemma2ForCausalLM"]},
            covers=("google/gemma-2-2b-it",),
            notes="Gemma 2 from transformers' own Gemma2Config() defaults (the gemma-2-2b sizes: GQA 8/4 heads, "
            "head_dim 256, sliding window 4096 on alternate layers, attention logit soft-capping 50, final "
            "logit soft-capping 30, tied 256000-row embedding); no real Gemma 2 config.json is available "
            "offline. Gemma's sentencepiece is not available: the Llama-2 tokenizer stands in (no chat "
            "template). layer_types is cut to the scaled layer count.",
        ),
        ModelSpec(
            "tiny-starling",
            None,
            "llama2-7b-hf",
            defaults="mistral",
            defaults_args={"architectures": ["MistralForCausalLM"]},
            covers=("berkeley-nest/Starling-LM-7B-alpha",),
            notes="Starling-LM-7B-alpha is a fine-tune of a Mistral-7B-v0.1 model (openchat 3.5): its config.json "
            "names MistralForCausalLM, model_type mistral, so the mistral rows (this one and tiny-mistral) "
            "cover it. Its real config.json is not available offline: MistralConfig() defaults (the "
            "Mistral-7B-v0.1 sizes, sliding window 4096, rope theta 1e4) stand in; Starling's own file may "
            "differ in vocab_size and max_position_embeddings, not in the architecture class. Llama-2 "
            "sentencepiece (32000 ids, same <unk>/<s>/</s> as Mistral v0.1) stands in for its tokenizer.",
        ),
        ModelSpec(
            "tiny-phi3-medium",
            "microsoft__Phi-3-mini-128k-instruct",
            "llama2-7b-hf",
            defaults="phi3",
            defaults_args={
                "architectures": ["Phi3ForCausalLM"],
                "hidden_size": 5120,
                "intermediate_size": 17920,
                "num_hidden_layers": 40,
                "num_attention_heads": 40,
                "num_key_value_heads": 10,
            },
            model_tokenizer_files=("tokenizer_config.json", "special_tokens_map.json", "added_tokens.json"),
            covers=("microsoft/Phi-3-medium-4k-instruct",),
            notes="Phi-3-medium: Phi3Config() defaults (4k context, default rope, vocab 32064) with the medium "
            "model's published sizes (hidden 5120, 40 layers, 40 query / 10 KV heads: GQA, where mini is "
            "MHA); its real config.json is not available offline. Tokenizer as tiny-phi3 (Llama-2 "
            "sentencepiece + Phi-3-mini's real tokenizer_config.json and added tokens, the same family).",
        ),
        ModelSpec(
            "tiny-qwen3-moe",
            "Qwen__Qwen3-30B-A3B",
            "qwen3",
            defaults="qwen3_moe",
            defaults_args={"architectures": ["Qwen3MoeForCausalLM"], "bos_token_id": 151643, "eos_token_id": 151645},
            model_tokenizer_files=("tokenizer_config.json",),
            scale={"num_local_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 32},
            covers=("Qwen/Qwen3-30B-A3B",),
            notes="Qwen3-MoE from Qwen3MoeConfig() defaults (128 experts top-8 scaled to 4 experts top-2, every "
            "layer sparse); only Qwen3-30B-A3B's real tokenizer_config.json is available offline, used with "
            "the real Qwen3 tokenizer files. bos/eos ids set to the tokenizer's <|endoftext|>/<|im_end|>.",
        ),
        ModelSpec(
            "tiny-unknown-arch",
            "meta-llama__Llama-2-7b-hf",
            "llama2-7b-hf",
            edits={"architectures": ["LlamaMTPForCausalLM"]},
            notes="Llama-2-7b scaled down (weights of LlamaForCausalLM) whose config.json names an architecture "
            "class, LlamaMTPForCausalLM, that no transformers version defines (an invented name, as a "
            "checkpoint written by newer or custom code would carry). transformers' Auto classes build "
            "by model_type and ignore the name; vLLM and SGLang resolve the name and refuse it. The "
            "checker's case for rule FC470.",
        ),
        ModelSpec(
            "tiny-deepseek-v3",
            "deepseek-ai__DeepSeek-R1",
            None,
            default=False,
            scale={
                "n_routed_experts": 4,
                "n_shared_experts": 1,
                "num_experts_per_tok": 2,
                "n_group": 1,
                "topk_group": 1,
                "moe_intermediate_size": 32,
                "q_lora_rank": 16,
                "kv_lora_rank": 16,
                "qk_nope_head_dim": 16,
                "qk_rope_head_dim": 8,
                "v_head_dim": 16,
                "first_k_dense_replace": 1,
                "num_nextn_predict_layers": 0,
                "quantization_config": None,
            },
            notes="DeepSeek-R1 (deepseek_v3) scaled down, fp8 quantization_config dropped (random fp32 "
            "weights), no tokenizer (DeepSeek's is not available).",
        ),
        ModelSpec(
            "qwen-v1-config",
            "Qwen__Qwen-7B",
            None,
            weights=False,
            default=True,
            model_tokenizer_files=("tokenizer_config.json",),
            notes="Qwen-7B (model_type 'qwen', QWenLMHeadModel): transformers has no native class, it needs "
            "trust_remote_code and the repository's modeling_qwen.py, which is not available offline. "
            "Config-only folder (the real config.json, tokenizer_config.json and generation_config.json, "
            "no weights), for the checker and the doctor's remote-code case.",
        ),
        ModelSpec(
            "qwen2-100m",
            "Qwen__Qwen2.5-0.5B-Instruct__resaved",
            "qwen2.5-0.5b-instruct",
            default=False,
            scale={
                "hidden_size": 512,
                "num_hidden_layers": 8,
                "num_attention_heads": 8,
                "num_key_value_heads": 2,
                "intermediate_size": 2048,
            },
            notes="About 100M parameters (78M of them the tied 151936 x 512 embedding), Qwen2 architecture, "
            "for memory and throughput work. Built on demand only.",
        ),
        ModelSpec(
            "qwen2.5-0.5b-random",
            "Qwen__Qwen2.5-0.5B-Instruct__resaved",
            "qwen2.5-0.5b-instruct",
            default=False,
            scale={
                "hidden_size": 896,
                "num_hidden_layers": 24,
                "num_attention_heads": 14,
                "num_key_value_heads": 2,
                "intermediate_size": 4864,
            },
            init_on_accelerator=True,
            notes="The full-size Qwen2.5-0.5B-Instruct architecture (494M parameters, every size as in the real "
            "config.json) with random weights, for the GPU check (scripts/gpu_check.sh). Built on demand; on "
            "a CUDA machine the random init runs on the GPU (seconds), then save_pretrained (about 2 GB).",
        ),
        ModelSpec(
            "tiny-qwen2-arith",
            "Qwen__Qwen2.5-0.5B-Instruct__resaved",
            "qwen2.5-0.5b-instruct",
            default=False,
            warmstart="arith_format",
            base="tiny-qwen2",
            notes="tiny-qwen2 after a short deterministic warm start on the arith prompts that teaches the "
            "format only (answer with a digit, every digit about equally likely, then <|im_end|>; no "
            "labels), so GRPO on the arith task starts near chance "
            "accuracy and has to learn the sums (fsdpcfg/assets/warmstart.py).",
        ),
    ]
}


def get_spec(name: str) -> ModelSpec:
    """Return the spec called ``name``.

    Raises:
        fsdpcfg.errors.ConfigError: unknown name (the message lists the known ones and the closest match).
    """
    from fsdpcfg.errors import ConfigError, did_you_mean

    if name not in SPECS:
        close = did_you_mean(name, SPECS)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise ConfigError(
            f"unknown offline asset {name!r}", key="asset", value=name, fix=f"{hint}known assets: {', '.join(SPECS)}"
        )
    return SPECS[name]
