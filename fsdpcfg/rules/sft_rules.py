"""Rules of the SFT tree (``fsdpcfg.kind: sft``, verl's ``sft_trainer_engine`` layout); they run only on SFT
configs, and the RL rules only on RL configs.

FC150  the SFT schema (unknown keys with a did-you-mean, types and allowed values, required values)
FC250  data.train_batch_size splits into data-parallel ranks x micro_batch_size_per_gpu
FC251  the native SFT trainer runs fixed micro-batches (use_dynamic_bsz is verl's)
FC252  the native SFT trainer has no Ulysses sequence parallelism
FC253  the native SFT trainer runs no validation
FC254  the native SFT trainer runs the FSDP engines (engine=megatron, automodel ... are verl's)

Under another engine than FSDP (``engine=megatron``: verl's ``engine=megatron optim=megatron``) the engine's
``engine.*``/``optim.*`` sections are verl's own keys with verl's defaults: FC150 leaves them to verl (FC113 names a
key the engine does not have), FC250 splits the batch over Megatron's data-parallel ranks, FC111 says what ran.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from fsdpcfg.compose import verl_base
from fsdpcfg.native import backends
from fsdpcfg.rules._common import ENGINE_SIZES, data_parallel, divisors
from fsdpcfg.rules.finding import Finding
from fsdpcfg.rules.registry import rule
from fsdpcfg.schema import keys as K
from fsdpcfg.schema.sft import schema_defaults as _schema_defaults
from fsdpcfg.schema.sft import schema_part as _schema_part

if TYPE_CHECKING:
    from fsdpcfg.rules.context import Context

SFT = ("sft",)

#: verl's Megatron engine keys of the SFT tree whose product with the data-parallel size is the world
#: (:data:`fsdpcfg.rules._common.ENGINE_SIZES`).
MEGATRON_MP_KEYS = tuple(f"engine.{leaf}" for leaf, _, _ in ENGINE_SIZES["megatron"])


def sft_engine(ctx: Context) -> str:
    """The config's SFT engine option (``fsdp`` for verl's FSDP ``sft_trainer_engine``, whose strategy key says
    fsdp or fsdp2; ``megatron``, ``automodel``, ``veomni``, ``torchtitan``), from verl's composition."""
    return verl_base.sft_engine(ctx.verl_config)


def fsdp_engine(ctx: Context) -> bool:
    """True when the SFT config trains on FSDP/FSDP2 (verl's ``engine=fsdp``), the engine fsdpcfg models."""
    return ctx.verl_config == "sft_trainer_engine"


def _get(ctx: Context, key: str, default: Any = None) -> Any:
    """The SFT config's value of ``key``, else the SFT schema's default (verl's), else ``default``."""
    from fsdpcfg.rules.context import get_dotted

    missing = object()
    v = get_dotted(ctx.cfg, key, missing)
    if v is not missing:
        return v
    return _schema_defaults().get(key, default)


