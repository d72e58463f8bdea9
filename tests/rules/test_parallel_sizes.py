"""FC302 on every engine's parallel sizes (FSDP Ulysses, veomni Ulysses, Megatron TP x PP x CP; the RL tree and the
SFT tree): a size below 1 or null is an error naming the key and the value, not a silent 1; a product that does not
divide the world is an error; a key the config does not hold reads as verl's default; and every key a finding
judged on these sizes names is a key of the tree being judged."""

from __future__ import annotations

import pytest
from rule_helpers import MODELS

from fsdpcfg import verlref
from fsdpcfg.check import check_overrides as check
from fsdpcfg.compose import compose
from fsdpcfg.rules._common import data_parallel, engine_sizes, roles
from fsdpcfg.rules.context import Context

A = "actor_rollout_ref"
M = f"{A}.actor.megatron"
#: GRPO on verl with 8 GPUs that passes on the fsdp, megatron and veomni engines: 8 prompts x n, micro batches of 1
GPU8 = [
    "+recipe=qwen_grpo",
    "launcher=verl",
    "rollout=vllm",
    "trainer=gpu_8x",
    "data.train_batch_size=8",
    f"{A}.actor.ppo_micro_batch_size_per_gpu=1",
    f"{A}.rollout.log_prob_micro_batch_size_per_gpu=1",
    f"{A}.ref.log_prob_micro_batch_size_per_gpu=1",
    f"{A}.rollout.tensor_model_parallel_size=1",
]
SFT8 = ["+recipe=qwen_sft", "launcher=verl", "trainer=gpu_8x", "data.train_batch_size=32"]


def _errors(findings):
    return [f for f in findings if f.severity == "error"]


@pytest.mark.parametrize("engine", ["fsdp", "megatron", "veomni"])
def test_the_base_passes_on_each_engine(engine):
    assert not _errors(check([*GPU8, f"engine={engine}"]))


@pytest.mark.parametrize(
    "overrides, key, value, why",
    [
        (
            ["engine=veomni", f"{A}.actor.veomni.ulysses_parallel_size=0"],
            f"{A}.actor.veomni.ulysses_parallel_size",
            "0",
            "verl's veomni engine takes world // ulysses_parallel_size data-parallel ranks (verl/workers/engine/"
            "veomni/transformer_impl.py VeOmniEngine.__init__): 0 divides by zero (ZeroDivisionError)",
        ),
        (
            ["engine=megatron", f"{M}.tensor_model_parallel_size=0"],
            f"{M}.tensor_model_parallel_size",
            "0",
            "verl's Megatron engine takes world // (tensor x pipeline x context) data-parallel ranks",
        ),
        (
            ["engine=megatron", f"{M}.context_parallel_size=-1"],
            f"{M}.context_parallel_size",
            "-1",
            "-1 gives 8 // -1 = -8 data-parallel ranks",
        ),
        (
            ["engine=megatron", f"{M}.pipeline_model_parallel_size=null"],
            f"{M}.pipeline_model_parallel_size",
            "null",
            "verl's McoreEngineConfig field is an int",
        ),
        (
            [f"{A}.actor.fsdp_config.ulysses_sequence_parallel_size=0"],
            f"{A}.actor.fsdp_config.ulysses_sequence_parallel_size",
            "0",
            "verl's FSDP engine takes world // ulysses data-parallel ranks (verl/workers/engine/fsdp/"
            "transformer_impl.py get_data_parallel_size): 0 divides by zero",
        ),
        (
            [f"{A}.actor.fsdp_config.ulysses_sequence_parallel_size=-2"],
            f"{A}.actor.fsdp_config.ulysses_sequence_parallel_size",
            "-2",
            "-2 gives 8 // -2 = -4 data-parallel ranks",
        ),
    ],
)
def test_a_size_below_one_is_fc302_naming_the_key_and_the_value(overrides, key, value, why):
    errs = _errors(check([*GPU8, *overrides]))
    # one finding: not a silent size of 1, no batch rule judging a made-up data-parallel size, and the reference's
    # copy of the actor's size (${oc.select:actor_rollout_ref.actor.megatron.*,1}) is not reported twice
    assert [(f.rule, f.keys) for f in errs] == [("FC302", [key])], [f"{f.rule} {f.message}" for f in errs]
    f = errs[0]
    assert f.message.startswith(f"actor: {key} = {value} (from command line `")
    assert "is not a parallel size (a whole number >= 1)" in f.message and why in f.message
    assert f.fix.startswith(f"set {key} to a whole number >= 1: one of [1, 2, 4, 8]")


