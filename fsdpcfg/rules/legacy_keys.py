"""FC701, FC708: keys and trainer modules of an older verl, and where verl 0.9.1 reads them instead.

The one table of verl's moves (:data:`REWARD_MOVES`, :data:`RENAMES`, :data:`SFT_MOVES`, :data:`REMOVED_MODULES`),
each entry with the verl source it is read from. ``fsdpcfg check`` reports with it (FC701 here, FC708 for a
removed trainer module in a run script) and ``fsdpcfg check --fix`` rewrites with it
(:mod:`fsdpcfg.check.fix`); every target key is one verl 0.9.1 composes, validates and converts
(``tests/check/verl_opinion/test_migration_oracle.py`` asks verl itself).

Sources: verl 0.9.1 ``verl/experimental/reward_loop/reward_loop.py`` ``migrate_legacy_reward_impl`` (the reward
keys; 0.9.1's ``main_ppo`` does not call it, only ``fully_async_main`` does, so a legacy key is silently ignored
elsewhere), ``verl/trainer/config/legacy_reward_impl.yaml`` (the null placeholders) and the renames in verl's
history named per entry (``git log -S`` on ``verl/trainer/config/_generated_ppo_trainer.yaml``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from fsdpcfg import verlref
from fsdpcfg.rules._common import src, val
from fsdpcfg.rules.context import Context
from fsdpcfg.rules.finding import Finding
from fsdpcfg.rules.registry import rule
from fsdpcfg.verlref import flatten

_MIGRATE = "verl/experimental/reward_loop/reward_loop.py migrate_legacy_reward_impl"
_OLD_RM = (
    "verl 0.9.1 has no reward-model worker (verl #5194 removed it; the reward model is served as a rollout: "
    "reward.reward_model.rollout.*), so nothing reads this setting"
)


#: The top-level sections of verl <= 0.8's reward keys (``fsdpcfg.schema.keys.LEGACY_PREFIXES``).
LEGACY_SECTIONS = ("custom_reward_function", "reward_model", "sandbox_fusion")


@dataclass(frozen=True)
class Move:
    """One key (or, with a trailing ``.*``, every key of a section) of an older verl and its verl 0.9.1 home.

    Attributes:
        old: the old dotted key, or ``SECTION.*``.
        new: the verl 0.9.1 key (``SECTION.*`` for a section), or None when 0.9.1 has no such setting.
        source: where verl states the move (file and function, or the commit that renamed it).
        get_mapping: the target is a mapping verl reads with ``.get`` and its YAML does not list: its keys are
            added with ``+`` (``+reward.reward_kwargs.max_resp_len=...``).
        note: what else the user should know (shown with the finding).
        unchanged: for a key with no 0.9.1 home (``new`` None), the values that ask for what 0.9.1 does anyway
            (a warning: nothing is lost); any other value is an error.
    """

    old: str
    new: str | None
    source: str
    get_mapping: bool = False
    note: str = ""
    unchanged: tuple[Any, ...] = ()


#: The legacy top-level reward sections (verl <= 0.8) -> verl 0.9.1's ``reward.*``, in
#: ``migrate_legacy_reward_impl``'s order; the first matching entry wins.
REWARD_MOVES: tuple[Move, ...] = (
    Move("reward_model.num_workers", "reward.num_workers", _MIGRATE),
    Move("reward_model.reward_manager", "reward.reward_manager.name", _MIGRATE),
    Move("reward_model.reward_loop_source", "reward.reward_manager.source", _MIGRATE),
    Move("reward_model.reward_loop_module_path", "reward.reward_manager.module.path", _MIGRATE),
    Move("reward_model.reward_loop_class_name", "reward.reward_manager.module.name", _MIGRATE),
    Move(
        "custom_reward_function.reward_kwargs.*",
        "reward.custom_reward_function.reward_kwargs.*",
        _MIGRATE + "; verl/trainer/ppo/reward.py get_custom_reward_fn reads reward_kwargs with .get",
        get_mapping=True,
    ),
    Move("custom_reward_function.*", "reward.custom_reward_function.*", _MIGRATE),
    Move("reward_model.enable", "reward.reward_model.enable", _MIGRATE),
    Move("reward_model.enable_resource_pool", "reward.reward_model.enable_resource_pool", _MIGRATE),
    Move("reward_model.n_gpus_per_node", "reward.reward_model.n_gpus_per_node", _MIGRATE),
    Move("reward_model.nnodes", "reward.reward_model.nnodes", _MIGRATE),
    Move("reward_model.model.path", "reward.reward_model.model_path", _MIGRATE),
    Move(
        "reward_model.reward_kwargs.*",
        "reward.reward_kwargs.*",
        _MIGRATE + "; verl/experimental/reward_loop/reward_manager/dapo.py reads reward.reward_kwargs with .get",
        get_mapping=True,
    ),
    Move(
        "reward_model.overlong_buffer.*",
        "reward.reward_kwargs.overlong_buffer_cfg.*",
        "verl 0.5 recipe/dapo/main_dapo.py (overlong_buffer_cfg=config.reward_model.overlong_buffer); verl 0.9.1 "
        "verl/experimental/reward_loop/reward_manager/dapo.py reads reward.reward_kwargs.overlong_buffer_cfg",
        get_mapping=True,
        note="verl 0.9.1's dapo manager also needs +reward.reward_kwargs.max_resp_len (0.5's recipe passed "
        "data.max_response_length itself)",
    ),
    Move("reward_model.rollout.*", "reward.reward_model.rollout.*", _MIGRATE),
    Move(
        "reward_model.sandbox_fusion.*",
        "reward.sandbox_fusion.*",
        "verl 0.5 verl/trainer/config/ppo_trainer.yaml (reward_model.sandbox_fusion); " + _MIGRATE,
    ),
    Move("sandbox_fusion.*", "reward.sandbox_fusion.*", _MIGRATE),
    Move("reward_model.*", None, "verl #5194 (4ef45d093) removed the reward-model worker", note=_OLD_RM),
)

#: Keys of verl's PPO tree renamed between verl 0.5 and 0.9.1 (outside the legacy reward sections).
RENAMES: tuple[Move, ...] = (
    Move("ray_init.*", "ray_kwargs.ray_init.*", "verl #3049 (2bbd09245) moved ray_init under ray_kwargs"),
    Move("trainer.profile_steps", "global_profiler.steps", "verl #2894 (545f89984) profiler api refactor"),
    Move(
        "actor_rollout_ref.rollout.update_weights_bucket_megabytes",
        "actor_rollout_ref.rollout.checkpoint_engine.update_weights_bucket_megabytes",
        "verl 0.9.1 verl/workers/config/rollout.py CheckpointEngineConfig.update_weights_bucket_megabytes",
    ),
    Move("critic.model.fsdp_config.*", "critic.fsdp.*", "verl #5870 (16253911d) moved the critic's engine config"),
    Move(
        "trainer.use_legacy_worker_impl",
        None,
        "verl #6067 (044bbba27) removed the legacy FSDP/Megatron workers before v0.8.0",
        note="verl 0.9.1 always runs the engine workers (what `disable` chose), and nothing reads this key",
        unchanged=("disable", False),
    ),
)

#: ``verl.trainer.fsdp_sft_trainer`` (config ``sft_trainer``) -> ``verl.trainer.sft_trainer`` (config
#: ``sft_trainer_engine``). Source: verl #5382 (4c8101dd2), which removed the trainer and rewrote verl's own
#: SFT example scripts with these renames (examples/sft/gsm8k/*.sh, tests/special_e2e/sft/run_sft.sh).
_SFT = "verl #5382 (4c8101dd2) rewrote verl's SFT scripts"
SFT_MOVES: tuple[Move, ...] = (
    Move("model.partial_pretrain", "model.path", _SFT),
    Move("ulysses_sequence_parallel_size", "engine.ulysses_sequence_parallel_size", _SFT),
    Move("use_remove_padding", "model.use_remove_padding", _SFT),
    Move("trainer.checkpoint.*", "checkpoint.*", _SFT),
    Move("data.multiturn.messages_key", "data.messages_key", _SFT),
    Move(
        "data.prompt_key",
        None,
        _SFT,
        note="sft_trainer reads chat messages (data.messages_key); the prompt/response dataset is gone",
    ),
    Move("data.response_key", None, _SFT, note="see data.prompt_key"),
    Move("data.prompt_dict_keys", None, _SFT, note="see data.prompt_key"),
    Move("data.response_dict_keys", None, _SFT, note="see data.prompt_key"),
    Move("data.multiturn.enable", None, _SFT, note="every dataset of sft_trainer is multi-turn messages"),
    Move("model.strategy", None, _SFT, note="the engine is the group option engine=fsdp"),
)


@dataclass(frozen=True)
class Removed:
    """A trainer module verl 0.9.1 no longer has.

    Attributes:
        module: the module that is gone.
        replacement: the module to run instead.
        launcher: how verl runs the replacement.
        moves: the key moves between the two configs (``()``: the same config).
        source: the verl commit that removed it.
    """

    module: str
    replacement: str
    launcher: str
    moves: tuple[Move, ...]
    source: str


REMOVED_MODULES: dict[str, Removed] = {
    r.module: r
    for r in (
        Removed("verl.trainer.fsdp_sft_trainer", "verl.trainer.sft_trainer", "torchrun", SFT_MOVES, _SFT),
        Removed(
            "verl.trainer.main_ppo_sync",
            "verl.trainer.main_ppo",
            "python",
            (),
            "verl #6710 (45632b5fa) folded it into main_ppo (trainer.use_v1=true, trainer.v1.trainer_mode=sync)",
        ),
        Removed(
            "verl.trainer.main_generation",
            "verl.trainer.main_generation_server",
            "python",
            (),
            "verl #5382 (4c8101dd2) removed it",
        ),
    )
}


@dataclass(frozen=True)
class Target:
    """Where a legacy key goes: ``key`` (None: nowhere), ``plus`` (write it as ``+key=``), the table's ``move``."""

    key: str | None
    plus: bool
    move: Move


