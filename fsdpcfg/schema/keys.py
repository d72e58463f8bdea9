"""The key universe: which dotted keys the schema defines, which verl 0.9.1 knows and which are free-form.
Which ones the native launcher implements is declared beside its code (:mod:`fsdpcfg.native.support`).

Every key of a composed config is classified by :func:`classify` as one of

- ``schema``: a field of :class:`fsdpcfg.schema.root.RunConfig` (validated by Pydantic);
- ``free``: below a free-form mapping (``override_config.rope_scaling.type``, ``engine_kwargs.vllm.x``);
- ``verl``: a key one of verl 0.9.1's ``main_ppo`` compositions knows (``ppo_trainer`` and its megatron, veomni
  and torchtitan engines) that the schema does not model (passed to verl), or a field of verl's config
  dataclasses that its YAML leaves out (added with ``+``: :func:`fsdpcfg.verlref.fields`), unless verl sets that
  field itself (:data:`VERL_SET_BY_VERL`);
- ``free``: also below a mapping verl hands to a library as keyword arguments (:data:`OPEN_MAPPINGS`:
  ``ray_kwargs.ray_init.address`` goes to ``ray.init``), which verl's YAML lists only in part;
- ``legacy``: under a top-level section ``main_ppo`` 0.9.1 no longer reads (``custom_reward_function``,
  ``reward_model``, ``sandbox_fusion``: verl's ``legacy_reward_impl.yaml`` keeps them as null placeholders),
  reported by the trap rule FC701 and by nothing else;
- ``conflict``: below a key whose value is not a mapping (``actor_rollout_ref.rollout.n.x``);
- ``unknown``: none of these (an error with a did-you-mean, rules FC101/FC102).

Nothing here imports verl, torch or the user's code.
"""

from __future__ import annotations

import difflib
import fnmatch
import typing
from collections.abc import Iterable
from functools import cache
from typing import Any, Literal

from pydantic import BaseModel

from fsdpcfg import verlref
from fsdpcfg.errors import did_you_mean

KeyKind = Literal["schema", "free", "verl", "legacy", "conflict", "unknown"]

#: Top-level sections verl 0.9.1's ``main_ppo`` ignores: ``verl/trainer/config/legacy_reward_impl.yaml`` keeps
#: them as null placeholders, and only the experimental fully-async trainer migrates them
#: (``verl/experimental/reward_loop/reward_loop.py`` ``migrate_legacy_reward_impl``); main_ppo and the reward
#: workers read ``reward.*``. Rule FC701 (fsdpcfg/rules/legacy_keys.py, beside the table of where each key moved)
#: reports a value set there.
LEGACY_PREFIXES = ("custom_reward_function", "reward_model", "sandbox_fusion")

#: Mappings verl passes on as keyword arguments, so any key below them is read: ``ray_kwargs.ray_init`` is
#: ``ray.init(**ray_init)`` (verl/trainer/main_ppo.py ``run_ppo``; its ``runtime_env`` is Ray's); the nsys
#: options are Ray's ``runtime_env={"nsight": ...}``, nsys's command-line options (verl/trainer/main_ppo.py
#: ``run_ppo`` for the controller's, verl/trainer/ppo/ray_trainer.py ``init_workers`` for the workers'). verl's
#: YAML lists a few of their keys; the others are added with ``+`` (``+ray_kwargs.ray_init.address=auto``).
OPEN_MAPPINGS = (
    "ray_kwargs.ray_init",
    "global_profiler.global_tool_config.nsys.controller_nsight_options",
    "global_profiler.global_tool_config.nsys.worker_nsight_options",
)

#: Fields of verl 0.9.1's config dataclasses typed ``dict[str, Any]`` that verl passes on to a library (Megatron's
#: ``TransformerConfig``, DDP, the model config, an inference engine's kwargs ...): any key below one is the
#: library's, so it is ``free`` even where verl's YAML lists some defaults (``override_transformer_config`` lists
#: the recompute settings only). Source: ``verl/workers/config/engine.py``, ``model.py``, ``rollout.py``,
#: ``distillation.py``; ``tests/schema/test_open_mappings.py`` keeps every name a dict field of verl's dataclasses.
VERL_DICT_FIELDS = frozenset(
    {
        "override_transformer_config",
        "override_ddp_config",
        "override_mcore_model_config",
        "override_optimizer_config",
        "override_config",
        "engine_kwargs",
        "custom",
        "extra_context",
        "backend_config",
        "mbridge_config",
        "moe_config",
        "fused_kernel_options",
        "turbo_config",
        "layer_name_map",
        "tiled_mlp",
        "qat",
        "teacher_models",
        # HFModelConfig.lora: verl's vLLM server reads lora.get("fully_sharded_loras") (verl/workers/rollout/
        # vllm_rollout/vllm_async_server.py); verl's examples add +actor_rollout_ref.model.lora.fully_sharded_loras
        "lora",
    }
)

