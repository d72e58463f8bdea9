"""Load the Hugging Face model and tokenizer a run trains, exactly as configured (launch time, in the workers).

``actor_rollout_ref.model.external_lib`` is imported first (it may register model classes), then the auto class
is resolved from ``config.json`` and ``from_pretrained`` is called with the configured ``trust_remote_code``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Union

import torch

from fsdpcfg.errors import ConfigError

if TYPE_CHECKING:
    from torch import nn
    from transformers import PreTrainedModel

    from fsdpcfg.schema.actor import Precision
    from fsdpcfg.schema.model import ModelSection
    from fsdpcfg.schema.sft import SftModel

#: the model section of a run: ``actor_rollout_ref.model`` (GRPO) or ``model`` (SFT); both have the fields read here
ModelCfg = Union["ModelSection", "SftModel"]

#: every precision name the schema accepts (``fsdpcfg.schema._base.Precision``: verl's ``PrecisionType.to_dtype``,
#: verl/utils/torch_dtypes.py) -> its torch dtype; ``tests/train/test_model_load.py`` holds the keys to the literal.
DTYPES: dict[str, torch.dtype] = {
    "fp32": torch.float32,
    "float32": torch.float32,
    "32": torch.float32,
    "bf16": torch.bfloat16,
    "bfloat16": torch.bfloat16,
    "fp16": torch.float16,
    "float16": torch.float16,
    "16": torch.float16,
}


def to_dtype(name: Precision | torch.dtype) -> torch.dtype:
    """The torch dtype of a config precision name (``fp32``, ``bfloat16``, ``16``: the schema's ``Precision``
    literal, which validated it before the run started)."""
    return name if isinstance(name, torch.dtype) else DTYPES[name]


def import_external_libs(libs: str | list[str] | None) -> None:
    """Import ``actor_rollout_ref.model.external_lib`` (a module name or a list of them).

    Raises:
        ConfigError: a module cannot be imported (names it).
    """
    if not libs:
        return
    for name in [libs] if isinstance(libs, str) else list(libs):
        try:
            importlib.import_module(name)
        except ImportError as e:
            raise ConfigError(
                f"cannot import {name!r}: {e}",
                key="actor_rollout_ref.model.external_lib",
                value=name,
                fix="install the module or remove it from external_lib",
            ) from None


def load_hf_config(path: str, trust_remote_code: bool, override_config: dict | None = None):
    """Read ``config.json`` with ``AutoConfig`` (``override_config`` entries set on it).

    Raises:
        ConfigError: the model cannot be found or read.
    """
    from transformers import AutoConfig

    try:
        config = AutoConfig.from_pretrained(path, trust_remote_code=trust_remote_code)
    except Exception as e:  # OSError (missing), ValueError (remote code refused), ...
        raise ConfigError(
            f"cannot load the model config from {path!r}: {str(e).splitlines()[0]}",
            key="actor_rollout_ref.model.path",
            value=path,
            fix="point it at a local folder with config.json (model=tiny_qwen2 for the offline "
            "model; `fsdpcfg assets build` builds it)",
        ) from None
    for k, v in (override_config or {}).items():
        if k == ATTN_KEY:  # not a config attribute: the loader's argument (see attn_implementation)
            continue
        setattr(config, k, v)
    return config


#: ``override_config`` entry verl reads as the attention implementation (verl/workers/config/model.py:
#: ``override_config.get("attn_implementation", "flash_attention_2")``).
ATTN_KEY = "attn_implementation"


def attn_implementation(model_cfg: ModelCfg) -> str | None:
    """The attention implementation ``actor_rollout_ref.model.override_config.attn_implementation`` asks for, or
    ``None`` (transformers' default: ``sdpa`` where the architecture supports it). Passed to ``from_pretrained`` /
    ``from_config``: set on the config object as a plain attribute it would be ignored (measured on Gemma 2,
    transformers 5.10: ``config._attn_implementation`` stayed ``sdpa``)."""
    value = model_cfg.override_config.get(ATTN_KEY)
    return str(value) if value else None


def auto_class_for(config) -> Any:
    """Return the Hugging Face auto class for ``config``: the one ``auto_map`` names for its architecture
    (remote code), else ``AutoModelForCausalLM`` for causal-LM architectures.

    Raises:
        ConfigError: the model is not a causal language model (the native loop trains only those).
    """
    import transformers

    arch = (getattr(config, "architectures", None) or [""])[0]
    auto_map = getattr(config, "auto_map", None) or {}
    for auto_name, target in auto_map.items():
        if arch and arch in str(target) and hasattr(transformers, auto_name):
            return getattr(transformers, auto_name)
    # the architecture's name first: the mapping's keys() imports the configuration module of every model type
    # transformers knows (seconds per process), which only a causal LM named otherwise needs
    if arch.endswith("ForCausalLM") or type(config) in transformers.AutoModelForCausalLM._model_mapping.keys():
        return transformers.AutoModelForCausalLM
    raise ConfigError(
        f"model type {getattr(config, 'model_type', '?')!r} ({arch or 'no architecture'}) is not a "
        "causal language model",
        key="actor_rollout_ref.model.path",
        fix="use a *ForCausalLM checkpoint, or launcher=verl for other model kinds",
    )


def load_model(
    model_cfg: ModelCfg, dtype: torch.dtype, *, weights: bool = True, device: torch.device | None = None
) -> PreTrainedModel:
    """Build the model of ``actor_rollout_ref.model`` in ``dtype``: ``from_pretrained`` (``weights=True``) or
    ``from_config`` (a replica whose weights arrive by synchronisation), moved to ``device`` when given (else left
    where transformers built it, the CPU). Imports ``external_lib`` first.

    Raises:
        ConfigError: the model or an external library cannot be loaded.
    """
    import_external_libs(model_cfg.external_lib)
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    trust = bool(model_cfg.trust_remote_code)
    config = load_hf_config(model_cfg.path, trust, model_cfg.override_config)
    auto = auto_class_for(config)
    attn = attn_implementation(model_cfg)
    extra = {"attn_implementation": attn} if attn else {}
    if weights:
        try:
            model = auto.from_pretrained(model_cfg.path, config=config, trust_remote_code=trust, dtype=dtype, **extra)
        except OSError as e:
            raise ConfigError(
                f"cannot load weights from {model_cfg.path!r}: {str(e).splitlines()[0]}",
                key="actor_rollout_ref.model.path",
                value=model_cfg.path,
                fix="check the folder holds *.safetensors",
            ) from None
    else:
        model = auto.from_config(config, trust_remote_code=trust, dtype=dtype, **extra)
    model.config.use_cache = False
    if device is not None:  # here, where the model is untyped: PreTrainedModel.to is @wraps'd, unbound to mypy
        model = model.to(device)
    return pretrained(model)


def pretrained(module: nn.Module) -> PreTrainedModel:
    """``module`` as the Hugging Face ``PreTrainedModel`` it is (what :func:`load_model` builds; a PEFT model's
    ``get_base_model()``), so its HF methods (``config``, ``tie_weights``, ``gradient_checkpointing_enable``)
    are typed rather than read through ``nn.Module.__getattr__``.

    Raises:
        TypeError: ``module`` is no ``transformers.PreTrainedModel`` (a programming error: the native loop loads
            only those, through the auto classes).
    """
    from transformers import PreTrainedModel

    if not isinstance(module, PreTrainedModel):
        raise TypeError(f"expected a transformers PreTrainedModel, got {type(module).__name__}")
    return module


def load_tokenizer(model_cfg: ModelCfg):
    """Load the tokenizer (``model.tokenizer_path`` or ``model.path``) and make sure it has a pad token.

    Raises:
        ConfigError: the tokenizer cannot be loaded.
    """
    from transformers import AutoTokenizer

    path = model_cfg.tokenizer_path or model_cfg.path
    try:
        tok = AutoTokenizer.from_pretrained(path, trust_remote_code=bool(model_cfg.trust_remote_code))
    except Exception as e:
        raise ConfigError(
            f"cannot load the tokenizer from {path!r}: {str(e).splitlines()[0]}",
            key="actor_rollout_ref.model.tokenizer_path",
            value=path,
            fix="point model.tokenizer_path (or model.path) at a folder with tokenizer files",
        ) from None
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    if model_cfg.custom_chat_template:
        tok.chat_template = model_cfg.custom_chat_template
    return tok