def target(key: str, moves: Iterable[Move] = REWARD_MOVES + RENAMES, config: str = "ppo") -> Target | None:
    """The verl 0.9.1 home of ``key`` per ``moves`` (first match), or None when no entry names it.

    A section move maps each key below it; a mapped key that verl's ``config`` (``ppo``/``sft``) does not know,
    outside a ``.get``-read mapping, has no home (``Target.key`` None): verl would refuse it.
    """
    known = verlref.keys(config)
    for m in moves:
        if m.old.endswith(".*"):
            pre = m.old[:-2]
            if not key.startswith(pre + "."):
                continue
            new = None if m.new is None else m.new[:-2] + key[len(pre) :]
        elif key == m.old:
            new = m.new
        else:
            continue
        if new is None:
            return Target(None, False, m)
        if m.get_mapping:
            return Target(new, True, m)
        return Target(new if new in known else None, False, m)
    return None


def removed_module(module: str) -> Removed | None:
    """The :class:`Removed` entry of a trainer module verl 0.9.1 no longer has, else None."""
    return REMOVED_MODULES.get(module)


def _same(a: Any, b: Any) -> bool:
    """Equal as verl reads them (``True``/``true``, ``8``/``8.0``)."""
    if a == b:
        return True
    return str(a).lower() == str(b).lower()