def test_a_negative_megatron_size_counts_the_other_sizes():
    ov = [*GPU8, "engine=megatron", f"{M}.tensor_model_parallel_size=2", f"{M}.context_parallel_size=-1"]
    [f] = _errors(check(ov))
    assert (f.rule, f.keys) == ("FC302", [f"{M}.context_parallel_size"])
    assert f.message.endswith("-1 gives 8 // -2 = -4 data-parallel ranks")
    assert f.fix.startswith(f"set {M}.context_parallel_size to a whole number >= 1: one of [1, 2, 4]")


def test_the_deprecated_top_level_ulysses_size_is_the_schemas_to_judge():
    # actor.ulysses_sequence_parallel_size is a schema field (ge=1): FC103 reports 0, FC302 does not repeat it
    errs = _errors(check([*GPU8, f"{A}.actor.ulysses_sequence_parallel_size=0"]))
    assert [(f.rule, f.keys[0]) for f in errs] == [("FC103", f"{A}.actor.ulysses_sequence_parallel_size")]


def test_the_engine_key_is_judged_only_when_verl_reads_it():
    # FSDPActorConfig copies actor.ulysses_sequence_parallel_size (2) over fsdp_config's (0): verl runs Ulysses 2
    ok = [*GPU8, "patches=remove_padding", f"{A}.actor.ulysses_sequence_parallel_size=2"]
    assert not _errors(check([*ok, f"{A}.actor.fsdp_config.ulysses_sequence_parallel_size=0"]))


@pytest.mark.parametrize("dynamic", [False, True])
def test_a_megatron_product_that_does_not_divide_the_world_is_fc302(dynamic):
    # with dynamic batch size verl's validate_config skips its assertion; Megatron-core still raises at start-up
    extra = [f"{A}.actor.use_dynamic_bsz=true"] if dynamic else []
    errs = _errors(check([*GPU8, "engine=megatron", f"{M}.tensor_model_parallel_size=3", *extra]))
    assert [(f.rule, f.keys) for f in errs] == [
        (
            "FC302",
            [
                f"{M}.tensor_model_parallel_size",
                f"{M}.pipeline_model_parallel_size",
                f"{M}.context_parallel_size",
                "trainer.n_gpus_per_node",
                "trainer.nnodes",
            ],
        )
    ], [f"{f.rule} {f.message}" for f in errs]
    f = errs[0]
    assert f.message.startswith(
        f"actor: {M}.tensor_model_parallel_size = 3 x {M}.pipeline_model_parallel_size = 1 x "
        f"{M}.context_parallel_size = 1 = 3 ranks does not divide the 8 ranks: Megatron-core's "
        "initialize_model_parallel raises"
    )
    # only the tensor size can be changed alone (pipeline 1 x context 1 divide 8; tensor 3 times anything does not)
    assert f.fix == f"set {M}.tensor_model_parallel_size to one of [1, 2, 4, 8], or run on a multiple of 3 ranks"
    # tensor 2 x pipeline 2 x context 2 = 8 divides the 8 ranks
    mp = [f"{M}.tensor_model_parallel_size=2", f"{M}.pipeline_model_parallel_size=2", f"{M}.context_parallel_size=2"]
    assert not [f for f in check([*GPU8, "engine=megatron", *mp]) if f.rule == "FC302"]


def test_a_veomni_ulysses_size_that_does_not_divide_the_world_is_fc302():
    errs = _errors(check([*GPU8, "engine=veomni", f"{A}.actor.veomni.ulysses_parallel_size=3"]))
    assert [(f.rule, f.keys[0]) for f in errs] == [("FC302", f"{A}.actor.veomni.ulysses_parallel_size")]
    assert "= 3 does not divide the 8 ranks: VeOmni's ParallelState raises" in errs[0].message


def test_fsdp_ulysses_that_does_not_divide_the_world_names_the_key_verl_reads():
    # the size came from fsdp_config (the deprecated top-level key is 1): the finding names fsdp_config's key
    errs = _errors(check([*GPU8, "patches=remove_padding", f"{A}.actor.fsdp_config.ulysses_sequence_parallel_size=3"]))
    key = f"{A}.actor.fsdp_config.ulysses_sequence_parallel_size"
    assert ("FC302", [key, "trainer.n_gpus_per_node", "trainer.nnodes"]) in [(f.rule, f.keys) for f in errs]


def test_an_absent_size_reads_as_verls_default():
    # ~key deletes the override: verl's default (1) applies, nothing to report, the data-parallel group is 8 / 2
    ov = [*GPU8, "engine=megatron", f"{M}.tensor_model_parallel_size=2", f"~{M}.context_parallel_size"]
    c = compose(ov)
    ctx = Context(c, c.to_container())
    assert "context_parallel_size" not in ctx.cfg[A]["actor"]["megatron"]
    assert not _errors(check(ov))
    got = data_parallel(ctx, f"{A}.actor")
    assert got is not None and got.size == 4
    assert got.derivation == "4 data-parallel ranks = 8 ranks / (tensor 2 x pipeline 1 x context 1 parallel)"


