"""Each value the native trainers used to refuse while starting (a second copy of a rule in fsdpcfg/train) is
refused by ``check`` before anything starts, by the schema or by one rule, and the trainers' readers carry no
check of their own (``tests/train/test_config_error_sites.py`` lists what is left: what only the running job
can know). Before this, several of these passed ``check`` and failed at launch (``lora_alpha=0``,
``target_modules=[]``, ``temperature=0``, ``reward_manager.name=dapo``, SFT ``optim.optimizer=Muon`` and the
SFT offload flags), and ``model_dtype=16`` (a name verl accepts) passed both and then failed in the trainer."""

from __future__ import annotations

import pytest
import torch

from fsdpcfg.check import check_overrides

A = "actor_rollout_ref"
LORA = [f"{A}.model.lora_rank=8"]
MP = f"{A}.actor.fsdp_config.mixed_precision"


def _error_keys(overrides: list[str]) -> dict[str, str]:
    """``{first key of each error finding: its rule}``."""
    return {f.keys[0]: f.rule for f in check_overrides(overrides) if f.severity == "error"}


@pytest.mark.parametrize(
    ("overrides", "key", "rule"),
    [
        ([f"{A}.actor.loss_agg_mode=mean"], f"{A}.actor.loss_agg_mode", "FC602"),
        ([f"{A}.actor.kl_loss_type=k9"], f"{A}.actor.kl_loss_type", "FC103"),
        ([f"{A}.actor.clip_ratio_c=1.0"], f"{A}.actor.clip_ratio_c", "FC103"),
        ([f"{A}.actor.policy_loss.loss_mode=gspo"], f"{A}.actor.policy_loss.loss_mode", "FC803"),
        ([f"{A}.actor.optim.optimizer=Muon"], f"{A}.actor.optim.optimizer", "FC803"),
        ([f"{A}.actor.optim.lr_scheduler_type=wsd"], f"{A}.actor.optim.lr_scheduler_type", "FC103"),
        (["data.truncation=middle_out"], "data.truncation", "FC103"),
        (["trainer.resume_mode=latest"], "trainer.resume_mode", "FC103"),
        ([f"{A}.actor.fsdp_config.dtype=fp8"], f"{A}.actor.fsdp_config.dtype", "FC103"),
        (
            [f"+{A}.actor.fsdp_config.mixed_precision.param_type=bf16"],
            f"{A}.actor.fsdp_config.mixed_precision",
            "FC102",
        ),
        (
            [f"{A}.actor.fsdp_config.mixed_precision={{param_type:bf16}}"],
            f"{A}.actor.fsdp_config.mixed_precision",
            "FC101",
        ),
        ([f"{A}.model.lora_rank=-1"], f"{A}.model.lora_rank", "FC103"),
        ([*LORA, f"{A}.model.lora_alpha=0"], f"{A}.model.lora_alpha", "FC507"),
        ([*LORA, f"{A}.model.target_modules=[]"], f"{A}.model.target_modules", "FC507"),
        ([*LORA, "fsdpcfg.lora_layer_prefixes=['']"], "fsdpcfg.lora_layer_prefixes", "FC103"),
        ([f"{A}.rollout.temperature=0"], f"{A}.rollout.temperature", "FC506"),
        (["reward.reward_manager.name=dapo"], "reward.reward_manager.name", "FC803"),
        (["reward.reward_manager.source=importlib"], "reward.reward_manager.source", "FC803"),
    ],
)
def test_grpo_value_the_trainer_cannot_run_is_refused_by_check(overrides, key, rule):
    found = _error_keys(["+recipe=qwen_grpo", *overrides])
    hits = {k: r for k, r in found.items() if k == key or k.startswith(key + ".")}
    assert set(hits.values()) == {rule}, found


@pytest.mark.parametrize(
    ("overrides", "key", "rule"),
    [
        (["optim.optimizer=Muon"], "optim.optimizer", "FC803"),
        (["engine.param_offload=true"], "engine.param_offload", "FC802"),
        (["engine.optimizer_offload=true"], "engine.optimizer_offload", "FC802"),
        (["data.truncation=middle"], "data.truncation", "FC150"),
        (["model.lora_rank=8", "model.lora_alpha=0"], "model.lora_alpha", "FC507"),
        (["model.lora_rank=8", "model.target_modules=''"], "model.target_modules", "FC507"),
    ],
)
def test_sft_value_the_trainer_cannot_run_is_refused_by_check(overrides, key, rule):
    assert _error_keys(["+recipe=qwen_sft", *overrides]).get(key) == rule


@pytest.mark.parametrize(
    "overrides",
    [
        [f"{A}.rollout.temperature=0", f"{A}.rollout.do_sample=false"],  # greedy: no temperature used
        [f"{A}.model.lora_alpha=0"],  # LoRA off: alpha is not read (verl too)
        [f"{A}.model.target_modules=[]"],
        ["launcher=verl", f"{A}.rollout.temperature=0", "rollout=vllm"],  # vLLM: temperature 0 is greedy
        ["launcher=verl", "reward.reward_manager.name=dapo", "rollout=vllm"],
    ],
)
def test_what_the_trainers_or_verl_run_is_not_refused(overrides):
    found = _error_keys(["+recipe=qwen_grpo", *overrides])
    assert not {k for k in found if k.startswith((f"{A}.rollout.temperature", f"{A}.model.", "reward."))}, found


def test_every_precision_name_the_schema_takes_maps_to_a_dtype():
    """``fsdp_config.model_dtype=16`` is verl's float16 (``PrecisionType.to_dtype``) and the schema's; the
    trainer's map lacked it and raised at launch."""
    from typing import get_args

    from fsdpcfg.schema._base import Precision
    from fsdpcfg.train.model import DTYPES, to_dtype

    assert set(DTYPES) == set(get_args(Precision))
    assert (to_dtype("16"), to_dtype("32"), to_dtype("bf16")) == (torch.float16, torch.float32, torch.bfloat16)


def test_mixed_precision_entries_left_out_take_verls_defaults():
    """verl's ``_build_fsdp_module`` fills a partial ``mixed_precision`` with bf16, fp32, fp32; the engine, the
    memory plan and ``audit`` read the same three (one home: ``fsdp_dtypes``)."""
    from fsdpcfg.schema.actor import FSDPConfig, fsdp_dtypes
    from fsdpcfg.train.engine.fsdp import Precision

    assert fsdp_dtypes({"mixed_precision": {"reduce_dtype": "bf16"}, "dtype": "fp32"}) == ("bf16", "bf16", "fp32")
    assert fsdp_dtypes({"mixed_precision": None, "dtype": "fp16"}) == ("fp16", "fp32", "fp32")
    p = Precision.from_fsdp_config(FSDPConfig.model_validate({"mixed_precision": {"param_dtype": "fp16"}}))
    assert (p.param, p.reduce, p.buffer) == (torch.float16, torch.float32, torch.float32)
    partial = f"{A}.actor.fsdp_config.mixed_precision={{param_dtype:fp32}}"  # verl accepts it: so does check
    assert not _error_keys(["+recipe=qwen_grpo", partial])