#: Keys verl 0.9.1's config dataclasses define that its YAML compositions leave out, so a user adds them with
#: ``+`` (verl's own example scripts do): key -> (file under ``verl/``, dataclass). They are ``verl`` keys here, as
#: every such field is (:func:`fsdpcfg.verlref.fields`) unless verl sets it itself (:data:`VERL_SET_BY_VERL`).
#: ``tests/schema/test_open_mappings.py`` keeps each a field of that dataclass.
VERL_PLUS_KEYS: dict[str, tuple[str, str]] = {
    "algorithm.gdpo_reward_keys": ("trainer/config/algorithm.py", "AlgoConfig"),
    "algorithm.gdpo_reward_weights": ("trainer/config/algorithm.py", "AlgoConfig"),
}

_HF_MODEL = "HFModelConfig.__post_init__ (verl/workers/config/model.py)"
_INIT_MODEL = "ActorRolloutRefWorker.init_model (verl/workers/engine_workers.py)"
_TRAINING_WORKER = "TrainingWorker.__init__ (verl/workers/engine_workers.py)"
_CRITIC_CFG = "RayPPOTrainer.init_workers (verl/trainer/ppo/ray_trainer.py)"
#: Fields of verl 0.9.1's config dataclasses that its YAML leaves out and that verl itself sets before anything
#: reads them, so a value given with ``+`` is overwritten and has no effect: they are not ``verl`` keys here, and
#: ``+key`` of one (or of a key below it) is FC102, although verl's ``omega_conf_to_dataclass`` takes it without a
#: word. ``fnmatch`` pattern over the dotted key -> where verl sets it. Kept to verl's source by reading it;
#: ``tests/check/verl_opinion/test_generated_overrides_oracle.py`` lists them as the oracle's disagreements left.
VERL_SET_BY_VERL: dict[str, str] = {
    "*.model.local_path": f"{_HF_MODEL} copies model.path there",
    "*.model.local_hf_config_path": f"{_HF_MODEL} copies hf_config_path (model.path) there",
    "*.model.local_tokenizer_path": f"{_HF_MODEL} copies tokenizer_path (model.path) there",
    "*.model.hf_config": f"{_HF_MODEL} loads it from the model's config.json",
    "*.model.generation_config": f"{_HF_MODEL} loads it from the model's folder",
    "*.model.tokenizer": f"{_HF_MODEL} loads it from the model's folder (load_tokenizer, the default)",
    "*.model.processor": f"{_HF_MODEL} loads it from the model's folder (load_tokenizer, the default)",
    "*.model.architectures": f"{_HF_MODEL} reads them from the model's config.json",
    "actor_rollout_ref.actor.engine": "ActorConfig.__post_init__ (verl/workers/config/actor.py) sets it to fsdp_config",
    "actor_rollout_ref.ref.engine": "ActorConfig.__post_init__ (verl/workers/config/actor.py) sets it to fsdp_config",
    "critic.engine": "CriticConfig.__post_init__ (verl/workers/config/critic.py) sets it to critic.fsdp",
    "actor_rollout_ref.actor.model_config": f"{_INIT_MODEL} sets it to the model's HFModelConfig",
    "actor_rollout_ref.ref.model_config": f"{_INIT_MODEL} sets it to the model's HFModelConfig",
    "actor_rollout_ref.actor.ppo_infer_micro_batch_size_per_gpu": (
        f"nothing reads the actor's: {_INIT_MODEL} gives its log-prob pass "
        "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu"
    ),
    "actor_rollout_ref.actor.ppo_infer_max_token_len_per_gpu": (
        f"nothing reads the actor's: {_INIT_MODEL} gives its log-prob pass "
        "actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu"
    ),
    "actor_rollout_ref.ref.ppo_mini_batch_size": f"{_INIT_MODEL} sets it to the actor's ppo_mini_batch_size",
    "actor_rollout_ref.ref.ppo_micro_batch_size": f"{_INIT_MODEL} sets it from ref.log_prob_micro_batch_size",
    "actor_rollout_ref.ref.ppo_micro_batch_size_per_gpu": (
        f"{_INIT_MODEL} sets it from ref.log_prob_micro_batch_size_per_gpu"
    ),
    "actor_rollout_ref.ref.use_dynamic_bsz": f"{_INIT_MODEL} sets it from ref.log_prob_use_dynamic_bsz",
    "actor_rollout_ref.ref.ppo_max_token_len_per_gpu": f"{_INIT_MODEL} sets it from ref.log_prob_max_token_len_per_gpu",
    "*.global_batch_info": (
        "the distillation loss fills it with each batch's sizes (verl/trainer/distillation/losses.py)"
    ),
    "distillation.distillation_loss.loss_settings": (
        "DistillationLossConfig.__post_init__ (verl/workers/config/distillation.py) sets it from loss_mode"
    ),
}