@rule(
    "FC150",
    "the SFT config matches the SFT schema (keys, types, allowed and required values)",
    keys=(),
    example=("+recipe=qwen_sft", "+data.micro_batch_size_per_gpuu=2"),
    kinds=SFT,
)
def sft_schema(ctx: Context) -> Iterator[Finding]:
    """Validate an SFT config with :class:`fsdpcfg.schema.sft.SftRunConfig` (Pydantic, ``extra="forbid"``,
    verl 0.9.1's ``sft_trainer_engine`` keys and defaults): an unknown key (with the closest real key), a value
    of the wrong type or outside the allowed set, a scalar or a list set on a section of verl's config
    (``model.lora=1``, also where the schema leaves the section to verl:
    :func:`fsdpcfg.schema.keys.section_replaced`), a required value left as ``???``, an interpolation that cannot
    be resolved. verl's Hydra config would accept a misspelt key in a file and ignore it. Source:
    ``verl/trainer/config/sft_trainer_engine.yaml``; docs/design.md#unknown-keys-are-never-ignored."""
    from pydantic import ValidationError

    from fsdpcfg.schema.sft import SftRunConfig

    for key, why in sorted((getattr(ctx, "unresolved", None) or {}).items()):
        yield ctx.finding("FC150", [key], f"{key}: {why}", "point the ${...} at an existing key, or set a literal")
    known = sorted(_schema_defaults())
    tree = ctx.cfg
    if not fsdp_engine(ctx):  # verl's engine/optim sections of another engine: FC113 names a foreign key
        tree = {k: v for k, v in ctx.cfg.items() if k not in verl_base.SFT_ENGINE_SECTIONS}
    flat = _flatten(tree)
    sections: set[str] = set()
    for key, value in flat.items():
        if value == "???":
            yield ctx.finding("FC150", [key], f"{key} is required and not set (???)", f"set {key}=VALUE")
            continue
        replaced = K.section_replaced(key, value, "sft")  # model.lora=1: a scalar or a list on a section
        if replaced is not None:
            sections.add(key)
            yield ctx.finding("FC150", [key], f"{key}: {replaced[0]}", replaced[1])
    try:
        SftRunConfig.model_validate(_schema_part(tree, frozenset(known), comp=ctx.verl_config))
    except ValidationError as e:
        invalid: dict[str, list[str]] = {}  # key -> Pydantic's messages (one per member of a union)
        for err in e.errors():
            key = _loc_key(err["loc"], flat)
            if flat.get(key) == "???" or key in sections:
                continue
            if err["type"] == "extra_forbidden":
                # only a key whose leaf is close, whose type fits the value, of this config's engine (issue 20)
                value = flat.get(key, K.UNKNOWN_VALUE)
                real = K.propose(key, value, pool=known, config=ctx.verl_config, kind="sft")
                close = [real] if real else []
                hint = f"; did you mean {real}?" if real else f": {K.NO_SUCH_KEY}"
                yield ctx.finding(
                    "FC150",
                    [key] + close,
                    f"{key} is not a key of the SFT config (verl's sft_trainer_engine layout){hint}",
                    f"use {real}" if real else "remove it (`fsdpcfg show +recipe=qwen_sft` lists the keys)",
                )
            elif err["type"] == "missing":
                yield ctx.finding("FC150", [key], f"{key} is required and not set", f"set {key}=VALUE")
            else:
                invalid.setdefault(key, []).append(str(err["msg"]))
        for key, msgs in invalid.items():
            value = flat.get(key)
            yield ctx.finding(
                "FC150",
                [key],
                f"{key}={value!r}: " + "; or ".join(dict.fromkeys(msgs)),
                f"set {key} to a valid value (default {_schema_defaults().get(key)!r})",
            )


def _loc_key(loc: tuple[Any, ...], flat: dict[str, Any]) -> str:
    """The config key of a Pydantic error location: its leading names that are keys (or sections) of the config;
    what follows them names a member of a union (``int``, ``literal['after_each_epoch']``) or an item, not a key."""
    parts: list[str] = []
    for p in loc:
        cand = ".".join([*parts, str(p)])
        if not isinstance(p, str) or not (cand in flat or any(k.startswith(cand + ".") for k in flat)):
            break
        parts.append(p)
    return ".".join(parts) or ".".join(str(p) for p in loc if isinstance(p, str))


def _flatten(tree: Any) -> dict[str, Any]:
    from fsdpcfg import keypath

    return keypath.flatten(tree)


def _pos_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v > 0


@rule(
    "FC250",
    "data.train_batch_size splits into data-parallel ranks x data.micro_batch_size_per_gpu",
    keys=(
        "data.train_batch_size",
        "data.micro_batch_size_per_gpu",
        "trainer.nnodes",
        "trainer.n_gpus_per_node",
        "engine.ulysses_sequence_parallel_size",
        *MEGATRON_MP_KEYS,
    ),
    example=("+recipe=qwen_sft", "data.train_batch_size=6"),
    kinds=SFT,
)
def sft_batch_split(ctx: Context) -> Iterator[Finding]:
    """verl's SFT trainer splits ``data.train_batch_size`` sequences over the data-parallel ranks
    (``world / ulysses_sequence_parallel_size``; Megatron: ``world / (tensor x pipeline x context parallel)``;
    the automodel, veomni and torchtitan layouts are not modelled, so the rule does not judge them) and each
    rank's share into micro-batches of ``micro_batch_size_per_gpu`` (fixed sizes: gradient accumulation =
    share / micro). A remainder fails in verl's data-parallel split or silently changes the batch. With
    ``use_dynamic_bsz`` verl packs micro-batches by tokens and only the data-parallel split must divide. A
    parallel size below 1 or one that does not divide the world is FC302's (the split is then not judged).
    Source: ``verl/trainer/sft_trainer.py`` (``train_batch_size // dp_size``), ``verl/workers/engine/utils.py``
    (micro-batch split)."""
    tbs, micro = _get(ctx, "data.train_batch_size"), _get(ctx, "data.micro_batch_size_per_gpu")
    nodes, gpus = _get(ctx, "trainer.nnodes"), _get(ctx, "trainer.n_gpus_per_node")
    strategy = "fsdp" if fsdp_engine(ctx) else sft_engine(ctx)
    if strategy not in ("fsdp", "megatron"):
        return  # automodel, veomni, torchtitan: their batch split is not modelled (FC111 says so)
    if not all(_pos_int(v) for v in (tbs, micro, nodes, gpus)):
        return  # FC150 (FSDP) or verl's dataclass (Megatron) reports the types
    group = data_parallel(ctx, "engine", strategy=strategy, engine_keys="engine")
    if group is None:
        return  # FC302 reports a parallel size below 1 or one that does not divide the world
    keys = ["data.train_batch_size", "data.micro_batch_size_per_gpu", *group.keys]
    yield from _split_findings(ctx, tbs, micro, group.size, group.derivation, keys)


