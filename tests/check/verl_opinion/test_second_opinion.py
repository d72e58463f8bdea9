"""verl's own validation (one call of verl's worker for the module) against fsdpcfg's check, on every case of
../shared/cases/ and on one config per check verl runs at config time.

The rule: wherever verl rejects, fsdpcfg must reject too (verl rejects + fsdpcfg accepts = an fsdpcfg bug).
Where fsdpcfg rejects and verl accepts, the case is listed in VERL_GAPS with the reason verl misses it.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import yaml

from fsdpcfg.check import check_config
from fsdpcfg.check.verl_opinion import compare
from fsdpcfg.compose import compose
from fsdpcfg.errors import ConfigError

pytestmark = [
    pytest.mark.xdist_group("verl_second_opinion"),  # one worker: the shared fixture (tests/conftest.py)
    pytest.mark.verl,
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("verl") is None, reason="verl 0.9.1 is not installed"),
]

REPO = Path(__file__).resolve().parents[3]
CASES = REPO.parent / "shared" / "cases"
MODELS = REPO.parent / "shared" / "data" / "model_configs"

#: Cases verl 0.9.1 rejects at config time (measured), with where: a change in verl shows up here.
VERL_REJECTS = {
    "C01": "validate_config: real_train_batch_size must be divisible by n_gpus",
    "C02": "validate_config -> ActorConfig.validate: train_batch_size >= ppo_mini_batch_size",
    "C05": "validate_config -> ActorConfig.__post_init__: both micro-batch forms",
    "C08": "validate_config -> FSDPActorConfig.validate: sequence parallelism needs use_remove_padding",
    "C12": "validate_config -> get_vllm_max_lora_rank: lora_rank <= 512",
    "C20": "validate_config -> FSDPActorConfig: unexpected keyword ppo_micro_batch_size_pergpu",
    "C23": "validate_config -> FSDPEngineConfig: strategy fsdp3 not supported",
}
#: Cases fsdpcfg rejects (or warns about) that verl accepts at config time: verl's gaps.
VERL_GAPS = {
    "C03": "verl never compares the micro batch with the per-rank mini batch; the loss turns NaN in the workers",
    "C04": "the per-rank mini batch rounding to 0 is found in the workers, after start-up",
    "C06": "rollout TP x DP vs the GPUs is checked when the rollout replicas are placed, on the cluster",
    "C07": "head divisibility needs the model's config.json; verl reads it in the workers",
    "C09": "verl ignores an unknown top-level section (model.*) without a word",
    "C10": "max_position_embeddings comes from config.json, read in the workers",
    "C11": "vLLM's own engine arguments are checked when the engine starts",
    "C13": "the chat template is applied by the dataset, in the workers",
    "C14": "pad-token fallback happens in the tokenizer, in the workers (warn)",
    "C15": "the wrap class is looked up when the model is wrapped, in the workers",
    "C16": "FSDP1 offload flags under FSDP2 are silently not used (warn)",
    "C17": "load_format is read by the SGLang engine at start-up",
    "C18": "GRPO with one sample per prompt is valid to verl; advantages are all 0",
    "C19": "batch-shape non-invariance of log-probs is numerical, not a config error (warn)",
    "C21": "the dynamic-bsz equality is asserted inside the workers",
    "C22": "a sequence longer than the token budget fails in the workers' packing",
    "C24": "verl still lists the legacy top-level custom_reward_function in its YAML but reads reward.*",
    "C25": "auto_set_device rewrites trainer.device=cpu to cuda silently",
}
#: One config per check verl runs at config time: verl must reject each, and so must fsdpcfg.
GPU = [
    "+recipe=qwen_grpo",
    "launcher=verl",
    "rollout=vllm",
    "trainer=gpu_1x",
    "actor_rollout_ref.rollout.tensor_model_parallel_size=1",
]
VERL_CHECKS = {
    "val do_sample needs temperature > 0": [
        "actor_rollout_ref.rollout.val_kwargs.do_sample=true",
        "actor_rollout_ref.rollout.temperature=0",
    ],
    "ref: both log-prob micro forms": ["actor_rollout_ref.ref.log_prob_micro_batch_size=8"],
    "rollout: no log-prob micro batch": ["actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=null"],
    "ref: no log-prob micro batch": ["actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=null"],
    "actor: no micro batch": ["actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=null"],
    "actor: global micro does not divide mini": [
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=null",
        "actor_rollout_ref.actor.ppo_micro_batch_size=3",
    ],
    "actor: unknown loss_agg_mode": ["actor_rollout_ref.actor.loss_agg_mode=foo"],
    "vllm: lora rank above 512": ["actor_rollout_ref.model.lora_rank=600"],
    "actor: mini batch above train batch": ["actor_rollout_ref.actor.ppo_mini_batch_size=8"],
    "megatron: tp x pp x cp does not divide the GPUs": [
        "engine=megatron",
        "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=3",
    ],
    "megatron: a parallel size of 0": [
        "engine=megatron",
        "actor_rollout_ref.actor.megatron.pipeline_model_parallel_size=0",
    ],
    "megatron: a null parallel size": [
        "engine=megatron",
        "actor_rollout_ref.actor.megatron.context_parallel_size=null",
    ],
}


def _cases() -> list[dict]:
    if not CASES.is_dir():
        return []
    return [yaml.safe_load(p.read_text()) for p in sorted(CASES.glob("c*.yaml"))]


def _overrides(case: dict) -> list[str]:
    ov = [f"+recipe={case['base']}", *case.get("overrides", [])]
    if case.get("model"):
        ov.append(f"actor_rollout_ref.model.path={MODELS / case['model']}")
    return ov


@pytest.fixture(scope="module")
def verdicts():
    """{name: (fsdpcfg findings or a composition error, verl opinion or None)}, verl asked once. verl's worker
    process is started first, so that its import of verl runs while this process composes and checks."""
    from fsdpcfg.check.verl_opinion import start_worker, verl_opinions

    start_worker()
    inputs = {c["id"]: _overrides(c) for c in _cases()}
    inputs.update({f"check: {k}": GPU + v for k, v in VERL_CHECKS.items()})
    composed, out = {}, {}
    for name, ov in inputs.items():
        try:
            composed[name] = compose(ov)
        except ConfigError as e:  # rejected while composing (verl's own command line rejects the same override)
            out[name] = (e, None)
    findings = {name: check_config(c) for name, c in composed.items()}
    ops = verl_opinions(composed.values())
    for name, op in zip(composed, ops, strict=True):
        out[name] = (findings[name], op)
    return out


def test_cases_exist():
    if not CASES.is_dir():
        pytest.skip(f"{CASES} is not here")
    assert {c["id"] for c in _cases()} <= set(VERL_REJECTS) | set(VERL_GAPS) | {"C26"}


@pytest.mark.parametrize("case", [c["id"] for c in _cases()])
def test_case_agrees_with_verl_or_is_a_documented_gap(verdicts, case):
    findings, op = verdicts[case]
    if op is None:
        # only C15 today: `wrap_policy.transformer_layer_cls_to_wrap=` is not a key of verl's YAML either, so
        # verl's command line fails the same override while composing
        assert isinstance(findings, ConfigError) and case in VERL_GAPS, findings
        return
    cmp = compare(findings, op)
    assert cmp.outcome != "fsdpcfg-bug", f"{case}: verl rejects but fsdpcfg accepts: {op.stage}: {op.error}"
    assert op.accepted == (case not in VERL_REJECTS), f"{case}: verl's verdict changed: {op.stage}: {op.error}"
    if not op.accepted:
        assert VERL_REJECTS[case].split(":")[0].split(" ->")[0] == op.stage, (case, op.stage, op.error)
    elif cmp.outcome == "verl-gap" or any(f.severity == "warning" for f in findings):
        assert case in VERL_GAPS, f"{case}: fsdpcfg reports it, verl accepts it, and no reason is written down"
    else:
        assert case == "C26", f"{case}: both accept; the case expects a finding"


@pytest.mark.parametrize("name", list(VERL_CHECKS))
def test_every_config_time_check_of_verl_is_also_an_fsdpcfg_error(verdicts, name):
    findings, op = verdicts[f"check: {name}"]
    assert op is not None and not op.accepted, f"verl 0.9.1 no longer rejects `{name}`: update VERL_CHECKS"
    errors = [f.rule for f in findings if f.severity == "error"]
    assert errors, f"fsdpcfg accepts `{name}`, verl rejects it at {op.stage}: {op.error}"


def test_the_valid_gpu_case_is_accepted_by_both(verdicts):
    if "C26" not in verdicts:
        pytest.skip("C26 not in ../shared/cases")
    findings, op = verdicts["C26"]
    assert op.accepted and op.ignored_keys == [] and not [f for f in findings if f.severity == "error"]
