"""FC1xx: the schema, unknown and unread keys, types and allowed values, the model path.

These rules report what :func:`fsdpcfg.schema.validate_tree` finds (computed once per check and cached on
the context). Sources: docs/design.md#unknown-keys-are-never-ignored; verl 0.9.1's dataclass checks
(``verl/workers/config/*.py``) for the allowed values; reported cases c09, c20, c23
(docs/design.md#reported-misconfigurations).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from fsdpcfg import paths
from fsdpcfg.rules.chain import pending_checkpoint_root
from fsdpcfg.rules.finding import Finding
from fsdpcfg.rules.registry import rule
from fsdpcfg.schema import keys as K
from fsdpcfg.schema.model import OFFLINE_OPTION, model_path_status
from fsdpcfg.schema.validate import SchemaReport, validate_tree

if TYPE_CHECKING:
    from fsdpcfg.rules.context import Context


def schema_report(ctx: Context) -> SchemaReport:
    """Return the schema validation of ``ctx.cfg`` (computed once per context)."""
    rep = ctx.__dict__.get("_schema_report")
    if rep is None:
        rep = validate_tree(
            ctx.cfg,
            skip=frozenset(getattr(ctx, "unresolved", {})),
            derived=frozenset(getattr(ctx, "derived", ())),
            config=ctx.verl_config,
        )
        ctx.__dict__["_schema_report"] = rep
    return rep


def _added(ctx: Context) -> list[str]:
    return list(getattr(ctx.composed, "added", []) or [])


def _under(key: str, prefix: str) -> bool:
    return key == prefix or key.startswith(prefix + ".")


@rule(
    "FC100",
    "every value can be resolved (interpolations point at existing keys)",
    keys=(),
    example=("+recipe=qwen_grpo", "data.max_prompt_length=${data.nope}"),
)
def unresolved_interpolation(ctx: Context) -> Iterator[Finding]:
    """A ``${...}`` value whose target does not exist or cannot be resolved. Source: OmegaConf's
    interpolation errors, which otherwise surface as a traceback when the config is first read. Under
    ``launcher=verl``, also a ``${oc.select:KEY,[...]}`` whose KEY is missing (``~actor_rollout_ref.actor.profiler``
    leaves verl's own ``rollout.profiler.ranks`` so): verl resolves its config in place before it starts
    (``OmegaConf.resolve``, verl/trainer/main_ppo.py ``TaskRunner.run``), which cannot put the resolver's list
    there, and stops (found by verl as the oracle of generated overrides, issue 20)."""
    failed = getattr(ctx, "unresolved", {})
    for key in sorted(failed):
        src = ctx.composed.provenance.source_of(key)
        yield Finding(
            "FC100",
            "error",
            [key],
            f"{key}: {failed[key]}",
            f"set {key} to a literal value, or point the ${{...}} at an existing key (`fsdpcfg show` prints the tree)",
            provenance={key: str(src) if src else "unknown"},
        )
    # verl resolves its config in place, which an oc.select's list default breaks: only a deleted key or a value
    # written with oc.select can leave such a default taken (verl's own YAML points every one at a key it has)
    written = [str(o) for o in getattr(ctx.composed, "overrides", None) or []]
    if ctx.launcher == "verl" and (getattr(ctx.composed, "deleted", None) or any("oc.select" in o for o in written)):
        from fsdpcfg.compose.resolve import container_defaults_taken

        for key, target in sorted(container_defaults_taken(ctx.composed.cfg).items()):
            yield Finding(
                "FC100",
                "error",
                [key, target],
                f"{key} is ${{oc.select:{target},...}} and {target} is missing, so it takes its list default; verl "
                "resolves its config in place before it starts (OmegaConf.resolve, verl/trainer/main_ppo.py "
                "TaskRunner.run), which cannot put a resolver's list there, and stops (UnsupportedValueType)",
                f"keep {target} (do not delete it or the section above it), or set {key} to a literal list",
            )


@rule(
    "FC108",
    "a group option fsdpcfg's tree does not model (verl's own groups, a hydra.searchpath package's) is named",
    severity="error",
    keys=(),
    example=("+recipe=qwen_grpo", "actor@actor_rollout_ref.actor=dp_actor"),
    kinds=("ppo", "sft"),
)
def unmodelled_group_option(ctx: Context) -> Iterator[Finding]:
    """Reported while composing (:func:`fsdpcfg.check.config.unmodelled_group_finding`): an override such as
    ``actor@actor_rollout_ref.actor=mlite_actor`` selects an option fsdpcfg's tree cannot compose. In a verl run
    script verl composes it: the override is dropped, the rest checked, and an info names what was not. For a
    config fsdpcfg composes and runs it is an error (the run would go without it). Source: verl's megatron-lite
    examples (``hydra.searchpath=[pkg://...]``); issue 20 item 8. A run script's option the script reader sets aside
    (:func:`fsdpcfg.check.runscript.translate.unmodelled_option`) comes through ``composed.script_notes``, naming the
    keys below its section the option alone defines: not checked, not unknown keys."""
    for f in getattr(ctx.composed, "script_notes", None) or []:
        if f.rule == "FC108":
            yield f


@rule(
    "FC101",
    "every key is one the schema or verl 0.9.1 knows",
    keys=(),
    example=("+recipe=qwen_grpo", "trainer.nnode=2"),
)
def unknown_key(ctx: Context) -> Iterator[Finding]:
    """A key that neither fsdpcfg's schema nor verl 0.9.1's ``ppo_trainer`` config defines, from a config
    file (keys created on the command line with ``+`` are FC102). verl and Hydra ignore such keys silently
    when they sit in a file. Source: docs/design.md#unknown-keys-are-never-ignored."""
    added = _added(ctx)
    for i in schema_report(ctx).issues:
        if i.kind != "unknown" or any(_under(a, i.key) or _under(i.key, a) for a in added):
            continue
        yield ctx.finding("FC101", [i.key] + i.suggestions[:1], f"{i.key} {i.message}", i.fix)


@rule(
    "FC102",
    "a key created with `+` is one something reads",
    keys=(),
    example=("+recipe=qwen_grpo", "+actor_rollout_ref.actor.ppo_micro_batch_size_pergpu=4"),
)
def unread_added_key(ctx: Context) -> Iterator[Finding]:
    """``+key=value`` creates a key even when nothing reads it, so a typo in a ``+`` override is silently
    accepted by Hydra and by verl. A field of verl's config dataclasses that verl sets itself
    (``+actor_rollout_ref.model.local_path``: :data:`fsdpcfg.schema.keys.VERL_SET_BY_VERL`) is reported too: verl
    takes the value and overwrites it. The other fields its YAML leaves out are verl's keys
    (:func:`fsdpcfg.verlref.fields`). Source: reported cases c09 (``+model.trust_remote_code``) and c20
    (docs/design.md#reported-misconfigurations); verl 0.9.1 as the oracle of generated overrides (issue 20)."""
    from fsdpcfg.rules.legacy_keys import added_renamed

    legacy = set(added_renamed(_added(ctx)))  # an older verl's key: FC701 names where it went
    for key in _added(ctx):
        if K.classify(key) != "unknown" or key in legacy:
            continue
        own = K.set_by_verl(key)
        if own is not None:  # verl's dataclass takes it, and verl overwrites it before anything reads it
            yield ctx.finding(
                "FC102",
                [key],
                f"+{key} sets {own[0]}, which verl 0.9.1 sets itself ({own[1]}): the value given is never read",
                "remove it (where verl takes the value from another key, the message names it: set that one)",
            )
            continue
        # only a key whose leaf is close, whose type fits the value, of this config's engine
        real = K.propose(key, ctx.get(key), config=ctx.verl_config)
        fix = (
            (
                f"use the real key: {real}={_shown(ctx, key)}"
                + (" (drop the `+`: it already exists)" if real in K.schema_keys() else "")
            )
            if real
            else "remove it, or check the name (`fsdpcfg show`)"
        )
        yield ctx.finding(
            "FC102",
            [key] + ([real] if real else []),
            f"+{key} created a key that nothing reads (neither fsdpcfg nor verl 0.9.1 knows it)"
            + (f"; the closest real key is {real}" if real else f": {K.NO_SUCH_KEY}"),
            fix,
        )


def _shown(ctx: Context, key: str) -> str:
    v = ctx.get(key)
    if isinstance(v, bool):
        return str(v).lower()
    return "VALUE" if isinstance(v, (dict, list)) or v is None else str(v)


@rule(
    "FC103",
    "values have the right type and are among the allowed values",
    keys=(),
    example=("+recipe=qwen_grpo", "actor_rollout_ref.actor.strategy=fsdp3"),
)
def invalid_value(ctx: Context) -> Iterator[Finding]:
    """Types, ranges and allowed values of the schema (Pydantic, ``fsdpcfg/schema/``), and values of
    verl-only keys whose type differs from verl's default, and a scalar or a list set on a section (a mapping of
    keys: ``actor_rollout_ref.rollout.mtp=1``; verl 0.9.1 takes a scalar at config time and fails where it reads a
    key of the section, and refuses to merge a list into a mapping). Source: verl 0.9.1 ``verl/workers/config/*.py``
    (``__post_init__`` checks), ``verl/trainer/ppo/core_algos.py`` (estimators, KL types, policy losses);
    reported case c23 (docs/design.md#reported-misconfigurations)."""
    for i in schema_report(ctx).issues:
        if i.kind in ("invalid", "verl_type", "conflict", "section"):
            yield ctx.finding("FC103", [i.key], f"{i.key}: {i.message}", i.fix)


@rule(
    "FC105",
    "a key missing from the tree is added with `+`",
    keys=(),
    example=("+recipe=qwen_grpo", "launcher=verl", "ray_kwargs.ray_init.address=auto"),
)
def needs_plus(ctx: Context) -> Iterator[Finding]:
    """``key=value`` for a key that no file of the config sets is rejected by Hydra ("Could not override
    ... use +"), by fsdpcfg and by verl alike. The tree starts from verl's own composition, so these are
    exactly the keys verl needs ``+`` for: below a free mapping (``override_config``, ``engine_kwargs``,
    ``ray_kwargs.ray_init``) or read by verl's dataclasses without a YAML entry
    (``fsdp_config.mixed_precision``). :func:`fsdpcfg.check.compose_for_check` composes again with ``+`` so that
    the other rules still run, and records the override in ``composed.plus_needed``. A key of another
    engine's sections is FC113's. Source: Hydra's override grammar; docs/design.md#errors-a-person-can-act-on."""
    from fsdpcfg import verlref

    own = verlref.keys(ctx.verl_config)
    for key, text in sorted((getattr(ctx.composed, "plus_needed", None) or {}).items()):
        if key in K.verl_keys() and key not in own:
            continue  # another engine's key: FC113
        yield ctx.finding(
            "FC105",
            [key],
            f"{key} is a key fsdpcfg/verl define, but no file of the config sets "
            "it, so `key=value` cannot override it (Hydra and verl both reject it)",
            f"add it with a plus: +{text}",
        )


@rule(
    "FC112",
    "a key verl's tree already holds is set without `+`",
    keys=(),
    example=("+recipe=qwen_grpo", "+critic.optim.lr=1e-5"),
)
def plus_refused(ctx: Context) -> Iterator[Finding]:
    """``+key=value`` for a key that verl's own composition defines (``critic.*``, ``ray_kwargs.*``, every
    engine section) fails in Hydra with "Could not append to config. An item is already at ..." -- in verl's
    ``main_ppo`` as here, whose tree starts from verl's (:mod:`fsdpcfg.compose.verl_base`). Recorded by
    :func:`fsdpcfg.check.compose_for_check` in ``composed.plus_refused`` (the other rules still run on the
    value). Source: Hydra's override grammar (``+`` appends, ``++`` forces); issue 12 (verl's key tree)."""
    for key, text in sorted((getattr(ctx.composed, "plus_refused", None) or {}).items()):
        yield ctx.finding(
            "FC112",
            [key],
            f"`{text}`: {key} is already a key of verl's config (default "
            f"{_shown_default(ctx, key)}), so `+` cannot add it (Hydra and verl both reject it)",
            f"drop the plus: {text[1:]}",
        )


def _shown_default(ctx: Context, key: str) -> str:
    from fsdpcfg import verlref

    v = verlref.defaults("ppo", resolved=False).get(key)
    return "null" if v is None else str(v)


@rule(
    "FC104",
    "required values are set",
    keys=("actor_rollout_ref.model.path", "data.train_files", "actor_rollout_ref.rollout.name"),
    example=("actor_rollout_ref.model.path=???",),
)
def missing_value(ctx: Context) -> Iterator[Finding]:
    """A required value left as ``???`` or deleted with ``~``; verl fails on it only after start-up
    (``omegaconf.errors.MissingMandatoryValue``). Source: verl 0.9.1 ``ppo_trainer.yaml`` (``???`` keys)."""
    for i in schema_report(ctx).issues:
        if i.kind == "missing":
            yield ctx.finding("FC104", [i.key], f"{i.key} {i.message}", i.fix)


@rule(
    "FC107",
    "every override of a run script can be read without running the shell",
    severity="info",
    keys=(),
    example=(),
    kinds=("ppo", "sft"),
)
def script_not_checkable(ctx: Context) -> Iterator[Finding]:
    """A verl run script's override whose value the check cannot know: a command substitution ``$(...)``, a
    variable set by neither the script nor the environment, arithmetic on such a value, a positional argument
    not given (``-- ARGS``), a variable the script sets differently in branches it cannot decide. Only the shell
    knows it, so the key it feeds is not checked (verl's default stands in). Reported by
    :func:`fsdpcfg.check.sources.check_run_script` through ``composed.script_notes`` (the other script notes
    are FC120-FC125, :mod:`fsdpcfg.rules.run_script`). Source: issue 3.1 and issue 12 item 1."""
    for f in getattr(ctx.composed, "script_notes", None) or []:
        if f.rule == "FC107":
            yield f


@rule(
    "FC106",
    "the model path can be found (offline: a folder with config.json, or a cached hub id)",
    keys=("actor_rollout_ref.model.path", "actor_rollout_ref.model.tokenizer_path", "critic.model.path"),
    example=("+recipe=qwen_grpo", "actor_rollout_ref.model.path=/tmp"),
)
def model_path(ctx: Context) -> Iterator[Finding]:
    """A folder without config.json is an error; a hub id that is not cached here or a path that does not
    exist on this machine (a cluster path checked on a laptop) cannot be inspected: info, and the rules that
    read config.json are skipped; it becomes an error at launch (:func:`fsdpcfg.schema.require_model_path`).
    A ``${fsdpcfg_latest:ROOT}`` with no checkpoint yet is FC690's (which run comes first), not this rule's.
    Source: docs/design.md#offline-inspection. The critic's model (``critic.model.path``) is
    checked the same way when the run builds a critic (verl/trainer/ppo/utils.py ``need_critic``)."""
    from fsdpcfg.rules._common import need_critic

    model_keys = ["actor_rollout_ref.model.path", "actor_rollout_ref.model.tokenizer_path"]
    if ctx.composed.kind == "ppo" and need_critic(ctx):
        model_keys += ["critic.model.path", "critic.model.tokenizer_path"]
    for key in model_keys:
        value = ctx.get(key)
        if not isinstance(value, str) or value == "???" or not value.strip():
            continue
        if pending_checkpoint_root(value) is not None:  # a run that comes first: FC690 says which
            continue
        st = model_path_status(value)
        if st.kind in ("folder", "hub_cached"):
            continue
        if st.kind == "incomplete":
            yield ctx.finding(
                "FC106",
                [key],
                f"{key}: {st.detail}",
                "point it at a Hugging Face model folder (config.json, tokenizer files, weights)",
            )
        elif st.kind == "invalid":
            yield ctx.finding(
                "FC106", [key], f"{key}: {st.detail}", "give a local folder with config.json or a hub id `org/name`"
            )
        else:
            built = _under_home(value)
            fix = (
                "build it with `fsdpcfg assets build` (python -m fsdpcfg builds it when missing)"
                if built
                else f"download it or point the path at a local copy before launch; offline runs use {OFFLINE_OPTION}"
            )
            yield ctx.finding(
                "FC106",
                [key],
                f"{key}: {st.detail}; it cannot be inspected here, so the checks "
                "that read config.json were skipped (launch fails if it is still unreachable)",
                fix,
                severity="info",
            )


def _under_home(value: str) -> bool:
    try:
        Path(value).expanduser().resolve().relative_to(paths.home_dir().resolve())
        return True
    except (ValueError, OSError):
        return False