def _split_findings(ctx: Context, tbs: int, micro: int, dp: int, derivation: str, keys: list[str]) -> Iterator[Finding]:
    """FC250 on ``tbs`` sequences split over ``dp`` data-parallel ranks into micro-batches of ``micro``."""
    if tbs % dp:
        yield ctx.finding(
            "FC250",
            keys,
            f"data.train_batch_size {tbs} does not split over {dp} data-parallel ranks",
            f"make data.train_batch_size a multiple of {dp} (e.g. {dp * max(1, round(tbs / dp))})",
            derivation=derivation,
        )
        return
    if _get(ctx, "data.use_dynamic_bsz") is True:
        return
    per_rank = tbs // dp
    if per_rank % micro:
        good = divisors(per_rank)[:12]
        yield ctx.finding(
            "FC250",
            keys,
            f"each rank's share of data.train_batch_size is {per_rank} sequences "
            f"({tbs} / {dp} ranks), not a multiple of data.micro_batch_size_per_gpu {micro}: "
            f"train_batch_size must be a multiple of dp {dp} x micro {micro} = {dp * micro}",
            f"set data.micro_batch_size_per_gpu to a divisor of {per_rank} ({good}) or "
            f"data.train_batch_size to a multiple of {dp * micro}",
            derivation=derivation,
        )


@rule(
    "FC251",
    "the native SFT trainer runs fixed micro-batches (use_dynamic_bsz is verl's)",
    keys=("data.use_dynamic_bsz", "fsdpcfg.launcher"),
    example=("+recipe=qwen_sft", "data.use_dynamic_bsz=true"),
    kinds=SFT,
)
def sft_dynamic_bsz_native(ctx: Context) -> Iterator[Finding]:
    """``data.use_dynamic_bsz`` (verl's default: true) packs micro-batches by ``max_token_len_per_gpu``; the
    native trainer splits each rank's share into ``micro_batch_size_per_gpu`` sequences instead. Not a silent
    no-op: an error naming the launcher that implements it. Source: docs/design.md#no-silent-no-ops."""
    if _get(ctx, "fsdpcfg.launcher") == "native" and _get(ctx, "data.use_dynamic_bsz") is True:
        yield ctx.finding(
            "FC251",
            ["data.use_dynamic_bsz"],
            "data.use_dynamic_bsz=true (token-budget micro-batches) "
            "is implemented by launcher=verl, not by the native SFT trainer",
            "set data.use_dynamic_bsz=false (micro-batches of data.micro_batch_size_per_gpu), or launcher=verl",
        )


@rule(
    "FC252",
    "the native SFT trainer has no Ulysses sequence parallelism (it is verl's)",
    keys=("engine.ulysses_sequence_parallel_size", "fsdpcfg.launcher"),
    example=("+recipe=qwen_sft", "engine.ulysses_sequence_parallel_size=2"),
    kinds=SFT,
)
def sft_ulysses_native(ctx: Context) -> Iterator[Finding]:
    """``engine.ulysses_sequence_parallel_size`` > 1 splits each sequence over that many ranks in verl's SFT
    engine; the native trainer shards parameters only (every rank holds whole sequences). Not a silent no-op:
    an error naming the launcher that implements it. Source: docs/design.md#no-silent-no-ops;
    verl/workers/engine/fsdp/transformer_impl.py (Ulysses mesh)."""
    sp = _get(ctx, "engine.ulysses_sequence_parallel_size", 1)
    if _get(ctx, "fsdpcfg.launcher") == "native" and sp != 1:
        yield ctx.finding(
            "FC252",
            ["engine.ulysses_sequence_parallel_size"],
            f"engine.ulysses_sequence_parallel_size={sp}: Ulysses sequence parallelism is implemented by "
            "launcher=verl, not by the native SFT trainer",
            "set engine.ulysses_sequence_parallel_size=1, or launcher=verl",
        )


