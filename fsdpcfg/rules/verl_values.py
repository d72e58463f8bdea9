"""FC180-FC182, FC680: checks verl makes on config values after start-up (in a config dataclass's
``__post_init__``, in the trainer, or in a loss function at the first step), made here before launch.

Found by ``docs/verl-coverage.md`` (the checks of the installed verl that no other rule caught); each entry
names its verl source. Values are read with verl's defaults (:func:`fsdpcfg.rules._common.val`), so a key
absent from the config is checked at verl's default.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from fsdpcfg.rules._common import A, data_parallel, flag, need_critic, num, val, world_derivation
from fsdpcfg.rules.context import Context
from fsdpcfg.rules.finding import Finding
from fsdpcfg.rules.registry import rule

R = f"{A}.rollout"
PL = f"{A}.actor.policy_loss"
HR = "trainer.v1.separate_async.hybrid_rollout"
D = "distillation"
TM = f"{D}.teacher_models"
NUMBER = (int, float)


def _number(x: Any) -> bool:
    return isinstance(x, NUMBER) and not isinstance(x, bool)


@dataclass(frozen=True)
class Limit:
    """One value verl restricts.

    Attributes:
        key: the dotted key.
        ok: the test the value must pass (``None`` and non-numbers reach ``ok`` only where allowed).
        need: what verl requires, in words (``in (0, 1]``).
        source: the verl file and function that raise.
        when: the config in which verl runs the check (default: always).
        role: ``critic`` when the key applies only when the critic runs.
        kind: the config kind (``ppo`` or ``sft``) the key belongs to.
    """

    key: str
    ok: Callable[[Any], bool]
    need: str
    source: str
    when: Callable[[Context], bool] = lambda ctx: True
    role: str | None = None
    kind: str = "ppo"


def _one_of(*names: Any) -> Callable[[Any], bool]:
    return lambda v: v in names


def _positive(v: Any) -> bool:
    return _number(v) and v > 0


#: verl's compositions whose engine builds the LR scheduler with ``lr_warmup_steps <= 0`` unguarded (FSDP,
#: automodel); its Megatron and torchtitan engines test ``is None`` first and veomni reads only the ratio.
WARMUP_COMPARED = frozenset({"ppo_trainer", "sft_trainer_engine", "sft_automodel_trainer"})


def _engine_compares_warmup(ctx: Context) -> bool:
    """verl runs it (``launcher=verl``; the native trainer reads null as the ratio, as verl's dataclass documents)
    on an engine that compares ``lr_warmup_steps`` with 0 (:data:`WARMUP_COMPARED`)."""
    return ctx.launcher == "verl" and ctx.verl_config in WARMUP_COMPARED


def _profile_interval(v: Any) -> bool:
    """verl/trainer/sft_trainer.py ``_validate_profiler_interval``: ``[start, end]``, end >= start, and a
    negative start (off) with a negative end."""
    if not isinstance(v, (list, tuple)) or len(v) != 2 or not all(_number(x) for x in v):
        return False
    start, end = v
    return end >= start and (start >= 0 or end < 0)


#: The values of FC180, in verl's order of checking.
LIMITS: tuple[Limit, ...] = (
    *(
        Limit(
            f"{sec}.optim.warmup_style",
            _one_of(None, "constant", "cosine"),
            "null, constant or cosine",
            "verl/workers/config/optimizer.py FSDPOptimizerConfig.__post_init__",
            role=role,
        )
        for sec, role in ((f"{A}.actor", None), ("critic", "critic"))
    ),
    Limit(
        "critic.optim.lr_scheduler_type",
        _one_of("constant", "cosine"),
        "constant or cosine",
        "verl/workers/config/optimizer.py FSDPOptimizerConfig.__post_init__; "
        "verl/workers/engine/fsdp/transformer_impl.py FSDPEngine._build_lr_scheduler",
        role="critic",
    ),
    Limit(
        f"{R}.trace.max_samples_per_step_per_worker",
        lambda v: v is None or (_number(v) and v >= 0),
        "null or a non-negative integer",
        "verl/workers/config/rollout.py TraceConfig.__post_init__",
    ),
    Limit(
        f"{HR}.switch_threshold_ratio",
        lambda v: _number(v) and 0.0 < v <= 1.0,
        "in (0, 1]",
        "verl/trainer/config/config.py HybridRolloutSwitchConfig.__post_init__",
    ),
    Limit(
        f"{HR}.switch_cost_window_size",
        _positive,
        "a positive integer",
        "verl/trainer/config/config.py HybridRolloutSwitchConfig.__post_init__",
    ),
    Limit(
        "algorithm.kl_ctrl.type",
        _one_of("fixed", "adaptive"),
        "fixed or adaptive",
        "verl/trainer/ppo/core_algos.py get_kl_controller (NotImplementedError)",
        when=lambda ctx: flag(val(ctx, "algorithm.use_kl_in_reward")),
    ),
    Limit(
        "algorithm.kl_ctrl.horizon",
        _positive,
        "> 0 with kl_ctrl.type=adaptive",
        "verl/trainer/ppo/core_algos.py get_kl_controller",
        when=lambda ctx: (
            flag(val(ctx, "algorithm.use_kl_in_reward")) and val(ctx, "algorithm.kl_ctrl.type") == "adaptive"
        ),
    ),
    Limit(
        f"{PL}.clip_cov_ratio",
        _positive,
        "> 0 with policy_loss.loss_mode=clip_cov",
        "verl/trainer/ppo/core_algos.py compute_policy_loss_clip_cov",
        when=lambda ctx: val(ctx, f"{PL}.loss_mode") == "clip_cov",
    ),
    Limit(
        f"{PL}.kl_cov_ratio",
        _positive,
        "> 0 with policy_loss.loss_mode=kl_cov",
        "verl/trainer/ppo/core_algos.py compute_policy_loss_kl_cov",
        when=lambda ctx: val(ctx, f"{PL}.loss_mode") == "kl_cov",
    ),
    Limit(
        "algorithm.pf_ppo.reweight_method",
        _one_of("pow", "max_min", "max_random"),
        "pow, max_min or max_random",
        "verl/trainer/ppo/core_algos.py compute_pf_ppo_reweight_data",
        when=lambda ctx: flag(val(ctx, "algorithm.use_pf_ppo")),
    ),
    Limit(
        "algorithm.rollout_correction.loss_type",
        _one_of("reinforce", "ppo_clip"),
        "reinforce or ppo_clip",
        "verl/trainer/ppo/core_algos.py compute_policy_loss_bypass_mode",
        when=lambda ctx: val(ctx, f"{PL}.loss_mode") == "bypass_mode",
    ),
    Limit(
        f"{R}.disaggregation.enabled",
        lambda v: not flag(v),
        "false unless rollout.name is sglang or vllm",
        "verl/workers/config/rollout.py RolloutConfig.__post_init__",
        when=lambda ctx: val(ctx, f"{R}.name") not in ("sglang", "vllm"),
    ),
    *(
        Limit(
            f"{sec}optim.lr_warmup_steps",
            lambda v: v is not None,
            "an integer, not null, with the FSDP and automodel engines (-1: warmup from lr_warmup_steps_ratio)",
            "verl/workers/engine/{fsdp,automodel}/transformer_impl.py _build_lr_scheduler: `None <= 0`",
            when=_engine_compares_warmup,
            role=role,
            kind=kind,
        )
        for sec, role, kind in ((f"{A}.actor.", None, "ppo"), ("critic.", "critic", "ppo"), ("", None, "sft"))
    ),
    Limit(
        "trainer.profile_interval",
        _profile_interval,
        "[start, end] with end >= start ([-1, -1]: off)",
        "verl/trainer/sft_trainer.py SFTTrainer._validate_profiler_interval",
        kind="sft",
    ),
)


def _shown(v: Any) -> str:
    return "null" if v is None else repr(v) if isinstance(v, str) else str(v)


@rule(
    "FC180",
    "values verl's config classes and loss functions restrict (names and ranges)",
    keys=[lim.key for lim in LIMITS],
    example=["launcher=verl", "++trainer.v1.separate_async.hybrid_rollout.switch_threshold_ratio=1.5"],
    kinds=("ppo", "sft"),
)
def verl_limits(ctx: Context) -> Iterable[Finding]:
    """Each value of :data:`LIMITS` must pass verl's own test, where verl runs it: the optimizer's
    ``warmup_style``, the critic's ``lr_scheduler_type``, ``rollout.trace.max_samples_per_step_per_worker``, the
    hybrid-rollout switch, the KL controller (with ``use_kl_in_reward``), the clip-cov/KL-cov ratios, the PF-PPO
    reweighting, the bypass-mode loss type, rollout disaggregation, the SFT trainer's ``trainer.profile_interval``
    and a null ``optim.lr_warmup_steps`` (verl's dataclass takes it; its FSDP and automodel engines compare it with
    0 when they build the scheduler). verl raises on each in a
    ``__post_init__`` when the workers build their configs, or at the first step in the loss function.

    Source: each entry's ``source`` (verl/workers/config/optimizer.py, rollout.py, verl/trainer/config/config.py,
    verl/trainer/ppo/core_algos.py); docs/verl-coverage.md.
    """
    kind = str(ctx.get("fsdpcfg.kind", "ppo"))
    for lim in LIMITS:
        if lim.kind != kind or lim.role == "critic" and not need_critic(ctx):
            continue
        if not lim.when(ctx) or lim.kind == "sft" and not ctx.is_set(lim.key):
            continue  # (the context's defaults are ppo_trainer's: an SFT key is checked when the config sets it)
        v = val(ctx, lim.key)
        if not lim.ok(v):
            yield ctx.finding(
                "FC180",
                [lim.key],
                f"{lim.key} = {_shown(v)}; verl requires {lim.need} ({lim.source} raises after start-up)",
                f"set {lim.key} to {lim.need}",
            )


#: Reward managers verl 0.9.1 registers (verl/experimental/reward_loop/reward_manager/*.py ``@register``);
#: tests/catalog/test_verl_coverage.py keeps it equal to the installed verl's.
REWARD_MANAGERS = ("dapo", "gdpo", "naive", "remote")
#: Agent loops verl 0.9.1 registers (verl/experimental/agent_loop/*.py ``@register``).
AGENT_LOOPS = ("single_turn_agent", "tool_agent")
RM = "reward.reward_manager"
AGENT = f"{R}.agent.default_agent_loop"


@rule(
    "FC181",
    "the reward manager and agent loop are ones verl registers",
    keys=[f"{RM}.name", f"{RM}.source", f"{RM}.module.path", AGENT],
    example=["reward.reward_manager.name=nave"],
)
def registered_names(ctx: Context) -> Iterable[Finding]:
    """``reward.reward_manager.name`` must be a registered manager when ``source=register``, and
    ``reward.reward_manager.module.path`` must be set when ``source=importlib``; the rollout's default agent loop
    must be a registered one (a custom loop comes with ``agent.agent_loop_config_path``, not checked here).

    Source: verl/workers/config/reward.py ``RewardManagerConfig.__post_init__`` ("Reward manager is not
    registered", "module.path should be set"); verl/trainer/ppo/reward.py ``resolve_reward_manager_cls``;
    verl/experimental/agent_loop/agent_loop.py (``_agent_loop_registry`` lookup).
    """
    source, name = val(ctx, f"{RM}.source"), val(ctx, f"{RM}.name")
    if source == "register" and isinstance(name, str) and name not in REWARD_MANAGERS:
        yield ctx.finding(
            "FC181",
            [f"{RM}.name"],
            f"{RM}.name = {name!r} is not a reward manager verl registers",
            f"use one of: {', '.join(REWARD_MANAGERS)}, or {RM}.source=importlib with "
            f"{RM}.module.path pointing at your class's file",
        )
    if source == "importlib" and not val(ctx, f"{RM}.module.path"):
        yield ctx.finding(
            "FC181",
            [f"{RM}.module.path", f"{RM}.source"],
            f"{RM}.source = importlib but {RM}.module.path is not set (RewardManagerConfig asserts it)",
            f"set {RM}.module.path to the file defining {RM}.name",
        )
    loop = val(ctx, AGENT)
    if isinstance(loop, str) and loop not in AGENT_LOOPS and not val(ctx, f"{R}.agent.agent_loop_config_path"):
        yield ctx.finding(
            "FC181",
            [AGENT],
            f"{AGENT} = {loop!r} is not an agent loop verl registers",
            f"use one of: {', '.join(AGENT_LOOPS)}, or register yours through {R}.agent.agent_loop_config_path",
        )


MISSING = "???"


def _missing_leaves(tree: Any) -> Iterable[str]:
    from fsdpcfg import keypath

    return (k for k, v in keypath.flatten(tree).items() if v == MISSING)


@rule(
    "FC183",
    "no required value (???) is left in a section verl builds",
    keys=["critic.rollout_n", "critic.optim.lr"],
    example=["launcher=verl", "algorithm.adv_estimator=gae", "++critic.rollout_n=???"],
)
def missing_in_verl_sections(ctx: Context) -> Iterable[Finding]:
    """verl builds each role's section into a dataclass whose ``__post_init__`` asserts that no field is
    ``???`` (``strategy``, ``optim.lr``, ``rollout_n``); a ``???`` there fails when the workers start. FC104 reports
    the keys fsdpcfg's schema knows; this rule the rest, in the sections verl builds (the critic when it runs, the
    reward model and distillation when enabled: ``reward.reward_model.rollout.name`` is ``???`` in verl's own
    defaults and never read while the reward model is off).

    Source: verl/workers/config/actor.py ``ActorConfig.__post_init__``, critic.py ``CriticConfig.__post_init__``,
    optimizer.py ``OptimizerConfig.__post_init__`` (``assert ... != MISSING``).
    """
    from fsdpcfg.rules.schema_rules import schema_report

    known = {i.key for i in schema_report(ctx).issues if i.kind == "missing"}
    # sections verl builds only when they are switched on (reward.reward_model.rollout.name is ??? by default)
    off = {
        "critic.": need_critic(ctx),
        "reward.reward_model.": flag(val(ctx, "reward.reward_model.enable")),
        "reward_model.": flag(val(ctx, "reward_model.enable")),
        f"{D}.": flag(val(ctx, f"{D}.enabled")),
    }
    skip = tuple(prefix for prefix, on in off.items() if not on)
    for key in _missing_leaves(ctx.cfg):
        if key in known or key.startswith(skip) or key.startswith("fsdpcfg."):
            continue
        yield ctx.finding(
            "FC183",
            [key],
            f"{key} is ??? (a required value left unset); verl asserts it is set when it builds the section",
            f"set {key}",
        )


T = "trainer"


@rule(
    "FC182",
    "trainer start-up settings verl asserts (hybrid engine, resume path, HDFS resume)",
    keys=[f"{A}.hybrid_engine", f"{T}.resume_mode", f"{T}.resume_from_path", f"{T}.default_hdfs_dir"],
    example=["launcher=verl", "trainer.resume_mode=resume_path"],
)
def trainer_startup(ctx: Context) -> Iterable[Finding]:
    """verl's PPO trainer runs only the hybrid engine; ``resume_mode=resume_path`` needs ``resume_from_path``
    naming a ``global_step_N`` folder; any resume with ``default_hdfs_dir`` set raises "load from hdfs is not
    implemented yet". Each fails after the workers are up (minutes of GPU start-up).

    Source: verl/trainer/ppo/ray_trainer.py ``RayPPOTrainer.__init__`` ("only support hybrid engine"),
    ``init_workers``, ``_load_checkpoint``.
    """
    if ctx.launcher != "verl":
        return  # the native launcher has its own resume checks (fsdpcfg/native/ckpt_layout.py)
    if not flag(val(ctx, f"{A}.hybrid_engine")):
        yield ctx.finding(
            "FC182",
            [f"{A}.hybrid_engine"],
            f"{A}.hybrid_engine = false; verl 0.9.1's PPO trainer supports the hybrid engine only",
            f"set {A}.hybrid_engine=true",
        )
    mode = val(ctx, f"{T}.resume_mode")
    path = val(ctx, f"{T}.resume_from_path")
    if mode == "resume_path" and not (isinstance(path, str) and "global_step_" in path):
        yield ctx.finding(
            "FC182",
            [f"{T}.resume_from_path", f"{T}.resume_mode"],
            f"{T}.resume_mode = resume_path but {T}.resume_from_path = {_shown(path)}: verl asserts a "
            "path naming the step folder",
            f"set {T}.resume_from_path=CKPT_DIR/global_step_N, or {T}.resume_mode=auto",
        )
    if mode != "disable" and val(ctx, f"{T}.default_hdfs_dir") is not None:
        yield ctx.finding(
            "FC182",
            [f"{T}.default_hdfs_dir", f"{T}.resume_mode"],
            f"{T}.default_hdfs_dir is set and {T}.resume_mode = {mode}: verl raises 'load from hdfs is "
            "not implemented yet' when it looks for a checkpoint",
            f"set {T}.resume_mode=disable, or unset {T}.default_hdfs_dir",
        )


@rule(
    "FC680",
    "GDPO needs algorithm.gdpo_reward_keys",
    keys=["algorithm.adv_estimator", "algorithm.gdpo_reward_keys"],
    example=["algorithm.adv_estimator=gdpo"],
)
def gdpo_keys(ctx: Context) -> Iterable[Finding]:
    """The GDPO estimator normalises each reward component separately: it asserts a non-empty
    ``algorithm.gdpo_reward_keys`` (the keys the reward function returns) at the first advantage computation.

    Source: verl/trainer/ppo/core_algos.py ``compute_gdpo_outcome_advantage`` ("GDPO requires
    'algorithm.gdpo_reward_keys'").
    """
    if val(ctx, "algorithm.adv_estimator") == "gdpo" and not ctx.get("algorithm.gdpo_reward_keys"):
        yield ctx.finding(
            "FC680",
            ["algorithm.gdpo_reward_keys", "algorithm.adv_estimator"],
            "algorithm.adv_estimator = gdpo but algorithm.gdpo_reward_keys is not set",
            "add +algorithm.gdpo_reward_keys=[format_reward,accuracy_reward] (the keys your "
            "compute_score returns), or use algorithm.adv_estimator=grpo",
        )


OTB = ("optimal_token_baseline", "tir_optimal_token_baseline")
PI2 = f"{A}.actor.calculate_sum_pi_squared"


@rule(
    "FC681",
    "optimal-token-baseline estimators need actor.calculate_sum_pi_squared, without fused kernels",
    keys=["algorithm.adv_estimator", PI2, f"{A}.model.use_fused_kernels"],
    example=["algorithm.adv_estimator=optimal_token_baseline"],
)
def optimal_token_baseline(ctx: Context) -> Iterable[Finding]:
    """The optimal-token-baseline estimators read ``sum_pi_squared`` from the actor's forward pass, which the
    actor computes only with ``actor.calculate_sum_pi_squared=true``; that output needs the full logits, so fused
    kernels (``model.use_fused_kernels``) cannot give it. verl asserts both at the first step.

    Source: verl/trainer/ppo/ray_trainer.py ``compute_advantage`` ("requires sum_pi_squared from actor");
    verl/workers/engine/fsdp/transformer_impl.py ``FSDPEngineWithLMHead.prepare_model_outputs``
    ("calculate_sum_pi_squared=True is not supported with use_fused_kernels=True").
    """
    est = val(ctx, "algorithm.adv_estimator")
    on = flag(val(ctx, PI2))
    fused = flag(val(ctx, f"{A}.model.use_fused_kernels"))
    if est in OTB and not on:
        yield ctx.finding(
            "FC681",
            ["algorithm.adv_estimator", PI2],
            f"algorithm.adv_estimator = {est} needs {PI2}=true (the estimator reads sum_pi_squared from the actor)",
            f"set {PI2}=true",
        )
    if on and fused:
        yield ctx.finding(
            "FC681",
            [PI2, f"{A}.model.use_fused_kernels"],
            f"{PI2}=true with {A}.model.use_fused_kernels=true: fused kernels do not materialise the logits it needs",
            f"set {A}.model.use_fused_kernels=false",
        )


@rule(
    "FC280",
    "PrefixGrouper with balance_batch: prompts per step divisible by the actor's data-parallel ranks",
    keys=["data.train_batch_size", f"{A}.actor.use_prefix_grouper", "trainer.balance_batch"],
    example=[
        "launcher=verl",
        "rollout=vllm",
        "trainer=gpu_8x",
        "data.train_batch_size=12",
        "actor_rollout_ref.actor.ppo_mini_batch_size=4",
        "actor_rollout_ref.actor.use_prefix_grouper=true",
    ],
)
def prefix_grouper_balance(ctx: Context) -> Iterable[Finding]:
    """With ``actor.use_prefix_grouper`` and ``trainer.balance_batch`` verl balances whole prompt groups (one per
    ``uid``, ``data.train_batch_size`` of them) over the actor's data-parallel ranks (world / Ulysses size) and
    raises when they do not split evenly, at the first step.

    Source: verl/trainer/ppo/ray_trainer.py ``RayPPOTrainer._balance_batch`` ("PrefixGrouper with balance_batch
    requires num_uid_groups % dp_size == 0").
    """
    if not (flag(val(ctx, f"{A}.actor.use_prefix_grouper")) and flag(val(ctx, "trainer.balance_batch"))):
        return
    group, tbs = data_parallel(ctx, f"{A}.actor"), num(val(ctx, "data.train_batch_size"))
    if group is None or not tbs:
        return
    dp = group.size
    if tbs % dp:
        yield ctx.finding(
            "FC280",
            ["data.train_batch_size", f"{A}.actor.use_prefix_grouper", *group.keys],
            f"data.train_batch_size = {tbs} prompt groups do not split over {dp} data-parallel ranks "
            f"({group.derivation}; {world_derivation(ctx)})",
            f"set data.train_batch_size to a multiple of {dp}, or trainer.balance_batch=false",
        )


def _teachers(ctx: Context) -> list[str]:
    """Names of the teacher entries: verl's default ``teacher_model`` and any added under ``teacher_models``."""
    node = ctx.cfg.get(D, {}).get("teacher_models") if isinstance(ctx.cfg.get(D), dict) else None
    names = list(node) if isinstance(node, dict) else []
    return ["teacher_model", *[n for n in names if n != "teacher_model"]]


def _replica(ctx: Context, name: str) -> int | None:
    """GPUs of one replica of teacher ``name``: inference TP x DP x PP (an unset size is 1, RolloutConfig's
    default); ``None`` when a size is not a whole number."""
    sizes: list[int] = []
    for k in ("tensor_model", "data", "pipeline_model"):
        raw = val(ctx, f"{TM}.{name}.inference.{k}_parallel_size")
        s = 1 if raw is None else num(raw)
        if s is None or s < 1:
            return None
        sizes.append(s)
    return sizes[0] * sizes[1] * sizes[2]


@rule(
    "FC682",
    "on-policy distillation: loss settings, teacher entries and the teacher pool size",
    keys=[
        f"{D}.enabled",
        f"{D}.distillation_loss.policy_loss_mode",
        f"{D}.distillation_loss.loss_mode",
        f"{TM}.teacher_model.model_path",
        f"{D}.n_gpus_per_node",
        f"{D}.nnodes",
    ],
    example=["launcher=verl", "++distillation.enabled=true"],
)
def distillation(ctx: Context) -> Iterable[Finding]:
    """With ``distillation.enabled`` verl builds the teacher pool at start-up: the distillation loss must use the
    vanilla policy loss, ``k1`` needs ``use_policy_gradient``; one teacher (``teacher_model``) needs a
    ``model_path`` and a replica size (inference TP x DP x PP) dividing the pool (``distillation.n_gpus_per_node
    x distillation.nnodes``); several teachers each need ``model_path`` and a distinct ``key``, and their
    ``num_replicas x`` replica sizes must add up to the pool.

    Source: verl/workers/config/distillation.py ``DistillationLossConfig.__post_init__``,
    ``DistillationConfig.__post_init__`` / ``_resolve_teacher_models``,
    ``DistillationTeacherModelConfig.check_configured``.
    """
    if not flag(val(ctx, f"{D}.enabled")):
        return
    L = f"{D}.distillation_loss"
    if val(ctx, f"{L}.policy_loss_mode") != "vanilla":
        yield ctx.finding(
            "FC682",
            [f"{L}.policy_loss_mode"],
            f"{L}.policy_loss_mode = {_shown(val(ctx, f'{L}.policy_loss_mode'))}; verl 0.9.1 supports only vanilla",
            f"set {L}.policy_loss_mode=vanilla",
        )
    if val(ctx, f"{L}.loss_mode") == "k1" and not flag(val(ctx, f"{L}.use_policy_gradient")):
        yield ctx.finding(
            "FC682",
            [f"{L}.loss_mode", f"{L}.use_policy_gradient"],
            f"{L}.loss_mode = k1 without "
            f"{L}.use_policy_gradient: the k1 loss's gradient does not depend on the teacher",
            f"set {L}.use_policy_gradient=true, or {L}.loss_mode=k3",
        )
    g, nn = num(val(ctx, f"{D}.n_gpus_per_node")), num(val(ctx, f"{D}.nnodes"))
    pool = g * nn if g is not None and nn is not None else None
    names = _teachers(ctx)
    teachers = names if len(names) == 1 else names[1:]  # verl drops the default entry when others are added
    for name in teachers:
        if val(ctx, f"{TM}.{name}.model_path") is None:
            yield ctx.finding(
                "FC682",
                [f"{TM}.{name}.model_path"],
                f"{TM}.{name}.model_path is not set",
                f"set {TM}.{name}.model_path to the teacher checkpoint",
            )
    if len(names) == 1:
        per = _replica(ctx, "teacher_model")
        if pool is not None and per and (pool == 0 or pool % per):
            yield ctx.finding(
                "FC682",
                [f"{D}.n_gpus_per_node", f"{D}.nnodes"],
                f"the teacher pool has {pool} GPUs "
                f"({D}.n_gpus_per_node {g} x {D}.nnodes {nn}); one teacher replica needs {per} "
                "(inference TP x DP x PP), which must divide it",
                f"set {D}.nnodes / {D}.n_gpus_per_node to a non-zero multiple of {per}",
            )
        return
    keys = [val(ctx, f"{TM}.{n}.key") for n in teachers]
    for n, k in zip(teachers, keys, strict=True):
        if k is None:
            yield ctx.finding(
                "FC682",
                [f"{TM}.{n}.key"],
                f"{TM}.{n}.key is not set (several teachers are routed by {D}.teacher_key)",
                f"set {TM}.{n}.key to the data source it teaches",
            )
    dup = sorted({str(k) for k in keys if k is not None and keys.count(k) > 1})
    if dup:
        yield ctx.finding(
            "FC682",
            [f"{TM}.{teachers[0]}.key"],
            f"two teachers share the key {', '.join(dup)}",
            "give each teacher its own key",
        )
    sizes = [(num(val(ctx, f"{TM}.{n}.num_replicas")), _replica(ctx, n)) for n in teachers]
    known = [(r, p) for r, p in sizes if r is not None and p is not None]
    if pool is not None and len(known) == len(sizes):
        total = sum(r * p for r, p in known)
        if total != pool:
            yield ctx.finding(
                "FC682",
                [f"{D}.n_gpus_per_node", f"{D}.nnodes"],
                f"the teachers need {total} GPUs "
                f"(num_replicas x TP x DP x PP, summed), the pool has {pool} ({D}.n_gpus_per_node {g} "
                f"x {D}.nnodes {nn})",
                "make the pool and the teachers' replicas agree",
            )