def _engine_fields() -> dict[str, str]:
    """The batch and padding fields of each role's engine section (the one its config dataclass makes its
    ``engine``: fsdp_config, megatron, veomni or torchtitan; verl/workers/config/actor.py and critic.py
    ``__post_init__``), which verl's workers set from the role's own keys: pattern -> where."""
    out: dict[str, str] = {}
    roles = {
        "actor_rollout_ref.actor": ("fsdp_config", "megatron", "veomni", "torchtitan"),
        "actor_rollout_ref.ref": ("fsdp_config", "megatron", "veomni", "torchtitan"),
        "critic": ("fsdp", "megatron", "veomni", "torchtitan"),
    }
    for role, sections in roles.items():
        for sec in sections:
            at = f"{role}.{sec}"
            out[f"{at}.use_remove_padding"] = f"{_TRAINING_WORKER} sets it from the model's use_remove_padding"
            out[f"{at}.use_fused_kernels"] = f"{_TRAINING_WORKER} sets it from the model's use_fused_kernels"
            if role == "critic":
                out[f"{at}.max_token_len_per_gpu"] = f"{_CRITIC_CFG} sets it from critic.ppo_max_token_len_per_gpu"
                out[f"{at}.infer_max_token_len_per_gpu"] = (
                    f"{_CRITIC_CFG} sets it from critic.ppo_infer_max_token_len_per_gpu"
                )
                continue
            frm = "the ref's own log_prob_" if role.endswith("ref") else "actor_rollout_ref.rollout.log_prob_"
            out[f"{at}.use_dynamic_bsz"] = (
                f"{_INIT_MODEL} sets it from the role's use_dynamic_bsz (the ref's log_prob_use_dynamic_bsz)"
            )
            out[f"{at}.infer_max_token_len_per_gpu"] = f"{_INIT_MODEL} sets it from {frm}max_token_len_per_gpu"
            out[f"{at}.infer_micro_batch_size_per_gpu"] = f"{_INIT_MODEL} sets it from {frm}micro_batch_size_per_gpu"
            if role.endswith("actor"):
                out[f"{at}.max_token_len_per_gpu"] = f"{_INIT_MODEL} sets it from actor.ppo_max_token_len_per_gpu"
                out[f"{at}.micro_batch_size_per_gpu"] = f"{_INIT_MODEL} sets it from actor.ppo_micro_batch_size_per_gpu"
    return out


VERL_SET_BY_VERL.update(_engine_fields())


def set_by_verl(key: str) -> tuple[str, str] | None:
    """``(field, where verl sets it)`` when ``key`` is, or lies below, a field verl sets itself
    (:data:`VERL_SET_BY_VERL`), else ``None``."""
    parts = key.split(".")
    for i in range(len(parts), 0, -1):
        field = ".".join(parts[:i])
        if field in verlref.fields("ppo"):
            for pattern, where in VERL_SET_BY_VERL.items():
                if fnmatch.fnmatchcase(field, pattern):
                    return field, where
    return None


def _verl_field(key: str) -> bool:
    """True when ``key`` is a field of verl's config dataclasses that its YAML leaves out (a ``+`` key of verl's)
    and that verl does not set itself."""
    return key in verlref.fields("ppo") and set_by_verl(key) is None


def _verl_path(key: str) -> bool:
    """True when ``key`` names a key, a section or a field (:func:`_verl_field`) of verl's config."""
    return key in verl_keys() or key in _verl_prefixes() or _verl_field(key)


def _model_fields(model: type[BaseModel]) -> dict[str, Any]:
    return model.model_fields