@rule(
    "FC253",
    "the native SFT trainer runs no validation (data.val_files, trainer.test_freq are verl's)",
    keys=("data.val_files", "trainer.test_freq", "fsdpcfg.launcher"),
    example=("+recipe=qwen_sft", "trainer.test_freq=2"),
    kinds=SFT,
)
def sft_validation_native(ctx: Context) -> Iterator[Finding]:
    """verl's SFT trainer evaluates ``data.val_files`` every ``trainer.test_freq`` steps; the native SFT trainer
    has no validation pass, so either key set would be accepted and do nothing. Source:
    docs/design.md#no-silent-no-ops; verl/trainer/sft_trainer.py."""
    if _get(ctx, "fsdpcfg.launcher") != "native":
        return
    set_keys = []
    if _get(ctx, "data.val_files") not in (None, "", []):
        set_keys.append("data.val_files")
    freq = _get(ctx, "trainer.test_freq")
    if isinstance(freq, int) and not isinstance(freq, bool) and freq > 0:
        set_keys.append("trainer.test_freq")
    if set_keys:
        what = ", ".join(f"{k} = {_get(ctx, k)}" for k in set_keys)
        yield ctx.finding(
            "FC253",
            set_keys,
            f"{what}: the native SFT trainer runs no validation, so this would do nothing",
            "unset it (data.val_files=null trainer.test_freq=-1), or use launcher=verl, whose SFT trainer validates",
        )


@rule(
    "FC254",
    "the native SFT trainer runs the FSDP engines (engine=megatron, automodel, veomni, torchtitan are verl's)",
    keys=("engine.strategy", "fsdpcfg.launcher"),
    example=("+recipe=qwen_sft", "engine=megatron"),
    kinds=SFT,
)
def sft_engine_native(ctx: Context) -> Iterator[Finding]:
    """The native SFT trainer (fsdpcfg/train/sft) shards the model with FSDP1/FSDP2 (``engine=fsdp``/``fsdp2``,
    verl's ``engine.strategy``); verl's other SFT engines (``engine=megatron optim=megatron`` ..., their
    ``engine.*`` sections: ``McoreEngineConfig`` ...) run only under verl's ``sft_trainer``. Not a silent
    FSDP run with the Megatron keys ignored: an error naming the launcher that runs it. The same for
    ``engine.strategy=fsdp_turbo``, which keeps verl's FSDP engine config but is verl's own engine. Source:
    docs/design.md#no-silent-no-ops; verl/trainer/sft_trainer.py
    (``engine`` built from ``config.engine`` by ``EngineRegistry``)."""
    if _get(ctx, "fsdpcfg.launcher") != "native":
        return
    if fsdp_engine(ctx):
        strategy = _get(ctx, "engine.strategy")
        # fsdp_turbo: verl's FSDP engine config, verl's engine; a name the schema refuses is FC150's
        if strategy in backends.fsdp_config_engines() and strategy not in backends.native_engines():
            yield ctx.finding(
                "FC254",
                ["engine.strategy", "fsdpcfg.launcher"],
                f"engine.strategy={strategy} is verl's {strategy} engine, run by launcher=verl; the native SFT "
                f"trainer shards with {' or '.join(backends.native_engines())}",
                f"use launcher=verl to run engine.strategy={strategy}, or engine.strategy=fsdp2 for the native "
                "SFT trainer",
            )
        return
    engine = sft_engine(ctx)
    yield ctx.finding(
        "FC254",
        ["fsdpcfg.launcher"],
        f"engine={engine} (verl's {ctx.verl_config}: engine={engine} optim={engine}) is run by launcher=verl; "
        "the native SFT trainer runs engine=fsdp and engine=fsdp2 only",
        f"use launcher=verl to run engine={engine}, or engine=fsdp2 for the native SFT trainer",
    )
