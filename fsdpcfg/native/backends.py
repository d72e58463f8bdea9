"""The two extension points of the native launcher, by name: rollout backends (``actor_rollout_ref.rollout.name``)
and training engines (``actor_rollout_ref.actor.strategy``, ``engine.strategy`` for SFT).

    ROLLOUTS.get("hf").launchers       # ("native",): the launchers that run it (rule FC801)
    ROLLOUTS.get("hf").build           # "fsdpcfg.train.rollout.hf_build:build_hf_rollout": what the loop calls
    ENGINES.native()                   # ("fsdp", "fsdp2"): the engines the native trainers shard with

Every table the schema, the rules, the planner, the exporter and the trainer read about a backend or an engine is
derived from these registrations (the schema's literals, rule FC801's launchers, the memory estimate's replica or
reservation, ``fsdpcfg export``'s native-only list, the start-up audit's adapter classes, FC803's native
values). Adding one is one registration here plus its implementation module: docs/extending.md.

Pattern: the patch registry (:mod:`fsdpcfg.patches.registry`, after torchtitan's ``config/override.py``): a
second claim on a name is rejected. Nothing here imports torch: implementations are ``"module:function"``
strings the trainer resolves (:meth:`RolloutBackend.load`).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar


class RegistryConflict(ValueError):
    """A name is registered twice; the message names the registry and both claims."""


class _Named(Protocol):
    @property
    def name(self) -> str: ...


T = TypeVar("T", bound=_Named)


class Registry(Generic[T]):
    """Entries by name, in registration order; a name has one entry.

    Raises (``register``):
        RegistryConflict: the name is taken.
    """

    def __init__(self, what: str) -> None:
        self.what = what
        self._entries: dict[str, T] = {}

    def register(self, entry: T) -> T:
        """Add ``entry``; return it."""
        old = self._entries.get(entry.name)
        if old is not None:
            raise RegistryConflict(f"{self.what} {entry.name!r} is registered twice ({old!r} and {entry!r})")
        self._entries[entry.name] = entry
        return entry

    def get(self, name: Any) -> T | None:
        """The entry called ``name``, or ``None``."""
        return self._entries.get(name) if isinstance(name, str) else None

    def names(self) -> tuple[str, ...]:
        """Every registered name, in registration order."""
        return tuple(self._entries)

    def __iter__(self) -> Iterator[T]:
        return iter(self._entries.values())


@dataclass(frozen=True)
class RolloutBackend:
    """A value of ``actor_rollout_ref.rollout.name``.

    Attributes:
        name: the value (``hf``, ``vllm``).
        title: what generates, for people.
        launchers: the ``fsdpcfg.launcher`` values that run it (rule FC801 refuses the others).
        engine: a separate inference engine that reserves ``rollout.gpu_memory_utilization`` of the device
            (vLLM, SGLang, TensorRT-LLM: the memory estimate counts the reservation, the engine rules apply);
            ``False``: a replica inside the training process (the estimate counts its weights and KV cache).
        build: ``"module:function"`` the native GRPO loop calls as ``build(trainer) -> (rollout, lora_sync)``
            (``lora_sync``: ``None`` or ``rollout -> bytes sent``); ``None`` for a backend only verl runs.
        classes: the class names of the rollout objects ``build`` returns (the start-up audit reads the backend
            back from the live object).
        source: where its behaviour comes from.
    """

    name: str
    title: str
    launchers: tuple[str, ...]
    engine: bool
    build: str | None = None
    classes: tuple[str, ...] = ()
    source: str = ""

    def load(self) -> Any:
        """The ``build`` function, imported now.

        Raises:
            ValueError: the backend has no native implementation.
        """
        if self.build is None:
            raise ValueError(f"rollout backend {self.name!r} has no native implementation (launcher=verl)")
        module, _, attr = self.build.partition(":")
        return getattr(importlib.import_module(module), attr)


@dataclass(frozen=True)
class Engine:
    """A value of ``actor_rollout_ref.actor.strategy`` (and ``engine.strategy`` of the SFT tree).

    Attributes:
        name: the value (``fsdp``, ``fsdp2``, ``megatron``).
        title: what trains, for people.
        fsdp: an FSDP engine (the ``fsdp_config`` section and the FSDP rules apply; ``world = dp x ulysses``).
        native: the native trainers shard with it (:func:`fsdpcfg.train.engine.fsdp.shard_model`); others run
            under launcher=verl only.
        fsdp_config: verl configures it with ``FSDPEngineConfig`` (the role's ``fsdp_config`` section), whose
            ``__post_init__`` accepts its name as ``strategy`` (verl/workers/config/engine.py).
        source: verl's implementation it follows.
    """

    name: str
    title: str
    fsdp: bool
    native: bool = False
    fsdp_config: bool = False
    source: str = ""


ROLLOUTS: Registry[RolloutBackend] = Registry("rollout backend")
ROLLOUTS.register(
    RolloutBackend(
        "hf",
        "an unsharded Hugging Face replica that generates with model.generate (train/rollout/hf.py)",
        launchers=("native",),
        engine=False,
        build="fsdpcfg.train.rollout.hf_build:build_hf_rollout",
        classes=("HFRollout", "LoraHFRollout"),  # LoraHFRollout: the hf replica of a LoRA actor
    )
)
for _name, _title in (("vllm", "vLLM"), ("sglang", "SGLang"), ("trtllm", "TensorRT-LLM")):
    ROLLOUTS.register(
        RolloutBackend(
            _name,
            f"the {_title} inference engine (verl's rollout worker)",
            launchers=("verl",),
            engine=True,
            source="verl/workers/rollout/base.py (verl's rollout registry)",
        )
    )

ENGINES: Registry[Engine] = Registry("engine")
for _name, _title in (("fsdp", "FSDP1 (FullyShardedDataParallel)"), ("fsdp2", "FSDP2 (fully_shard)")):
    ENGINES.register(Engine(_name, _title, fsdp=True, native=True, fsdp_config=True, source="verl/workers/engine/fsdp"))
# the engines verl 0.9.1 registers with EngineRegistry.register (verl/workers/engine/*/transformer_impl.py);
# fsdpcfg checks them with rule FC111 and the engine-independent rules, and runs them under launcher=verl.
# fsdp_turbo (verl/workers/engine/fsdp/fsdp_turbo_impl.py) keeps the FSDP engine's config, FSDPEngineConfig.
ENGINES.register(
    Engine("fsdp_turbo", "verl's fsdp_turbo engine", fsdp=False, fsdp_config=True, source="verl/workers/engine/fsdp")
)
for _name in ("megatron", "veomni", "torchtitan", "automodel"):
    ENGINES.register(Engine(_name, f"verl's {_name} engine", fsdp=False, source=f"verl/workers/engine/{_name}"))


def native_rollouts() -> tuple[str, ...]:
    """The rollout backends the native launcher runs (``launchers`` holds ``native``)."""
    return tuple(b.name for b in ROLLOUTS if "native" in b.launchers)


def engine_rollouts() -> tuple[str, ...]:
    """The rollout backends that are separate inference engines (:attr:`RolloutBackend.engine`)."""
    return tuple(b.name for b in ROLLOUTS if b.engine)


def fsdp_engines() -> tuple[str, ...]:
    """The FSDP engines (:attr:`Engine.fsdp`)."""
    return tuple(e.name for e in ENGINES if e.fsdp)


def fsdp_config_engines() -> tuple[str, ...]:
    """The engines verl configures with ``FSDPEngineConfig`` (:attr:`Engine.fsdp_config`): the values its
    ``strategy`` accepts."""
    return tuple(e.name for e in ENGINES if e.fsdp_config)


def native_engines() -> tuple[str, ...]:
    """The engines the native trainers shard with (:attr:`Engine.native`)."""
    return tuple(e.name for e in ENGINES if e.native)
