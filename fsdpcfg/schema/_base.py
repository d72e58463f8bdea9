"""Shared building blocks of the schema: the strict base model and the literal value sets verl accepts."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from fsdpcfg.native import backends

#: Precision names verl's ``PrecisionType.to_dtype`` accepts (``verl/utils/torch_dtypes.py``).
Precision = Literal["fp32", "float32", "32", "bf16", "bfloat16", "fp16", "float16", "16"]

#: KL estimators of ``verl.trainer.ppo.core_algos.kl_penalty`` (a trailing ``+`` selects the straight-through
#: k2 gradient); ``full`` raises ``NotImplementedError`` in verl 0.9.1 and is left out.
KLType = Literal[
    "kl", "k1", "abs", "mse", "k2", "low_var_kl", "k3", "kl+", "k1+", "abs+", "mse+", "k2+", "low_var_kl+", "k3+"
]

#: Training engines a role's ``strategy`` may name (``Strategy``: the backends registered with
#: ``EngineRegistry.register`` in verl 0.9.1 ``verl/workers/engine/*/transformer_impl.py``) and those the native
#: trainers run (``FSDPStrategy``), and the names verl's ``FSDPEngineConfig.strategy`` accepts (``FSDPEngineStrategy``:
#: fsdp, fsdp2 and fsdp_turbo, the strategy of a role's ``fsdp_config`` section), all the registrations of
#: :data:`fsdpcfg.native.backends.ENGINES`. fsdpcfg checks fsdp/fsdp2 in depth (the rest get rule FC111 and the
#: engine-independent rules).
if TYPE_CHECKING:
    FSDPStrategy = str
    FSDPEngineStrategy = str
    Strategy = str
else:
    FSDPStrategy = Literal[backends.native_engines()]
    FSDPEngineStrategy = Literal[backends.fsdp_config_engines()]
    Strategy = Literal[backends.ENGINES.names()]

# Upper bounds of numeric keys: values past them cannot work, so the schema refuses them (issue 14 item 7:
# rollout.n=1e30, lora_rank=1e12, max_prompt_length=1e8 passed `check`). Documented in docs/reliability.md.
#: sizes and counts (batch sizes, steps, engine slots): torch's int32 index kernels and NCCL counts stop at 2**31 - 1.
MAX_SIZE = 2**31 - 1
#: token lengths and token budgets: 16,777,216; the longest context of any released model is below it.
MAX_TOKENS = 2**24
#: rollout.n (samples per prompt): 4,096; GRPO groups are 2-64, and n multiplies every batch of the step.
MAX_SAMPLES = 4096
#: LoRA rank: 65,536; a rank above the layer width adds nothing (the largest hidden sizes are ~30,000).
MAX_LORA_RANK = 2**16
#: seeds: numpy's ``RandomState`` takes 0 .. 2**32 - 1 (verl seeds numpy, torch and random with it).
MAX_SEED = 2**32 - 1
#: ranks per node (accelerators, or CPU processes with device=cpu) and nodes.
MAX_RANKS_PER_NODE = 1024
MAX_NODES = 65536
#: worker processes of one rank (dataloader, reward).
MAX_WORKERS = 1024
#: one of AdamW's ``betas``: torch.optim.AdamW refuses a value outside [0, 1) ("Invalid beta parameter at index
#: 1: 1.0", torch/optim/adam.py), at the first step of the run (issue 22 item 5).
Beta = Annotated[float, Field(ge=0, lt=1)]


class Section(BaseModel):
    """Base of every schema section: unknown keys are rejected, values are not coerced between types
    (``"4"`` is not an integer, ``1`` is not a boolean), NaN and infinity are not numbers (no float key of verl
    can work with them), and fields named ``model*`` are allowed."""

    model_config = ConfigDict(
        extra="forbid", strict=True, protected_namespaces=(), validate_default=False, allow_inf_nan=False
    )


def F(default: Any = ..., description: str = "", **kw: Any) -> Any:
    """A field with a ``description`` (every field has one: it feeds the JSON Schema and ``explain``)."""
    if not description:
        raise ValueError("every schema field needs a description")
    if "default_factory" in kw:
        return Field(description=description, **kw)
    return Field(default, description=description, **kw)


def V(key: str) -> Any:
    """verl 0.9.1's default of ``key`` (``fsdpcfg.verlref``, ``ppo_trainer`` resolved), for a field whose default
    is verl's: the value lives once, in the reference generated from the installed verl.

    Raises:
        KeyError: ``key`` is not a key of verl's ``ppo_trainer`` config.
    """
    from fsdpcfg import verlref

    return verlref.defaults()[key]


def Sub(cls: type[BaseModel], description: str) -> Any:
    """A nested section whose defaults fill in when the section is absent."""
    return Field(default_factory=cls, description=description)


def attr_path(model: BaseModel, key: str, default: Any = None) -> Any:
    """The value of dotted ``key`` (``actor_rollout_ref.model.use_remove_padding``) in the typed config ``model``,
    read by attribute; ``default`` when a part is not a field. What a registry keyed by verl's dotted names (the
    patches) reads of a typed config."""
    node: Any = model
    for part in key.split("."):
        if not isinstance(node, BaseModel) or part not in type(node).model_fields:
            return default
        node = getattr(node, part)
    return node
