"""What the native loop (fsdpcfg/train under torchrun) runs of verl's keys: one declaration per feature, each
naming the code that implements it, the values it runs, or why it is not implemented.

Pattern: the patch registry (:mod:`fsdpcfg.train.patches`): the facts live beside the code, in data that
``fsdpcfg check`` reads without importing torch, and the code reads the same data when it refuses a value at
launch. Three kinds of entry:

- :class:`Native`: implemented. ``impl`` names the functions that read the keys (``"module:Qualname"``);
  ``values``, when given, are the only values run (rule FC803 refuses the others, optionally only ``when``
  another key has a value).
- :class:`Native` with ``impl=()``: a component the loop does not have, whose "off" values are the only ones
  it runs (``critic.enable``): nothing in fsdpcfg/train reads the key.
- :class:`NotNative`: not implemented; a value other than verl's default is an error (rule FC802) naming
  ``launcher=verl``, and nothing in fsdpcfg/train reads the key (a patch declared for ``launcher=verl``
  only is refused by the patch registry, which reads its key to refuse it).

``tests/train/test_support.py`` holds the declaration against the code: every key of a :class:`Native` entry is
read by its ``impl`` functions, and no key of a :class:`NotNative` entry is read anywhere in fsdpcfg/train (the
SFT trainer, fsdpcfg/train/sft, reads its own tree: FC114). Nothing here imports torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fsdpcfg.native.backends import native_engines, native_rollouts

A = "actor_rollout_ref"
R = f"{A}.rollout"


@dataclass(frozen=True)
class Native:
    """A feature the native loop implements.

    Attributes:
        name: a short name (``kl_in_reward``).
        keys: the verl keys it reads.
        impl: ``"module:Qualname"`` of each function that reads them (``fsdpcfg.train.loop:Trainer._advantages``);
            empty when nothing reads them: a component the loop does not have (only its "off" ``values`` run),
            or a single implementation (AdamW, the naive reward manager: only that value runs).
        values: key -> the only values the loop runs (FC803); keys not named run every value verl accepts.
        when: ``(key, value)``: ``values`` are enforced only while ``key`` has ``value``.
        note: how it is implemented, for ``fsdpcfg explain`` and the docs.
        source: verl's implementation it follows.
        kind: the trainer: ``ppo`` (the GRPO loop, verl's ``ppo_trainer`` keys) or ``sft`` (the SFT trainer,
            verl's ``sft_trainer_engine`` keys); the two trees' keys never coincide.
    """

    name: str
    keys: tuple[str, ...]
    impl: tuple[str, ...]
    values: dict[str, tuple[Any, ...]] | None = None
    when: tuple[str, Any] | None = None
    note: str = ""
    source: str = ""
    kind: str = "ppo"


@dataclass(frozen=True)
class NotNative:
    """A feature the native loop does not implement: ``keys`` away from verl's default are refused (FC802).

    Attributes:
        name: a short name; keys: the verl keys; reason: why (shown in the finding, which names launcher=verl);
        kind: ``ppo`` or ``sft``, as :attr:`Native.kind`.
    """

    name: str
    keys: tuple[str, ...]
    reason: str
    kind: str = "ppo"


FEATURES: tuple[Native | NotNative, ...] = (
    Native(
        "device",
        ("trainer.device",),
        ("fsdpcfg.plan._plan:make_plan",),
        values={"trainer.device": ("cpu", "cuda")},
        note="gloo on CPU, NCCL on CUDA (the plan's backend); an Ascend NPU (HCCL) runs under launcher=verl",
        source="verl/utils/device.py get_device_name; verl/trainer/main_ppo.py (ray's NPU resources)",
    ),
    Native(
        "grpo_advantages",
        ("algorithm.adv_estimator", "algorithm.norm_adv_by_std_in_grpo"),
        ("fsdpcfg.train.loop:Trainer.__init__", "fsdpcfg.train.loop:Trainer._advantages"),
        values={"algorithm.adv_estimator": ("grpo",)},
        note="group-normalised outcome advantages (algorithm/grpo.py grpo_advantages)",
        source="verl/trainer/ppo/core_algos.py compute_grpo_outcome_advantage",
    ),
    Native(
        "kl_in_reward",
        ("algorithm.use_kl_in_reward", "algorithm.kl_ctrl.kl_coef", "algorithm.kl_penalty"),
        ("fsdpcfg.train.loop:Trainer._advantages",),
        note="token rewards = scores - kl_coef * kl_penalty(old_log_probs, ref_log_prob) on response tokens; "
        "logs actor/reward_kl_penalty and actor/reward_kl_penalty_coeff",
        source="verl/trainer/ppo/ray_trainer.py apply_kl_penalty",
    ),
    Native(
        "kl_ctrl_fixed",
        ("algorithm.kl_ctrl.type",),
        (),  # no controller: the loop reads kl_ctrl.kl_coef as the coefficient (kl_in_reward)
        values={"algorithm.kl_ctrl.type": ("fixed",)},
        when=("algorithm.use_kl_in_reward", True),
        note="a fixed coefficient (kl_ctrl.kl_coef); the adaptive controller runs under launcher=verl",
        source="verl/trainer/ppo/core_algos.py get_kl_controller (FixedKLController)",
    ),
    Native(
        "vanilla_policy_loss",
        (f"{A}.actor.policy_loss.loss_mode",),
        (),  # one policy loss: train/algorithm/grpo.py ppo_actor_loss
        values={f"{A}.actor.policy_loss.loss_mode": ("vanilla",)},
        note="PPO-clip with dual clip (algorithm/losses.py)",
        source="verl/trainer/ppo/core_algos.py compute_policy_loss_vanilla",
    ),
    Native(
        "adamw",
        (f"{A}.actor.optim.optimizer",),
        (),  # one optimizer: train/engine/optim.py build_optimizer builds torch.optim.AdamW
        values={f"{A}.actor.optim.optimizer": ("AdamW",)},
        note="torch.optim.AdamW with optim.lr, betas and weight_decay (train/engine/optim.py build_optimizer)",
        source="verl/workers/config/optimizer.py build_optimizer",
    ),
    Native(
        "hf_rollout",
        (f"{R}.name",),
        ("fsdpcfg.train.loop:Trainer.__init__",),
        values={f"{R}.name": native_rollouts()},
        note="an unsharded Hugging Face replica that generates (train/rollout/hf.py); engines run under verl "
        "(rule FC801)",
    ),
    Native(
        "naive_reward_manager",
        ("reward.reward_manager.name", "reward.reward_manager.source"),
        (),  # no manager component: train/reward.py score_responses calls the reward function per response
        values={"reward.reward_manager.name": ("naive",), "reward.reward_manager.source": ("register",)},
        note="one compute_score call per response with data_source, solution_str, ground_truth and extra_info "
        "(train/reward.py score_responses); verl's other managers (dapo, prime, batch ...) run under launcher=verl",
        source="verl/workers/reward_manager/naive.py NaiveRewardManager",
    ),
    Native(
        "fsdp_engine",
        (f"{A}.actor.strategy",),
        ("fsdpcfg.plan._plan:make_plan",),
        values={f"{A}.actor.strategy": native_engines()},
        note="FSDP1/FSDP2 (train/engine); verl runs its other engines (engine=megatron ...)",
    ),
    Native(
        "no_critic",
        ("critic.enable",),
        (),
        values={"critic.enable": (None, False)},
        note="the loop trains the policy only: no value model (GAE/PPO needs launcher=verl)",
    ),
    Native(
        "lora_layered_summon",
        (f"{R}.layered_summon", f"{R}.load_format"),
        ("fsdpcfg.train.lora.setup:LoraSettings.from_model_cfg",),
        values={f"{R}.load_format": ("dummy", "auto", "safetensors")},
        note="with LoRA (model.lora_rank > 0): a load_format other than dummy makes the replica read the base "
        "from model.path, so the first sync sends the adapter only; layered_summon gathers the adapter one "
        "block (fsdpcfg.lora_layer_prefixes) at a time and needs that preloaded base (FC504). Without LoRA "
        "every sync sends the full weights and neither key changes a number (as in verl)",
        source="verl/utils/fsdp_utils.py collect_lora_params; verl/workers/engine_workers.py base_sync_done",
    ),
    Native(
        "size_based_wrap",
        (f"{A}.actor.fsdp_config.wrap_policy.min_num_params", f"{A}.ref.fsdp_config.wrap_policy.min_num_params"),
        ("fsdpcfg.train.engine.fsdp:shard_from_config",),
        note="> 0 under strategy fsdp: torch's size_based_auto_wrap_policy makes the FSDP1 units in place of the "
        "decoder layers (no LoRA adapter units beside it, as verl); strategy fsdp2 ignores it, as verl does (FC706)",
        source="verl/utils/fsdp_utils.py get_fsdp_wrap_policy, apply_fsdp2",
    ),
    NotNative(
        "manual_offload",
        tuple(
            f"{A}.{role}.fsdp_config.{k}" for role in ("actor", "ref") for k in ("param_offload", "optimizer_offload")
        ),
        "the native engine does not move parameters or optimizer state to the CPU between phases as verl does; a "
        "CPU run has nothing to move, and FSDP2 offloads during compute with offload_policy=true",
    ),
    NotNative(
        "dynamic_bsz",
        (f"{A}.actor.use_dynamic_bsz", f"{A}.ref.log_prob_use_dynamic_bsz", f"{R}.log_prob_use_dynamic_bsz"),
        "the native loop uses fixed micro-batches",
    ),
    NotNative(
        "ulysses",
        (f"{A}.actor.ulysses_sequence_parallel_size", f"{A}.ref.ulysses_sequence_parallel_size"),
        "the native loop has no sequence parallelism",
    ),
    NotNative("liger", (f"{A}.model.use_liger",), "the native loop has no Liger kernels"),
    NotNative("fused_kernels", (f"{A}.model.use_fused_kernels",), "the native loop has no fused log-prob kernels"),
    NotNative(
        "inference_engine",
        tuple(
            f"{R}.{k}"
            for k in (
                "gpu_memory_utilization",
                "enforce_eager",
                "free_cache_engine",
                "tensor_model_parallel_size",
                "data_parallel_size",
                "expert_parallel_size",
                "pipeline_model_parallel_size",
                "max_num_batched_tokens",
                "max_model_len",
                "max_num_seqs",
                "enable_chunked_prefill",
                "enable_prefix_caching",
            )
        ),
        "the hf rollout has no inference-engine settings",
    ),
)


#: The native SFT trainer (fsdpcfg/train/sft): verl's ``sft_trainer_engine`` keys with the FSDP engine (another
#: engine under the native launcher is rule FC254's; a key the SFT schema does not model is FC114's).
SFT_FEATURES: tuple[Native | NotNative, ...] = (
    Native(
        "sft_adamw",
        ("optim.optimizer",),
        (),  # one optimizer: train/engine/optim.py build_optimizer builds torch.optim.AdamW
        values={"optim.optimizer": ("AdamW",)},
        note="torch.optim.AdamW with optim.lr, betas and weight_decay (train/engine/optim.py build_optimizer)",
        source="verl/workers/config/optimizer.py build_optimizer",
        kind="sft",
    ),
    Native(
        "sft_flat_params",
        ("engine.use_orig_params",),
        (),  # FSDP1 flat parameters (use_orig_params=False): train/engine/fsdp.py shard_model
        values={"engine.use_orig_params": (False,)},
        note="FSDP1 flat parameters; LoRA adapters get units of their own (verl's LoRA policy), so no "
        "use_orig_params is needed",
        source="verl/workers/engine/fsdp/transformer_impl.py _build_fsdp_module (use_orig_params)",
        kind="sft",
    ),
    NotNative(
        "sft_offload",
        ("engine.param_offload", "engine.optimizer_offload"),
        "the native SFT trainer keeps parameters and optimizer state where it trains them",
        kind="sft",
    ),
)

#: Every declaration, both trainers (their keys are distinct: ``actor_rollout_ref.actor.optim.optimizer`` and
#: ``optim.optimizer``).
ALL_FEATURES: tuple[Native | NotNative, ...] = FEATURES + SFT_FEATURES


def _tables() -> tuple[dict[str, str], dict[str, tuple[Any, ...]], dict[str, tuple[str, Any]]]:
    unsupported: dict[str, str] = {}
    values: dict[str, tuple[Any, ...]] = {}
    when: dict[str, tuple[str, Any]] = {}
    for f in ALL_FEATURES:
        if isinstance(f, NotNative):
            unsupported.update(dict.fromkeys(f.keys, f.reason))
            continue
        for key, allowed in (f.values or {}).items():
            values[key] = allowed
            if f.when is not None:
                when[key] = f.when
    return unsupported, values, when


#: key -> why the native loop does not implement it (FC802 refuses a value other than verl's default).
#: NATIVE_VALUES: key -> the only values the native loop runs (FC803); NATIVE_WHEN: key -> ``(key, value)``
#: under which its NATIVE_VALUES apply (always when absent).
NATIVE_UNSUPPORTED, NATIVE_VALUES, NATIVE_WHEN = _tables()
#: key -> the trainer (``ppo``, ``sft``) whose declaration names it
KIND: dict[str, str] = {k: f.kind for f in ALL_FEATURES for k in f.keys}


def feature_of(key: str) -> Native | NotNative | None:
    """The declaration naming ``key``, or ``None`` (a schema key the loop reads without a restriction)."""
    return next((f for f in ALL_FEATURES if key in f.keys), None)