def override(t: Target, value: Any) -> str:
    """The command-line form of the move (``+reward.reward_kwargs.max_resp_len=2048``)."""
    return f"{'+' if t.plus else ''}{t.key}={value}"


@rule(
    "FC701",
    "keys of an older verl that verl 0.9.1 ignores (the reward sections, removed settings)",
    keys=["custom_reward_function.path", "reward.custom_reward_function.path", "reward_model.enable"],
    example=["+custom_reward_function.path=my_reward.py"],
)
def legacy_reward_keys(ctx: Context) -> Iterator[Finding]:
    """verl 0.9.1's ``main_ppo`` reads only ``reward.*``; the old top-level ``custom_reward_function.*`` /
    ``reward_model.*`` / ``sandbox_fusion.*`` stay in its tree as null placeholders and are silently ignored
    (only the experimental fully-async trainer migrates them), so the default scorer runs instead. Each value set
    there is an error naming its verl 0.9.1 key (:data:`REWARD_MOVES`), a warning when the value verl will use
    for that key is already the same (nothing is lost), and an error "nothing reads it" for a setting of the
    removed reward-model worker.

    Source: verl/trainer/config/legacy_reward_impl.yaml; verl/experimental/reward_loop/reward_loop.py
    ``migrate_legacy_reward_impl`` (called only from verl/experimental/fully_async_policy/fully_async_main.py);
    case c24.
    """
    for section in LEGACY_SECTIONS:
        sec = ctx.cfg.get(section)
        if sec is None:
            continue
        leaves = flatten(sec, section) if isinstance(sec, dict) else {section: sec}
        for key, v in leaves.items():
            if v is None or v == {}:
                continue  # a null legacy key (verl 0.9.1's own dumps list them) changes nothing
            yield _finding(ctx, key, v, target(key, REWARD_MOVES))
    for key in added_renamed(ctx.composed.added):  # `+trainer.use_legacy_worker_impl=...`: a removed key, added
        yield _finding(ctx, key, ctx.get(key), target(key, RENAMES))


