"""Where fsdpcfg's default differs from verl's, on purpose: every such key with the reason.

fsdpcfg's default is the composed default tree (:mod:`fsdpcfg.compose.defaults`); verl's is the pinned release's
own composition (:mod:`fsdpcfg.verlref`: ``ppo_trainer`` for the RL tree, ``sft_trainer_engine`` for SFT). A key
differs when its value differs both as resolved and as written (``${oc.select:data.max_prompt_length,512}`` and
``${data.max_prompt_length}`` give the same value, so the copy is not a difference of its own only if both
resolve alike), or when verl's YAML does not list it (verl's dataclass reads it with a default in code).
fsdpcfg's own section (``fsdpcfg.*``) has no verl counterpart and is left out.

``tests/catalog/test_one_default.py`` fails on a difference this table does not list and on an entry that is
no longer a difference; ``docs/reference.md`` renders the table (:func:`rows`).
"""

from __future__ import annotations

from typing import Any

from fsdpcfg import verlref

#: Marks a key verl's YAML does not list.
NOT_IN_VERL = "(not in verl's YAML)"

_ENGINE = "engine=fsdp2 is the default engine option: FSDP2 (fully_shard) is PyTorch's maintained FSDP; verl keeps fsdp"
_CPU_DTYPE = "trainer=cpu is the default: CPUs lack fast bf16 kernels, so the CPU run computes in float32"
_PATCHES = "patches=none is the default: the model patches are opt-in groups (patches=remove_padding, ...)"
_WRAP = (
    "verl's YAML leaves it out (get_fsdp_wrap_policy reads it with .get, null: the model's _no_split_modules); "
    "written so that key=value works without + and explain/the schema know it"
)
_MP = (
    "verl's YAML leaves it out (verl/workers/config/engine.py FSDPEngineConfig: None); written so that key=value "
    "works without + and explain/the schema know it"
)

#: kind -> {key: reason fsdpcfg's default differs from verl's}.
DELIBERATE: dict[str, dict[str, str]] = {
    "ppo": {
        "actor_rollout_ref.actor.strategy": _ENGINE,
        "actor_rollout_ref.actor.fsdp_config.strategy": "copies actor_rollout_ref.actor.strategy, so that the "
        "engine option sets one key (verl writes the literal fsdp)",
        "actor_rollout_ref.ref.fsdp_config.strategy": "copies actor_rollout_ref.ref.strategy (verl writes the "
        "literal fsdp)",
        "critic.strategy": _ENGINE,
        "actor_rollout_ref.actor.fsdp_config.dtype": _CPU_DTYPE,
        "actor_rollout_ref.ref.fsdp_config.dtype": _CPU_DTYPE,
        "actor_rollout_ref.rollout.dtype": _CPU_DTYPE,
        "trainer.device": "trainer=cpu is the default: the default run works on any machine",
        "trainer.n_gpus_per_node": "trainer=cpu is the default: 2 CPU processes, so that the default run shards",
        "actor_rollout_ref.actor.fsdp_config.wrap_policy.transformer_layer_cls_to_wrap": _WRAP,
        "actor_rollout_ref.actor.fsdp_config.mixed_precision": _MP,
        "actor_rollout_ref.ref.fsdp_config.mixed_precision": _MP,
        "algorithm.adv_estimator": "algorithm=grpo is the default: GRPO needs no value model, and the native loop "
        "runs it",
        "actor_rollout_ref.actor.use_kl_loss": "algorithm=grpo: GRPO applies KL as a loss term (verl's GRPO "
        "examples set use_kl_loss=True)",
        "actor_rollout_ref.rollout.n": "algorithm=grpo: GRPO compares a group of samples per prompt (n > 1)",
        "actor_rollout_ref.rollout.name": "verl leaves it ??? (required); rollout=hf is the default: Hugging Face "
        "generate runs on every machine",
        "actor_rollout_ref.model.path": "model=tiny_qwen2 is the default: a tiny model in the fsdpcfg home that "
        "trains on a CPU (verl's is an example path)",
        "actor_rollout_ref.model.enable_gradient_checkpointing": _PATCHES,
        "actor_rollout_ref.model.use_remove_padding": _PATCHES,
        "data.train_files": "data=gsm8k is the default: the GSM8K files shipped in the package (verl's is an "
        "example path)",
        "data.val_files": "data=gsm8k is the default: the GSM8K test file shipped in the package",
        "data.max_prompt_length": "data=gsm8k: GSM8K prompts fit 256 tokens; shorter batches for the CPU run",
        "data.max_response_length": "data=gsm8k: short answers keep the CPU run's generation fast",
        "actor_rollout_ref.rollout.prompt_length": "copies data.max_prompt_length (verl too, with 512 if unset)",
        "actor_rollout_ref.rollout.response_length": "copies data.max_response_length (verl too, with 512 if unset)",
        "trainer.project_name": "fsdpcfg's own name instead of verl's example name (verl_examples); it names the "
        "run and checkpoint folders",
        "trainer.experiment_name": "a neutral name instead of verl's example name (gsm8k)",
        "trainer.logger": "console only: wandb needs an account and the network; opt in with "
        "trainer.logger=[console,wandb]",
    },
    "sft": {
        "engine.strategy": _ENGINE,
        "engine.dtype": _CPU_DTYPE,
        "engine.wrap_policy.transformer_layer_cls_to_wrap": _WRAP,
        "trainer.device": "trainer=cpu is the default: the default run works on any machine",
        "trainer.n_gpus_per_node": "trainer=cpu is the default: 2 CPU processes, so that the default run shards",
        "model.path": "model=tiny_qwen2 is the default: a tiny model in the fsdpcfg home that trains on a CPU",
        "data.train_files": "data=gsm8k_sft is the default: the GSM8K SFT file shipped in the package",
        "data.max_length": "data=gsm8k_sft: GSM8K conversations fit 512 tokens; shorter batches for the CPU run",
    },
}

