"""Shared building blocks of the schema: the strict base model and the literal value sets verl accepts."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

#: Precision names verl's ``PrecisionType.to_dtype`` accepts (``verl/utils/torch_dtypes.py``).
Precision = Literal["fp32", "float32", "32", "bf16", "bfloat16", "fp16", "float16", "16"]

#: KL estimators of ``verl.trainer.ppo.core_algos.kl_penalty`` (a trailing ``+`` selects the straight-through
#: k2 gradient); ``full`` raises ``NotImplementedError`` in verl 0.9.1 and is left out.
KLType = Literal["kl", "k1", "abs", "mse", "k2", "low_var_kl", "k3",
                 "kl+", "k1+", "abs+", "mse+", "k2+", "low_var_kl+", "k3+"]

FSDPStrategy = Literal["fsdp", "fsdp2"]
#: Training engines a role's ``strategy`` may name: the backends registered with ``EngineRegistry.register`` in
#: verl 0.9.1 ``verl/workers/engine/*/transformer_impl.py``. fsdpcfg checks fsdp/fsdp2 in depth (the rest get
#: rule FC111 and the engine-independent rules).
Strategy = Literal["fsdp", "fsdp2", "fsdp_turbo", "megatron", "veomni", "torchtitan", "automodel"]


class Section(BaseModel):
    """Base of every schema section: unknown keys are rejected, values are not coerced between types
    (``"4"`` is not an integer, ``1`` is not a boolean), and fields named ``model*`` are allowed."""

    model_config = ConfigDict(extra="forbid", strict=True, protected_namespaces=(), validate_default=False)


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