def added_renamed(added: Iterable[str]) -> list[str]:
    """The keys of ``added`` (created with ``+``) that :data:`RENAMES` moves or removes: FC701 reports them, not
    FC102 ("a key nothing reads")."""
    return [k for k in added if target(k, RENAMES) is not None]


def _finding(ctx: Context, key: str, v: Any, t: Target | None) -> Finding:
    head = f"{key} = {v} {src(ctx, key)} is a pre-0.9 verl key; verl 0.9.1 ignores it"
    note = f" ({t.move.note})" if t is not None and t.move.note else ""
    if t is None or t.key is None:
        why = t.move.note if t is not None and t.move.note else "verl 0.9.1 has no such setting"
        if t is not None and any(_same(v, u) for u in t.move.unchanged):
            return ctx.finding(
                "FC701", [key], f"{head}: {why}; nothing is lost ({t.move.source})", f"delete {key}", severity="warning"
            )
        return ctx.finding("FC701", [key], f"{head}: {why}" + (f" ({t.move.source})" if t else ""), f"delete {key}")
    now = val(ctx, t.key)
    if now is not None and _same(now, v):
        return ctx.finding(
            "FC701",
            [key, t.key],
            f"{head}; the value verl 0.9.1 uses for {t.key} is already {now}, so nothing is lost{note}",
            f"rename it to {override(t, v)} (or delete it)",
            severity="warning",
        )
    return ctx.finding(
        "FC701",
        [key, t.key],
        f"{head} and runs {t.key} = {'unset' if now is None else now} instead{note}",
        f"rename it to {override(t, v)}",
    )


def removed_module_finding(entry: str, label: str, keys: Iterable[str]) -> Finding | None:
    """FC708 for a run script's command of a trainer module verl 0.9.1 removed (``entry``), naming the
    replacement, how verl runs it and where each of the command's ``keys`` goes; None for another module."""
    r = removed_module(entry)
    if r is None:
        return None
    moved = []
    for key in keys:
        t = target(key, r.moves, "sft") if r.moves else None
        if t is not None:
            moved.append(f"{key} -> {t.key}" if t.key else f"{key}: no such setting ({t.move.note or 'delete it'})")
    keys_text = f"; its keys: {', '.join(moved)}" if moved else ""
    run = "torchrun ... -m" if r.launcher == "torchrun" else "python3 -m"
    return Finding(
        "FC708",
        "error",
        [],
        f"{label}: `{entry}` is not a module of verl {verlref.VERL_VERSION} ({r.source}): the command fails "
        f"with `No module named`{keys_text}",
        f"run `{run} {r.replacement}`" + (" with the keys renamed" if moved else "") + " (`fsdpcfg check --fix` "
        "rewrites it when every key has a verl 0.9.1 key)",
    )


@rule("FC708", "a trainer module verl 0.9.1 removed", kinds=("ppo", "sft"))
def removed_trainer_module(ctx: Context) -> Iterator[Finding]:
    """A run script runs ``verl.trainer.fsdp_sft_trainer``, ``main_ppo_sync`` or ``main_generation``, which verl
    0.9.1 no longer has (:data:`REMOVED_MODULES`, each with the commit that removed it); a ``main_ppo_sync``
    command is checked as the ``main_ppo`` command it becomes. The finding is made while the script is read
    (``composed.script_notes``). Source: verl #5382 (fsdp_sft_trainer, main_generation), verl #6710
    (main_ppo_sync)."""
    for f in getattr(ctx.composed, "script_notes", None) or []:
        if f.rule == "FC708":
            yield f