#: kind -> the verl composition its defaults are compared with.
COMPOSITION = {"ppo": "ppo_trainer", "sft": "sft_trainer_engine"}


def _verl_flat(config: str, resolved: bool) -> dict[str, Any]:
    """verl's defaults with a value that copies a section (``mtp: ${oc.select:...model.mtp,null}``) flattened
    into its leaves, as a composed config holds them."""
    out: dict[str, Any] = {}
    for k, v in verlref.defaults(config, resolved=resolved).items():
        out.update(verlref.flatten(v, k) if isinstance(v, dict) and v else {k: v})
    return out


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    return a == b and (type(a) is type(b) or {type(a), type(b)} <= {int, float})


def differences(kind: str = "ppo") -> dict[str, tuple[Any, Any]]:
    """Return ``{key: (fsdpcfg's default, verl's default)}`` for every key of the ``kind`` default tree whose
    default differs from verl's (verl's side :data:`NOT_IN_VERL` when verl's YAML does not list the key).

    Raises:
        KeyError: ``kind`` is not ``ppo`` or ``sft``.
    """
    from fsdpcfg.compose import defaults

    comp = COMPOSITION[kind]
    verl, verl_raw = _verl_flat(comp, True), _verl_flat(comp, False)
    ours, ours_raw = defaults.tree(kind), defaults.raw_tree(kind)
    out: dict[str, tuple[Any, Any]] = {}
    for key, value in ours.items():
        if key.split(".", 1)[0] == "fsdpcfg":
            continue
        if key not in verl:
            out[key] = (value, NOT_IN_VERL)
        elif not (_same(ours_raw[key], verl_raw.get(key, NOT_IN_VERL)) or _same(value, verl[key])):
            out[key] = (value, verl_raw.get(key) if defaults.machine_dependent(key, kind) else verl[key])
    return out


def rows(kind: str = "ppo") -> list[tuple[str, Any, Any, str]]:
    """Return ``(key, fsdpcfg's default, verl's default, reason)`` for every difference of ``kind``, by key; the
    reason is ``""`` for a difference the table does not list (the test fails on it)."""
    table = DELIBERATE[kind]
    return [(k, ours, theirs, table.get(k, "")) for k, (ours, theirs) in sorted(differences(kind).items())]