def _sub_model(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


def _is_mapping(annotation: Any) -> bool:
    if annotation is dict or typing.get_origin(annotation) is dict:
        return True
    return any(_is_mapping(a) for a in typing.get_args(annotation))


@cache
def _schema_index() -> tuple[dict[str, Any], frozenset[str]]:
    """Return ({leaf key: FieldInfo}, {section prefixes}) of :class:`~fsdpcfg.schema.root.RunConfig`."""
    from fsdpcfg.schema.root import RunConfig

    return model_index(RunConfig)


def model_index(root: type[BaseModel]) -> tuple[dict[str, Any], frozenset[str]]:
    """Return ``({dotted leaf key: FieldInfo}, {dotted section keys})`` of a root model (``RunConfig``,
    ``SftRunConfig``): the one walk over a schema's fields."""
    leaves: dict[str, Any] = {}
    prefixes: set[str] = set()

    def walk(model: type[BaseModel], prefix: str) -> None:
        for name, info in _model_fields(model).items():
            key = f"{prefix}{name}"
            sub = _sub_model(info.annotation)
            if sub is not None:
                prefixes.add(key)
                walk(sub, key + ".")
            else:
                leaves[key] = info

    walk(root, "")
    return leaves, frozenset(prefixes)


def schema_keys() -> frozenset[str]:
    """Dotted leaf keys the schema defines."""
    return frozenset(_schema_index()[0])


def schema_prefixes() -> frozenset[str]:
    """Dotted keys of the schema's sections (``actor_rollout_ref.actor.optim``, ...)."""
    return _schema_index()[1]


@cache
def optional_entries() -> dict[str, Any]:
    """``{dotted key: FieldInfo}`` of the entries of the schema's optional sections: a leaf typed ``Model | None``
    (``actor_rollout_ref.actor.fsdp_config.mixed_precision``: null by default, else ``param_dtype`` ...), whose
    entries are keys of the schema only once the section is set."""
    out: dict[str, Any] = {}
    for key, info in _schema_index()[0].items():
        sub = next(filter(None, map(_sub_model, typing.get_args(info.annotation))), None)
        if sub is not None:
            out.update({f"{key}.{k}": v for k, v in model_index(sub)[0].items()})
    return out


def field_info(key: str) -> Any:
    """Return the Pydantic ``FieldInfo`` of a schema leaf key (or of an optional section's entry), or ``None``."""
    return _schema_index()[0].get(key) or optional_entries().get(key)


def verl_keys() -> frozenset[str]:
    """Dotted leaf keys of verl 0.9.1's ``main_ppo`` compositions, every engine (``fsdpcfg.verlref``)."""
    return verlref.keys("ppo")


def schema_default(key: str) -> Any:
    """Return the schema's default for ``key`` (``KeyError`` when the key has none or is not a leaf)."""
    info = field_info(key)
    if info is None or info.is_required():
        raise KeyError(key)
    return info.get_default(call_default_factory=True)


def allowed_values(key: str) -> list[Any]:
    """Return the literal values a schema key accepts (empty when it is not a literal)."""
    info = field_info(key)
    if info is None:
        return []
    out: list[Any] = []

    def collect(a: Any) -> None:
        if typing.get_origin(a) is Literal:
            out.extend(typing.get_args(a))
        else:
            for x in typing.get_args(a):
                collect(x)

    collect(info.annotation)
    return list(dict.fromkeys(out))


@cache
def _verl_prefixes() -> frozenset[str]:
    return verlref.prefixes("ppo")


def _verl_free(key: str) -> bool:
    d = verlref.defaults("ppo").get(key, 0)
    return d is None or d == {}


def _below_dict_field(parts: list[str]) -> bool:
    """True when the key ``parts`` lies below one of :data:`VERL_DICT_FIELDS` where verl has that field
    (``critic.qat.x`` does not: verl's is ``critic.fsdp.qat``), and neither it nor a section between them is a config
    dataclass (:func:`fsdpcfg.verlref.sections`: ``critic.fsdp.qat`` is a ``QATEngineConfig``,
    ``actor_rollout_ref.actor.qat`` a ``QATConfig``, ``distillation.teacher_models.<name>.inference`` a
    ``RolloutConfig``), whose fields are then the keys."""
    typed = verlref.sections("ppo")
    for i, p in enumerate(parts[:-1]):
        if p in VERL_DICT_FIELDS and _verl_path(".".join(parts[: i + 1])):
            if not any(".".join(parts[:j]) in typed for j in range(i + 1, len(parts))):
                return True
    return False


def classify(key: str) -> KeyKind:
    """Classify a dotted key (a leaf or a section of a config) as described in the module docstring."""
    if key.split(".", 1)[0] in LEGACY_PREFIXES:
        return "legacy"
    leaves, prefixes = _schema_index()
    if key in leaves or key in prefixes:
        return "schema"
    vkeys = verl_keys()
    if key in vkeys or key in _verl_prefixes() or key in VERL_PLUS_KEYS or _verl_field(key):
        return "verl"
    if any(key.startswith(m + ".") for m in OPEN_MAPPINGS):
        return "free"
    parts = key.split(".")
    if _below_dict_field(parts):
        return "free"
    for i in range(len(parts) - 1, 0, -1):
        parent = ".".join(parts[:i])
        if parent in leaves:
            ann = leaves[parent].annotation
            if _is_mapping(ann):
                return "free"
            if any(_sub_model(a) for a in typing.get_args(ann)):  # an optional section (mixed_precision)
                return "schema" if key in optional_entries() else "unknown"
            return "conflict"
        if parent in vkeys:
            return "free" if _verl_free(parent) else "conflict"
    return "unknown"


def known_parent(key: str) -> str | None:
    """For a ``conflict`` key, return the leaf above it whose value is not a mapping."""
    leaves = _schema_index()[0]
    parts = key.split(".")
    for i in range(len(parts) - 1, 0, -1):
        parent = ".".join(parts[:i])
        if parent in leaves or parent in verl_keys():
            return parent
    return None


@cache
def suggestion_pool() -> tuple[str, ...]:
    """Every real key and section (schema and verl), legacy sections excluded: the did-you-mean candidates."""
    pool = set(schema_keys()) | set(schema_prefixes()) | set(verl_keys()) | set(_verl_prefixes())
    pool |= set(optional_entries())  # mixed_precision.param_dtype ...
    return tuple(sorted(k for k in pool if k.split(".", 1)[0] not in LEGACY_PREFIXES and "_target_" not in k))


def suggest(key: str, n: int = 3, pool: Iterable[str] | None = None) -> list[str]:
    """Return up to ``n`` real keys closest to ``key``, best first.

    A real key that ends with the whole of ``key`` comes first (``model.trust_remote_code`` ->
    ``actor_rollout_ref.model.trust_remote_code``), then keys that share its last component under a similar
    parent, then difflib's closest keys.
    """
    cands = list(pool if pool is not None else suggestion_pool())
    suffix = [c for c in cands if c.endswith("." + key)]
    suffix.sort(key=lambda c: (c.count("."), c))
    out = list(suffix)
    for c in did_you_mean(key, cands, n=n + 2):
        if c not in out:
            out.append(c)
    head = key.split(".", 1)[0]
    # a key in the same top-level section is a better guess than an equally similar one elsewhere
    out[len(suffix) :] = sorted(
        out[len(suffix) :], key=lambda c: (c.split(".", 1)[0] != head, -difflib.SequenceMatcher(None, key, c).ratio())
    )
    return out[:n]


#: What a message says when no real key is close enough to propose (:func:`propose`).
NO_SUCH_KEY = f"no such key in verl {verlref.VERL_VERSION} (an older verl's or a fork's key?)"

#: :func:`propose`'s ``value`` when the value is not known (a ``~key`` deletion): any key's type fits.
UNKNOWN_VALUE: Any = object()

_SCALARS = {bool: "bool", int: "int", float: "float", str: "str", type(None): "null"}


def _annotation_kinds(ann: Any) -> frozenset[str] | None:
    """The coarse kinds (``bool int float str null list dict``) a schema annotation holds; ``None``: any."""
    if ann is Any or ann is object:
        return None
    if ann in _SCALARS:
        return frozenset({_SCALARS[ann]})
    if _sub_model(ann) is not None or ann is dict:
        return frozenset({"dict"})
    if ann in (list, tuple, set):
        return frozenset({"list"})
    origin = typing.get_origin(ann)
    if origin is Literal:
        return frozenset(_SCALARS.get(type(a), "str") for a in typing.get_args(ann))
    if origin is typing.Annotated:
        return _annotation_kinds(typing.get_args(ann)[0])
    if origin in (list, tuple, set, frozenset):
        return frozenset({"list"})
    if origin is dict:
        return frozenset({"dict"})
    args = typing.get_args(ann)
    if not args:  # a class of its own (an Enum, a Path): written as a string
        return frozenset({"str"})
    out: set[str] = set()
    for a in args:
        k = _annotation_kinds(a)
        if k is None:
            return None
        out |= k
    return frozenset(out)


@cache
def _sft_fields() -> dict[str, Any]:
    """``{dotted leaf key: FieldInfo}`` of the SFT schema (:class:`fsdpcfg.schema.sft.SftRunConfig`)."""
    from fsdpcfg.schema.sft import SftRunConfig

    return model_index(SftRunConfig)[0]


def _key_kinds(key: str, kind: str = "ppo") -> frozenset[str] | None:
    """The kinds of value ``key`` holds in a config of ``kind`` (``ppo``, ``sft``): its schema annotation, else a
    section's (:func:`is_section`: ``dict``), else the type of verl 0.9.1's default; ``None`` when any value may fit
    (a null default, a free mapping)."""
    info = field_info(key) if kind == "ppo" else _sft_fields().get(key)
    if info is not None:
        return _annotation_kinds(info.annotation)
    if is_section(key, kind):
        return frozenset({"dict"})
    d = verlref.defaults(kind, resolved=False).get(key)
    if d is None or isinstance(d, str) and "${" in d:
        return None
    found = _SCALARS.get(type(d), "dict" if isinstance(d, dict) else "list" if isinstance(d, list) else None)
    if found is None:
        return None
    return frozenset({"int", "float"}) if found in ("int", "float") else frozenset({found})


def value_fits(key: str, value: Any, kind: str = "ppo") -> bool:
    """True when ``value`` (as Hydra or YAML parsed it: ``64``, ``True``, ``'/data/x.parquet'``) is of a type
    ``key`` holds in a config of ``kind`` (:func:`_key_kinds`): an int fits a float key, ``null`` and an
    interpolation fit any key."""
    if value is UNKNOWN_VALUE or value is None or isinstance(value, str) and "${" in value:
        return True
    kinds = _key_kinds(key, kind)
    if kinds is None:
        return True
    if isinstance(value, bool):
        return "bool" in kinds
    if isinstance(value, int):
        return bool(kinds & {"int", "float"})
    if isinstance(value, float):
        return "float" in kinds
    if isinstance(value, str):
        return "str" in kinds
    if isinstance(value, (list, tuple)):
        return "list" in kinds
    if isinstance(value, dict):
        return "dict" in kinds
    return True


@cache
def _leaf_index(pool: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    out: dict[str, list[str]] = {}
    for c in pool:
        out.setdefault(c.rsplit(".", 1)[-1], []).append(c)
    return {k: tuple(v) for k, v in out.items()}


def _anchor(key: str, pool: frozenset[str]) -> str:
    """The deepest real key above ``key`` (a section or a key of ``pool``: what the user wrote right), "" for none."""
    parts = key.split(".")
    for i in range(len(parts) - 1, 0, -1):
        head = ".".join(parts[:i])
        if head in pool:
            return head
    return ""


def _close(a: str, b: str) -> bool:
    return a == b or bool(difflib.get_close_matches(a, [b], n=1, cutoff=0.8))


def _related(key: str, cand: str, unique_leaf: bool, anchor: str = "") -> bool:
    """True when ``cand``'s path is related to ``key``'s. Below the deepest real section ``anchor`` above ``key`` (the
    part of the path the user wrote right), ``cand`` must lie in that section and the path between the section and the
    leaf must be ``key``'s, each part equal or close (``actor_rollout_ref.acter.ppo_epochs`` ->
    ``actor_rollout_ref.actor.ppo_epochs``; not ``actor.engine.ep`` -> ``actor.optim.eps``); ``key``'s very leaf set
    directly in that section may be found deeper in it. Without an anchor (``rollout.n``): ``key`` has no parent, or a
    parent component of ``key`` is close to one of ``cand``'s (``rollout.n`` -> ``actor_rollout_ref.rollout.n``).
    Either way, ``cand`` may be the only real key with ``key``'s very leaf when that leaf is no common word (6
    characters or more: ``policy_loss.tau_pos`` -> ``actor.tau_pos``, not ``nope.key``)."""
    parts, cparts = key.split("."), cand.split(".")
    if unique_leaf or len(parts) == 1:
        return True
    if anchor:
        if not cand.startswith(anchor + "."):
            return False
        depth = anchor.count(".") + 1
        between, cbetween = parts[depth:-1], cparts[depth:-1]
        if not between:
            return not cbetween or parts[-1] == cparts[-1]
        return len(between) == len(cbetween) and all(_close(a, b) for a, b in zip(between, cbetween, strict=True))
    return parts[0] == cparts[0] or any(difflib.get_close_matches(p, cparts[:-1], n=1, cutoff=0.8) for p in parts[:-1])


@cache
def _foreign_keys(config: str | None) -> frozenset[str]:
    """The keys and sections of verl's other compositions of ``config``'s kind (the other engines: ``main_ppo``'s
    megatron, veomni, torchtitan for ``ppo_trainer``) that ``config`` itself does not have: never proposed for it
    (``actor.veomni.param_offload`` for an FSDP run). Empty for an unknown ``config``."""
    if config is None or config not in verlref.COMPOSITIONS:
        return frozenset()
    union = "sft" if config in verlref.SFT_COMPOSITIONS else "ppo"
    every = set(verlref.keys(union)) | set(verlref.prefixes(union))
    return frozenset(every - set(verlref.keys(config)) - set(verlref.prefixes(config)))


def propose(
    key: str,
    value: Any = UNKNOWN_VALUE,
    pool: Iterable[str] | None = None,
    config: str | None = None,
    kind: str = "ppo",
) -> str | None:
    """The one real key to propose for an unknown ``key`` whose value is ``value``, or ``None`` (then say
    :data:`NO_SUCH_KEY`). A did-you-mean must not put the value where it does harm, so a candidate must have a
    leaf name equal or close to ``key``'s (difflib ratio >= 0.75: ``nnode`` -> ``nnodes``), a related path
    (:func:`_related`), a type that fits the value (:func:`value_fits`), be no section unless the value is a mapping
    (``rollout.mtp``, :func:`is_section`) and, with ``config`` (verl's composition of the config: ``ppo_trainer``,
    ``ppo_megatron_trainer``, ``sft_trainer_engine`` ...), be no key of another engine's composition only
    (:func:`_foreign_keys`); ``kind`` (``ppo``, ``sft``) says whose types judge the value when ``config`` is not
    given. ``tau_pos=0.5`` -> ``actor_rollout_ref.actor.tau_pos``, ``rollout.n=64`` -> ``actor_rollout_ref.rollout.n``;
    ``rollout.dtype=true`` (the dtype is a string), ``trainer.test_fre=/data/x.parquet`` (an integer),
    ``actor.engine.ep=4`` (Adam's ``optim.eps`` is another section's, and torchtitan's) and ``actor.engine.tp`` (not
    the section ``rollout.mtp``) get none. Ranked: a key ending with the whole of ``key``, then the same top-level
    section, then the closest whole key. Sources: issue 20 item 6 (did-you-mean proposals that moved a value into an
    unrelated key)."""
    cands = tuple(sorted(pool)) if pool is not None else suggestion_pool()
    foreign = _foreign_keys(config)
    if foreign:
        cands = tuple(c for c in cands if c not in foreign)
    by_leaf = _leaf_index(cands)
    anchor = _anchor(key, frozenset(cands) | _sections_of(cands))
    leaf = key.rsplit(".", 1)[-1]
    leaves = [leaf] if leaf in by_leaf else []
    leaves += [m for m in difflib.get_close_matches(leaf, list(by_leaf), n=6, cutoff=0.75) if m != leaf]
    kind = "sft" if config in verlref.SFT_COMPOSITIONS else kind
    out = []
    for lf in leaves:
        unique = lf == leaf and len(by_leaf[lf]) == 1 and len(leaf) >= 6
        for c in by_leaf[lf]:
            if c == key or not _related(key, c, unique, anchor) or not value_fits(c, value, kind):
                continue
            if not isinstance(value, dict) and is_section(c, kind):
                continue  # a section takes keys, not a value (rollout.mtp for actor.engine.tp=2)
            out.append(c)
    head = key.split(".", 1)[0]
    out.sort(
        key=lambda c: (
            not c.endswith("." + key),
            c.split(".", 1)[0] != head,
            c.rsplit(".", 1)[-1] != leaf,
            (c.count("."), c) if c.endswith("." + key) else (0, ""),  # as suggest() ranks them
            -difflib.SequenceMatcher(None, key, c).ratio(),
            c,
        )
    )
    return out[0] if out else None


@cache
def _sections_of(cands: tuple[str, ...]) -> frozenset[str]:
    """Every dotted prefix of the keys ``cands``: the sections a pool holds."""
    out: set[str] = set()
    for c in cands:
        parts = c.split(".")
        out.update(".".join(parts[:i]) for i in range(1, len(parts)))
    return frozenset(out)


def _children(key: str, kind: str) -> list[str]:
    """The names directly below the section ``key`` (the schema's, else verl's), sorted; [] when not known."""
    import re

    if kind == "ppo":
        leaves, prefixes = _schema_index()
        every = (*leaves, *prefixes, *optional_entries())
        names = {k[len(key) + 1 :].split(".", 1)[0] for k in every if k.startswith(key + ".")}
        if names:
            return sorted(names)
    names = {k[len(key) + 1 :].split(".", 1)[0] for k in verlref.keys(kind) if k.startswith(key + ".")}
    names = {n for n in names if not n.startswith("_")}  # _target_
    if not names:  # a field verl fills by interpolation (rollout.mtp: ${oc.select:actor_rollout_ref.model.mtp,null})
        raw = verlref.defaults(kind, resolved=False).get(key)
        m = re.fullmatch(r"\$\{(?:oc\.select:)?\s*([\w.]+)\s*(?:,[^}]*)?\}", raw) if isinstance(raw, str) else None
        if m and m.group(1) != key:
            return _children(m.group(1), kind)
    return sorted(names)


def is_section(key: str, kind: str = "ppo") -> bool:
    """True when ``key`` holds a mapping of keys, so that a scalar or a list there replaces a whole section: a
    section of the schema (a sub-model or a ``dict`` field; PPO), a mapping of verl 0.9.1's config of that ``kind``
    (``actor_rollout_ref.model.mtp``, ``ray_kwargs.ray_init``), or a field verl's config dataclass declares as a
    mapping only (``actor_rollout_ref.rollout.mtp: MtpConfig``, filled by interpolation in verl's YAML)."""
    if kind == "ppo":
        if key in schema_prefixes():
            return True
        info = field_info(key)
        if info is not None:
            return (_annotation_kinds(info.annotation) or frozenset()) - {"null"} == {"dict"}
    if key in verlref.prefixes(kind):
        return True
    config = "ppo" if kind == "ppo" else verlref.SFT_COMPOSITIONS[0]
    if (verlref.value_kinds(key, config) or frozenset()) - {"null"} == {"dict"}:  # MtpConfig, Optional[...]
        return True
    default = verlref.defaults(kind).get(key, 0)
    return isinstance(default, dict)  # an empty mapping verl's YAML lists as {} (override_config)


def section_replaced(key: str, value: Any, kind: str = "ppo") -> tuple[str, str] | None:
    """``(message, fix)`` when ``value`` (a scalar or a list, not null) is set on the section ``key``
    (:func:`is_section`), else None. verl 0.9.1's Hydra refuses to merge a list into a mapping; a scalar it takes,
    and ``omega_conf_to_dataclass`` (hydra's ``instantiate``) puts it where a dataclass is expected, so verl fails
    in ``validate_config`` or in a worker, where it reads a key of the section (``mtp.enable``: AttributeError).
    Sources: verl/utils/config.py ``omega_conf_to_dataclass``; verl/workers/rollout/vllm_rollout/
    vllm_async_server.py (``self.config.mtp.enable``); issue 20 (``rollout.mtp=1``, ``model.lora=1``)."""
    if value is None or isinstance(value, dict) or not is_section(key, kind):
        return None
    if isinstance(value, str) and "${" in value:
        return None
    names = _children(key, kind)
    shown = ", ".join(names[:6]) + (", ..." if len(names) > 6 else "")
    what = {bool: "a boolean", int: "an integer", float: "a number", str: "a string"}.get(type(value), "a list")
    first = next((n for n in ("enable", "enabled") if n in names), names[0] if names else "KEY")
    if key.split(".", 1)[0] == "fsdpcfg":
        owner, effect = "fsdpcfg's", "fsdpcfg reads keys of it"
    elif isinstance(value, (list, tuple)) and key in verlref.prefixes(kind):
        owner, effect = f"verl {verlref.VERL_VERSION}'s", "verl's Hydra refuses to merge a list into it"
    else:
        owner = f"verl {verlref.VERL_VERSION}'s"
        effect = (
            f"verl takes it at config time and fails where it reads a key of the section ({key}.{first}: "
            "AttributeError), in validate_config or in a worker after the cluster started"
        )
    message = (
        f"{value!r} is {what}, but it is a section of {owner} config"
        + (f" (keys: {shown})" if names else "")
        + f"; the value replaces the whole section: {effect}"
    )
    written = str(value).lower() if isinstance(value, bool) else str(value).replace(" ", "")
    return message, f"set a key of the section instead ({key}.{first}=VALUE), or remove {key}={written}"
