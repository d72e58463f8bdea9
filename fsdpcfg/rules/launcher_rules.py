"""FC8xx: what each launcher can run. The native launcher (fsdpcfg/train under torchrun) implements a
subset of verl's keys; verl (Ray) runs the inference-engine rollouts. Which keys the native launcher
honours is declared beside its code in :mod:`fsdpcfg.native.support` (``FEATURES``, read as ``NATIVE_UNSUPPORTED``,
``NATIVE_VALUES`` and ``NATIVE_WHEN``; importable without torch).

Source: docs/design.md#no-silent-no-ops (a key that verl knows but the chosen launcher does not implement is an error
naming the launcher that does); issue 2.3 (rollout backend per launcher).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from fsdpcfg import verlref
from fsdpcfg.native import support
from fsdpcfg.rules.registry import rule
from fsdpcfg.rules.schema_rules import schema_report
from fsdpcfg.schema import keys as K
from fsdpcfg.schema.rollout import BACKEND_LAUNCHERS

if TYPE_CHECKING:
    from fsdpcfg.rules.context import Context
    from fsdpcfg.rules.finding import Finding

NAME = "actor_rollout_ref.rollout.name"
LAUNCHER = "fsdpcfg.launcher"


@rule(
    "FC801",
    "the rollout backend is one the chosen launcher runs",
    keys=(NAME, LAUNCHER),
    example=("+recipe=qwen_grpo", "rollout=vllm"),
)
def backend_launcher(ctx: Context) -> Iterator[Finding]:
    """hf rollout runs only in the native loop; vllm, sglang and trtllm only under verl. Source: issue 2.3;
    verl 0.9.1 ``verl/workers/rollout/base.py`` (its rollout registry has no hf backend)."""
    name, launcher = ctx.get(NAME), ctx.launcher
    can = BACKEND_LAUNCHERS.get(name) if isinstance(name, str) else None
    if not can or launcher in can:
        return
    other = can[0]
    alt = "rollout=hf" if launcher == "native" else "rollout=vllm (or sglang)"
    yield ctx.finding(
        "FC801",
        [NAME, LAUNCHER],
        f"{NAME}: the {name!r} rollout is not run by the {launcher} launcher; it runs under launcher={other}",
        f"choose launcher={other}, or keep launcher={launcher} with {alt}",
    )


def _default(ctx: Context, key: str) -> Any:
    return ctx.verl_defaults().get(
        key, K.schema_default(key) if K.field_info(key) is not None and not K.field_info(key).is_required() else None
    )


#: keys verl reads with a value that means the same as its default: a checkpoint count of 0 or less keeps all, as
#: ``None`` does (verl/utils/checkpoint/checkpoint_manager.py ``register_checkpoint``: ``max_ckpt_to_keep > 0``).
_KEEP_ALL = ("trainer.max_actor_ckpt_to_keep", "trainer.max_critic_ckpt_to_keep")


def _as_verl_reads(key: str, value: Any) -> Any:
    """``value`` as verl 0.9.1 reads ``key``: ``None`` for a keep-count of 0 or less (:data:`_KEEP_ALL`)."""
    if key in _KEEP_ALL and isinstance(value, int) and not isinstance(value, bool) and value <= 0:
        return None
    return value


def _differs(value: Any, default: Any) -> bool:
    if (
        isinstance(value, (int, float))
        and isinstance(default, (int, float))
        and not isinstance(value, bool)
        and not isinstance(default, bool)
    ):
        return float(value) != float(default)
    return value != default


def _native_kind(ctx: Context) -> str | None:
    """``ppo`` or ``sft`` when the native trainer of that kind runs this config, else ``None`` (launcher=verl;
    an SFT engine other than FSDP, which the native launcher does not run: FC254)."""
    if ctx.launcher != "native":
        return None
    if ctx.composed.kind == "sft":
        return "sft" if ctx.verl_config == "sft_trainer_engine" else None
    return "ppo"


@rule(
    "FC802",
    "every key set away from verl's default is implemented by the native launcher",
    keys=tuple(support.NATIVE_UNSUPPORTED),
    example=("+recipe=qwen_grpo", "actor_rollout_ref.rollout.gpu_memory_utilization=0.6"),
    kinds=("ppo", "sft"),
)
def native_unsupported_key(ctx: Context) -> Iterator[Finding]:
    """Under ``fsdpcfg.launcher=native``: a key the native loop does not implement (``NATIVE_UNSUPPORTED``)
    or a key only verl reads (not in fsdpcfg's schema), with a value other than verl 0.9.1's default, would
    be a silent no-op. Keys at verl's default are fine. Keys whose value copies another key
    (``${...}``) are reported on the key they copy. SFT: the keys the native SFT trainer declares refused
    (``support.SFT_FEATURES``; a key only verl reads is FC114's). Source: docs/design.md#no-silent-no-ops."""
    kind = _native_kind(ctx)
    if kind is None:
        return
    derived = ctx.derived
    for key, why in support.NATIVE_UNSUPPORTED.items():
        if support.KIND[key] != kind or key in derived or not ctx.is_set(key):
            continue
        value, default = ctx.get(key), _default(ctx, key)
        if _differs(value, default):
            yield ctx.finding(
                "FC802",
                [key, LAUNCHER],
                f"{key}={value!r} is not implemented by the native "
                f"launcher ({why}); only verl's default {default!r} is",
                f"use launcher=verl to run it, or set {key}={_text(default)}",
            )
    if kind == "sft":
        return
    raw_defaults = ctx.verl_defaults(resolved=False)
    for key, value in schema_report(ctx).verl_only.items():
        if key in derived or key.endswith("._target_"):
            continue
        raw = raw_defaults.get(key)
        if isinstance(raw, str) and "${" in raw:
            continue  # verl copies it from another key (a saved config holds the copy resolved): reported there
        default = ctx.verl_defaults().get(key)
        if _differs(_as_verl_reads(key, value), default):
            yield ctx.finding(
                "FC802",
                [key, LAUNCHER],
                f"{key}={value!r} is read by verl only; the native "
                f"launcher does not implement it (verl's default is {default!r})",
                f"use launcher=verl to run it, or remove {key}",
            )


@rule(
    "FC803",
    "values the native launcher implements",
    keys=tuple(support.NATIVE_VALUES),
    example=("+recipe=qwen_grpo", "algorithm.adv_estimator=rloo"),
    kinds=("ppo", "sft"),
)
def native_unsupported_value(ctx: Context) -> Iterator[Finding]:
    """Under ``fsdpcfg.launcher=native``: keys whose values the native loop implements only in part
    (``NATIVE_VALUES``: GRPO advantages, the vanilla PPO-clip loss, AdamW, the FSDP engines, no critic, a fixed
    in-reward KL coefficient, the load formats the hf replica reads), each while its ``NATIVE_WHEN`` condition
    holds (``kl_ctrl.type`` only with ``algorithm.use_kl_in_reward``). A value the schema rejects is the schema
    rule's; the rollout backend is FC801's. SFT: the native SFT trainer's (``support.SFT_FEATURES``: AdamW).
    Source: :mod:`fsdpcfg.native.support` (each entry names its code)."""
    kind = _native_kind(ctx)
    if kind is None:
        return
    for key, allowed in support.NATIVE_VALUES.items():
        if key == NAME or support.KIND[key] != kind:
            continue
        cond = support.NATIVE_WHEN.get(key)
        if cond is not None and ctx.get(cond[0]) != cond[1]:
            continue
        value = ctx.get(key)
        literal = K.allowed_values(key)
        known = not literal or value in literal or isinstance(value, bool)
        if value not in allowed and known:
            only = f" with {cond[0]}={_text(cond[1])}" if cond is not None else ""
            yield ctx.finding(
                "FC803",
                [key, LAUNCHER, *([cond[0]] if cond is not None else [])],
                f"{key}={_text(value)} is not implemented by the native "
                f"launcher{only} (it implements {', '.join(map(_text, allowed))})",
                f"use launcher=verl to run {key}={_text(value)}, or set {key}={_text(allowed[0])}",
            )


LOGGER = "trainer.logger"


@rule(
    "FC804",
    "every trainer.logger sink is one the launcher writes",
    keys=(LOGGER, LAUNCHER),
    example=("+recipe=qwen_grpo", "trainer.logger=[console,swanlab]"),
    kinds=("ppo", "sft"),
)
def logger_sinks(ctx: Context) -> Iterator[Finding]:
    """Under ``fsdpcfg.launcher=native``: the native loop writes ``console``, ``tensorboard``, ``file``,
    ``wandb`` and ``mlflow`` (``fsdpcfg/train/trackers.py``, declared as ``NATIVE_SINKS``); any other sink verl
    supports (``swanlab``, ``vemlp_wandb``, ``clearml``, ``trackio``, ``rl_insight``) would silently write
    nothing. Source: verl 0.9.1 ``verl/utils/tracking.py`` ``Tracking.supported_backend``."""
    if ctx.launcher != "native":
        return
    from fsdpcfg.schema.trainer import NATIVE_SINKS

    value = ctx.get(LOGGER)
    loggers = value if isinstance(value, list) else [value]
    other = [x for x in loggers if isinstance(x, str) and x not in NATIVE_SINKS]
    if other:
        yield ctx.finding(
            "FC804",
            [LOGGER, LAUNCHER],
            f"{LOGGER}: {', '.join(other)} is not written by the native loop (it writes {', '.join(NATIVE_SINKS)})",
            f"use launcher=verl for {', '.join(other)}, or choose from {', '.join(NATIVE_SINKS)}",
        )


def _text(v: Any) -> str:
    if isinstance(v, bool):
        return str(v).lower()
    return "null" if v is None else str(v)


@rule(
    "FC114",
    "SFT: every verl key set away from verl's default is implemented by the native SFT trainer",
    keys=(LAUNCHER,),
    example=("+recipe=qwen_sft", "engine.qat.enable=true"),
    kinds=("sft",),
)
def native_sft_verl_only_key(ctx: Context) -> Iterator[Finding]:
    """Under ``fsdpcfg.launcher=native``, SFT: a key of verl's ``sft_trainer_engine`` composition that the SFT
    schema does not model (``engine.qat.*``, ``profiler.*``, ``model.lora.*`` ...) with a value other than
    verl 0.9.1's default would be a silent no-op: fsdpcfg/train/sft reads only the schema's keys. Keys that
    copy another key (``${...}``) are left to the key they copy. The SFT counterpart of FC802. Source:
    docs/design.md#no-silent-no-ops; verl/trainer/config/sft_trainer_engine.yaml."""
    if ctx.launcher != "native" or ctx.verl_config != "sft_trainer_engine":
        return  # another engine under the native launcher is FC254's
    from fsdpcfg.rules.sft_rules import _schema_defaults

    schema = _schema_defaults()
    raw = verlref.defaults("sft_trainer_engine", resolved=False)
    derived: frozenset[str] = getattr(ctx, "derived", frozenset())
    for key, value in verlref.flatten(ctx.cfg).items():
        if key in schema or key not in raw or key in derived or key.endswith("._target_"):
            continue
        if isinstance(raw[key], str) and "${" in raw[key]:
            continue
        default = verlref.defaults("sft_trainer_engine")[key]
        if _differs(value, default):
            yield ctx.finding(
                "FC114",
                [key, LAUNCHER],
                f"{key}={value!r} is read by verl only; the native SFT "
                f"trainer does not implement it (verl's default is {default!r})",
                f"use launcher=verl to run it, or set {key}={_text(default)}",
            )
