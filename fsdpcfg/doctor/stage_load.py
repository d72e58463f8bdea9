"""Stage 1, ``load``: what the workers will load, loaded the way they will load it.

``actor_rollout_ref.model.external_lib`` imported, then the config (``AutoConfig`` with the configured
``trust_remote_code``), the tokenizer (:func:`fsdpcfg.train.model.load_tokenizer`, custom chat template included),
the processor when the folder has one, the first training prompt through the chat template exactly as the trainer
builds it (:class:`fsdpcfg.train.data.PromptDataset`), the model with ``from_pretrained`` in the actor's master
dtype, and one forward pass of that prompt.
"""

from __future__ import annotations

import time
from pathlib import Path

from fsdpcfg.doctor.boundaries import MODEL, failure_from_exception
from fsdpcfg.doctor.report import FAIL, PASS, StageResult

_PROCESSOR_FILES = ("preprocessor_config.json", "processor_config.json", "video_preprocessor_config.json")


def _processor(path: str, trust: bool):
    """The folder's processor (``AutoProcessor``) when it ships a processor config, else ``None``."""
    if not any((Path(path) / f).is_file() for f in _PROCESSOR_FILES):
        return None
    from transformers import AutoProcessor

    return AutoProcessor.from_pretrained(path, trust_remote_code=trust)


def run_load(cfg: dict) -> StageResult:
    """Load everything of ``cfg["actor_rollout_ref"]["model"]`` (resolved config, verl names) on the CPU.

    Returns:
        ``pass`` with the classes, parameter count and chat-template source; ``FAIL`` owned by
        ``model construction`` (or wherever the traceback points) with the error and what to try.
    """
    import torch

    from fsdpcfg.schema import parse_run_config
    from fsdpcfg.train.data import PromptDataset
    from fsdpcfg.train.model import import_external_libs, load_hf_config, load_model, load_tokenizer, to_dtype

    t = time.perf_counter()
    data: dict = {}
    try:
        typed = parse_run_config(cfg)
        mcfg = typed.actor_rollout_ref.model
        import_external_libs(mcfg.external_lib)
        trust = mcfg.trust_remote_code
        config = load_hf_config(mcfg.path, trust, mcfg.override_config)
        data["model_type"] = getattr(config, "model_type", None)
        data["architectures"] = list(getattr(config, "architectures", None) or [])
        tok = load_tokenizer(mcfg)
        data["tokenizer"] = type(tok).__name__
        data["chat_template"] = (
            "custom_chat_template" if mcfg.custom_chat_template else "tokenizer" if tok.chat_template else None
        )
        proc = _processor(mcfg.tokenizer_path or mcfg.path, trust)
        data["processor"] = type(proc).__name__ if proc is not None else None
        dcfg = typed.data.model_copy(
            update={"train_max_samples": 1, "filter_overlong_prompts": False, "truncation": "left"}
        )
        prompt = PromptDataset(dcfg, tok).batch([0])
        data["prompt_tokens"] = int(prompt.attention_mask.sum())
        dtype = to_dtype(typed.actor_rollout_ref.actor.fsdp_config.model_dtype)
        model = load_model(mcfg, dtype)
        data["model_class"] = type(model).__name__
        data["parameters"] = sum(p.numel() for p in model.parameters())
        with torch.no_grad():
            logits = model(input_ids=prompt.input_ids, attention_mask=prompt.attention_mask, use_cache=False).logits
        if not bool(torch.isfinite(logits).all()):
            raise FloatingPointError(f"the forward pass of {type(model).__name__} gives non-finite logits")
    except Exception as e:
        failure = failure_from_exception(e, MODEL)
        if "does not appear to have a file named" in failure.message:  # remote code whose .py files are absent
            failure.fix = (
                "the checkpoint's remote code (the *.py files its config.json auto_map names) is not in "
                "the folder: copy the repository's .py files next to config.json, or use a checkpoint "
                "the installed transformers implements natively"
            )
        return StageResult(1, "", FAIL, time.perf_counter() - t, "", failure=failure, data=data)
    detail = (
        f"{data['model_class']} ({data['parameters'] / 1e6:.2f}M params), {data['tokenizer']}, chat template: "
        f"{data['chat_template'] or 'none'}, processor: {data['processor'] or 'none'}"
    )
    return StageResult(1, "", PASS, time.perf_counter() - t, detail, data=data)
