"""verl's whole key tree is accepted (issue 12.2): every key of verl 0.9.1's ``ppo_trainer``,
``ppo_megatron_trainer`` and ``sft_trainer_engine`` compositions is accepted as ``key=value`` on launcher=verl,
with verl's semantics for ``+``.

The keys are those of ``fsdpcfg/data/verl_reference.json``, which tests/verlref/test_reference_sync.py holds
equal to the installed verl's compositions (flattened by the same ``fsdpcfg.verlref.build_reference``). One
check per (composition, top-level section) keeps the test fast; a finding names the key it is about.
"""

from __future__ import annotations

import json

import pytest

from fsdpcfg import verlref
from fsdpcfg.check import check_overrides as check

#: Rules that say a key or its value is not accepted (unknown, unread, wrong type, needs/refuses `+`, other
#: engine's key, unresolvable interpolation, required value missing).
KEY_RULES = {"FC100", "FC101", "FC102", "FC103", "FC104", "FC105", "FC112", "FC113"}

BASE = {
    "ppo_trainer": ["+recipe=qwen_grpo", "launcher=verl", "rollout=vllm"],
    "ppo_megatron_trainer": ["+recipe=qwen_grpo", "launcher=verl", "rollout=vllm", "engine=megatron"],
    "sft_trainer_engine": ["+recipe=qwen_sft", "launcher=verl"],
}


def _hydra_value(v) -> str:
    """``v`` in Hydra's override grammar: the one writer run scripts use (strings quoted, so ``1e-5`` stays text)."""
    from fsdpcfg.check.runscript.translate import hydra_value

    return hydra_value(v)


def _overrides(config: str, section: str) -> list[str]:
    raw = verlref.defaults(config, resolved=False)
    resolved = verlref.defaults(config)
    out = []
    for key, v in raw.items():
        if key.split(".", 1)[0] != section or v == "???":
            continue  # required values (data.train_files ...) are the recipe's
        if isinstance(v, str) and "${" in v:
            v = resolved[key]  # verl's value for its own defaults; the interpolation itself is the tree's
            if isinstance(v, str) and "${" in v:
                continue
        out.append(f"{key}={_hydra_value(v)}")
    return out


#: (composition, top-level sections): one check each, the sections grouped to keep the test fast
CASES = [(c, tuple(sorted({k.split(".", 1)[0] for k in verlref.keys(c)}))) for c in BASE]


@pytest.mark.parametrize("config,sections", CASES, ids=[c for c, _ in CASES])
def test_every_verl_key_is_accepted_as_key_value(config, sections):
    ov = [o for s in sections for o in _overrides(config, s)]
    assert len(ov) > 0.9 * len(verlref.keys(config)), "most keys take their default as key=value"
    findings = check(BASE[config] + ov)
    bad = [f for f in findings if f.rule in KEY_RULES]
    assert not bad, "\n".join(f"{f.rule} {f.message}" for f in bad[:10])


def test_the_sections_issue_12_names_are_covered():
    cases = dict(CASES)
    sections = set(cases["ppo_trainer"])
    assert {
        "critic",
        "reward_model",
        "reward",
        "ray_kwargs",
        "global_profiler",
        "transfer_queue",
        "distillation",
        "custom_reward_function",
        "sandbox_fusion",
        "model_engine",
    } <= sections
    assert any(k.startswith("actor_rollout_ref.actor.megatron.") for k in verlref.keys("ppo_megatron_trainer"))
    assert {"engine", "model", "optim", "data", "trainer", "checkpoint", "profiler"} <= set(cases["sft_trainer_engine"])


@pytest.mark.parametrize(
    "override",
    [
        "+ray_kwargs.ray_init.address=auto",  # ray.init(**ray_init): verl lists two of its keys
        "+ray_kwargs.ray_init.runtime_env.env_vars.NCCL_DEBUG=WARN",
        "+actor_rollout_ref.model.override_config.attention_dropout=0.1",  # below a free mapping ({} in verl)
        "+actor_rollout_ref.rollout.engine_kwargs.vllm.swap_space=4",
    ],
)
def test_keys_verl_needs_plus_for_take_plus(override):
    findings = check(BASE["ppo_trainer"] + [override])
    assert not [f for f in findings if f.rule in KEY_RULES], [f.message for f in findings if f.rule in KEY_RULES]
    # ... and without the plus they are FC105, as Hydra and verl refuse them
    findings = check(BASE["ppo_trainer"] + [override[1:]])
    assert [f.rule for f in findings if f.rule in KEY_RULES] == ["FC105"]


def test_plus_on_a_key_verl_defines_is_fc112():
    findings = check(BASE["ppo_trainer"] + ["+critic.optim.lr=3e-6", "+trainer.use_v1=false"])
    got = sorted((f.rule, f.keys[0]) for f in findings if f.rule in KEY_RULES)
    assert got == [("FC112", "critic.optim.lr"), ("FC112", "trainer.use_v1")]
    f = next(f for f in findings if f.keys == ["critic.optim.lr"])
    assert "default 1e-05" in f.message and f.fix == "drop the plus: critic.optim.lr=3e-6"


def test_legacy_reward_model_keys_are_accepted_and_reported_as_ignored():
    # verl 0.9.1's main_ppo reads reward.reward_model.*; the top-level reward_model.* placeholders (null) are
    # read only by the experimental fully-async trainer's migrate_legacy_reward_impl
    findings = check(BASE["ppo_trainer"] + ["reward_model.enable=true", "sandbox_fusion.url=http://x"])
    assert not [f for f in findings if f.rule in KEY_RULES]
    legacy = sorted((f.keys[0], f.keys[1]) for f in findings if f.rule == "FC701")
    assert legacy == [
        ("reward_model.enable", "reward.reward_model.enable"),
        ("sandbox_fusion.url", "reward.sandbox_fusion.url"),
    ]


def test_reference_lists_every_composition_with_its_selection():
    doc = json.loads((verlref.paths.data_dir() / "verl_reference.json").read_text())
    assert set(doc["configs"]) == set(verlref.COMPOSITIONS)
    assert doc["configs"]["ppo_veomni_trainer"]["overrides"] == ["model_engine=veomni"]
    assert doc["configs"]["ppo_megatron_trainer"]["defaults"]["critic.strategy"] == "megatron"
