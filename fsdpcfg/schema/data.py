"""``data``: the RL dataset in verl's format and the prompt/response lengths (verl's ``data`` section)."""

from __future__ import annotations

from typing import Any, Literal

from fsdpcfg.schema._base import MAX_SEED, MAX_SIZE, MAX_TOKENS, MAX_WORKERS, F, Section


class DataSection(Section):
    """Training and validation data."""

    tokenizer: str | None = F(None, description="tokenizer for the dataset (null: the model's)")
    train_files: str | list[str] = F(description="parquet/jsonl file(s) of training prompts")
    val_files: str | list[str] | None = F(
        "~/data/rlhf/gsm8k/test.parquet", description="validation file(s) (verl's default is its example path)"
    )
    train_max_samples: int = F(-1, le=MAX_SIZE, ge=-1, description="use at most this many training rows (-1: all)")
    val_max_samples: int = F(-1, le=MAX_SIZE, ge=-1, description="use at most this many validation rows (-1: all)")
    prompt_key: str = F("prompt", description="column holding the prompt (chat messages)")
    reward_fn_key: str = F("data_source", description="column that selects the reward function")
    max_prompt_length: int = F(512, le=MAX_TOKENS, gt=0, description="prompt token limit")
    max_response_length: int = F(512, le=MAX_TOKENS, gt=0, description="response token limit")
    train_batch_size: int = F(1024, le=MAX_SIZE, gt=0, description="prompts per training step")
    val_batch_size: int | None = F(None, le=MAX_SIZE, gt=0, description="deprecated: validation runs as one batch")
    return_raw_chat: bool = F(True, description="keep the chat messages for the rollout's chat template")
    shuffle: bool = F(True, description="shuffle the training set")
    seed: int | None = F(None, ge=0, le=MAX_SEED, description="shuffle seed (null: verl's default)")
    dataloader_num_workers: int = F(8, le=MAX_WORKERS, ge=0, description="dataloader worker processes")
    filter_overlong_prompts: bool = F(False, description="drop prompts longer than max_prompt_length")
    truncation: Literal["error", "left", "right", "middle"] = F(
        "error", description="what to do with an overlong prompt"
    )
    trust_remote_code: bool = F(False, description="allow remote code in the dataset's tokenizer/processor")
    apply_chat_template_kwargs: dict[str, Any] = F(
        default_factory=dict, description="extra arguments of apply_chat_template"
    )