def test_a_size_the_check_cannot_know_is_not_guessed():
    ctx = Context(
        None,  # type: ignore[arg-type]
        {
            "trainer": {"nnodes": 1, "n_gpus_per_node": 8},
            A: {"actor": {"strategy": "megatron", "megatron": {"tensor_model_parallel_size": "$TP"}}},
        },
    )
    assert data_parallel(ctx, f"{A}.actor") is None


@pytest.mark.parametrize(
    "overrides, key, text",
    [
        (
            ["engine=megatron", "engine.tensor_model_parallel_size=0"],
            "engine.tensor_model_parallel_size",
            "SFT engine: engine.tensor_model_parallel_size = 0 (from command line",
        ),
        (
            ["engine=veomni", "engine.ulysses_parallel_size=-1"],
            "engine.ulysses_parallel_size",
            "SFT engine: engine.ulysses_parallel_size = -1 (from command line",
        ),
        (
            ["engine.ulysses_sequence_parallel_size=3"],
            "engine.ulysses_sequence_parallel_size",
            "SFT engine: engine.ulysses_sequence_parallel_size = 3 does not divide the 8 ranks",
        ),
        (
            ["engine=megatron", "engine.context_parallel_size=3"],
            "engine.tensor_model_parallel_size",
            "engine.context_parallel_size = 3 = 3 ranks does not divide the 8 ranks",
        ),
    ],
)
def test_sft_parallel_sizes_are_fc302_on_the_sft_keys(overrides, key, text):
    errs = _errors(check([*SFT8, *overrides]))
    assert [(f.rule, f.keys[0]) for f in errs] == [("FC302", key)], [f"{f.rule} {f.message}" for f in errs]
    assert text in errs[0].message


def test_sft_ulysses_zero_is_the_sft_schemas():
    errs = _errors(check([*SFT8, "engine.ulysses_sequence_parallel_size=0"]))
    assert [(f.rule, f.keys) for f in errs] == [("FC150", ["engine.ulysses_sequence_parallel_size"])]


def _keys_of_tree(comp: str) -> frozenset[str]:
    """Keys of verl's composition ``comp`` and of fsdpcfg's schemas: the keys a finding may name."""
    from fsdpcfg.rules.sft_rules import _schema_defaults
    from fsdpcfg.schema.keys import schema_keys

    return verlref.keys(comp) | (frozenset(_schema_defaults()) if comp.startswith("sft") else schema_keys())


@pytest.mark.parametrize(
    "overrides",
    [
        ["data.train_batch_size=6"],
        ["launcher=verl", "engine=fsdp2", "data.train_batch_size=6"],
        ["launcher=verl", "trainer=gpu_8x", "engine=megatron", "data.micro_batch_size_per_gpu=8"],
    ],
)
def test_sft_batch_split_findings_name_keys_of_the_sft_tree(overrides):
    [f] = [f for f in check(["+recipe=qwen_sft", *overrides]) if f.rule == "FC250"]
    c = compose(["+recipe=qwen_sft", *overrides])
    comp = Context(c, c.to_container()).verl_config
    assert set(f.keys) <= _keys_of_tree(comp), set(f.keys) - _keys_of_tree(comp)
    assert not [k for k in f.keys if "fsdp_config" in k]
    assert ("engine.tensor_model_parallel_size" in f.keys) == ("engine=megatron" in overrides)
    assert ("engine.ulysses_sequence_parallel_size" in f.keys) == ("engine=megatron" not in overrides)


@pytest.mark.parametrize("engine", ["fsdp", "fsdp2", "megatron", "veomni"])
def test_rl_data_parallel_and_sequence_parallel_keys_are_keys_of_the_rl_tree(engine):
    # every role verl builds (actor, old log-prob, reference, critic): the keys data_parallel and the roles name
    qwen = str(MODELS / "qwen2_5_0_5b_instruct")
    ov = [*GPU8, f"engine={engine}", "algorithm.adv_estimator=gae", f"critic.model.path={qwen}"]
    c = compose([*ov, "critic.optim.lr=1e-5", "critic.ppo_micro_batch_size_per_gpu=1"])
    ctx = Context(c, c.to_container())
    allowed = _keys_of_tree(ctx.verl_config)
    rs = roles(ctx)
    assert {r.section for r in rs} == {f"{A}.actor", f"{A}.ref", "critic"}
    for r in rs:
        group = data_parallel(ctx, r.section)
        assert group is not None and group.size == 8, (r.name, group)
        sizes = engine_sizes(ctx, r.section)
        assert sizes is not None
        named = {*group.keys, *r.sp_keys, *(s.key for s in sizes[1])}
        assert named <= allowed, (r.name, named - allowed)
