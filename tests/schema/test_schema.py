"""The Pydantic schema: it covers the config tree, its defaults are verl 0.9.1's, and its messages name the
key, the value and the allowed values."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from fsdpcfg import paths, verlref
from fsdpcfg.compose import compose
from fsdpcfg.compose.provenance import yaml_leaf_lines
from fsdpcfg.errors import ConfigError
from fsdpcfg.schema import RunConfig, parse_run_config, validate_tree
from fsdpcfg.schema import keys as K

#: schema leaves verl 0.9.1's ppo_trainer.yaml does not list (its dataclasses accept them; reward_kwargs is read
#: with ``.get("reward_kwargs", {})`` by verl/trainer/ppo/reward.py ``get_custom_reward_fn``; reward.reward_kwargs
#: by verl/experimental/reward_loop/reward_manager/dapo.py).
NOT_IN_VERL_YAML = {
    "reward.custom_reward_function.reward_kwargs",
    "reward.reward_kwargs",
    "actor_rollout_ref.actor.fsdp_config.mixed_precision",
    "actor_rollout_ref.ref.fsdp_config.mixed_precision",
    "actor_rollout_ref.actor.fsdp_config.wrap_policy.transformer_layer_cls_to_wrap",
    "actor_rollout_ref.ref.fsdp_config.wrap_policy.transformer_layer_cls_to_wrap",
    "critic.fsdp.mixed_precision",
    "critic.fsdp.wrap_policy.transformer_layer_cls_to_wrap",
}


def _is_sft(f: Path) -> bool:
    data = yaml.safe_load(f.read_text()) or {}
    return isinstance(data, dict) and (data.get("fsdpcfg") or {}).get("kind") == "sft"


def _tree_keys() -> set[str]:
    """Leaf keys of the PPO tree: the root config, its group options and the PPO recipes (the SFT tree,
    conf/sft, has its own schema, fsdpcfg/schema/sft.py)."""
    conf = paths.conf_dir()
    files = [conf / "config.yaml"] + [
        f for d in conf.iterdir() if d.is_dir() and d.name != "sft" for f in d.glob("*.yaml") if not _is_sft(f)
    ]
    out: set[str] = set()
    for f in files:
        lines = yaml_leaf_lines(f)
        out.update(k for k in lines if not any(o.startswith(k + ".") for o in lines))
    return out


def test_every_key_of_the_tree_is_in_the_schema():
    missing = sorted(k for k in _tree_keys() if K.classify(k) not in ("schema", "free"))
    assert not missing, f"keys in conf/ or recipes/ that the schema does not define: {missing}"


def test_every_schema_key_is_verls_or_ours():
    ours = {k for k in K.schema_keys() if k.startswith("fsdpcfg.")} | NOT_IN_VERL_YAML
    stray = sorted(k for k in K.schema_keys() if k not in verlref.keys() and k not in ours)
    assert not stray, f"schema keys verl 0.9.1 does not know: {stray}"


def test_schema_defaults_equal_verls():
    verl = verlref.defaults()
    checked = 0
    for key in sorted(K.schema_keys()):
        info = K.field_info(key)
        if key not in verl or info.is_required():
            continue
        ours = K.schema_default(key)
        assert ours == verl[key], f"{key}: schema default {ours!r} != verl 0.9.1 default {verl[key]!r}"
        assert type(ours) is type(verl[key]) or {type(ours), type(verl[key])} <= {int, float}, key
        checked += 1
    assert checked > 140


def test_required_fields_are_verls_required_or_placeholders():
    required = sorted(k for k in K.schema_keys() if K.field_info(k).is_required())
    assert required == ["actor_rollout_ref.model.path", "actor_rollout_ref.rollout.name", "data.train_files"]


def test_every_field_has_a_description():
    from pydantic import BaseModel

    def walk(model: type[BaseModel], prefix: str):
        for name, info in model.model_fields.items():
            assert info.description and len(info.description) > 5, f"{prefix}{name} has no description"
            ann = info.annotation
            if isinstance(ann, type) and issubclass(ann, BaseModel):
                assert ann.__doc__, ann
                walk(ann, f"{prefix}{name}.")

    walk(RunConfig, "")


def test_extra_keys_are_forbidden_in_every_section():
    from pydantic import ValidationError

    cfg = compose(["+recipe=qwen_grpo"]).to_container()
    cfg["actor_rollout_ref"]["actor"]["optim"]["lrr"] = 1.0
    with pytest.raises(ValidationError, match="lrr"):
        RunConfig.model_validate(cfg)


def _cfg(*overrides: str) -> dict:
    return compose(["+recipe=qwen_grpo", *overrides]).to_container()


def test_recipe_validates():
    rep = validate_tree(_cfg())
    assert rep.issues == [] and rep.model is not None
    assert rep.model.actor_rollout_ref.actor.strategy == "fsdp2"
    assert rep.model.actor_rollout_ref.model.trust_remote_code is False


@pytest.mark.parametrize(
    "override,key,allowed",
    [
        ("actor_rollout_ref.actor.strategy=fsdp3", "actor_rollout_ref.actor.strategy", "fsdp, fsdp2"),
        ("rollout=hf actor_rollout_ref.rollout.name=tgi", "actor_rollout_ref.rollout.name", "hf, vllm, sglang, trtllm"),
        ("actor_rollout_ref.actor.loss_agg_mode=mean", "actor_rollout_ref.actor.loss_agg_mode", "token-mean"),
        ("actor_rollout_ref.actor.kl_loss_type=full", "actor_rollout_ref.actor.kl_loss_type", "low_var_kl"),
        ("algorithm.adv_estimator=grpoo", "algorithm.adv_estimator", "reinforce_plus_plus"),
        ("data.truncation=cut", "data.truncation", "error, left, right, middle"),
        ("trainer.device=tpu", "trainer.device", "cpu, cuda, npu"),
    ],
)
def test_literal_messages_name_key_value_and_allowed(override, key, allowed):
    rep = validate_tree(_cfg(*override.split()))
    bad = override.split()[-1].split("=", 1)[1]
    [issue] = [i for i in rep.issues if i.key == key]
    assert issue.kind == "invalid"
    assert f"{bad!r} is not one of" in issue.message and allowed in issue.message


def test_strategy_typo_is_reported_once_not_on_its_copies():
    rep = validate_tree(
        _cfg("actor_rollout_ref.actor.strategy=fsdp3"),
        derived=frozenset(
            {
                "actor_rollout_ref.ref.strategy",
                "actor_rollout_ref.actor.fsdp_config.strategy",
                "actor_rollout_ref.ref.fsdp_config.strategy",
            }
        ),
    )
    assert [i.key for i in rep.issues] == ["actor_rollout_ref.actor.strategy"]


@pytest.mark.parametrize(
    "override,key,needle",
    [
        ("actor_rollout_ref.rollout.n=0", "actor_rollout_ref.rollout.n", "greater than or equal to 1"),
        ("data.train_batch_size='8'", "data.train_batch_size", "valid integer"),
        ("actor_rollout_ref.model.trust_remote_code=1", "actor_rollout_ref.model.trust_remote_code", "boolean"),
        ("actor_rollout_ref.rollout.top_p=1.5", "actor_rollout_ref.rollout.top_p", "less than or equal to 1"),
        ("actor_rollout_ref.actor.fsdp_config.fsdp_size=0", "actor_rollout_ref.actor.fsdp_config.fsdp_size", "-1"),
        ("actor_rollout_ref.actor.optim.betas=[0.9]", "actor_rollout_ref.actor.optim.betas", "at least 2"),
    ],
)
def test_types_and_ranges(override, key, needle):
    rep = validate_tree(_cfg(override))
    msgs = [i.message for i in rep.issues if i.key == key]
    assert msgs and needle in msgs[0], rep.issues


def test_external_lib_accepts_module_names_and_lists_without_importing(tmp_path, monkeypatch):
    (tmp_path / "evil_ext.py").write_text(f"open({str(tmp_path / 'imported')!r}, 'w').write('x')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for value in ("evil_ext", "[evil_ext,pkg.sub_mod]"):
        rep = validate_tree(_cfg(f"actor_rollout_ref.model.external_lib={value}"))
        assert rep.issues == []
    rep = validate_tree(_cfg("actor_rollout_ref.model.external_lib='my-lib'"))
    assert "'my-lib' is not a Python module name" in rep.issues[0].message
    assert not (tmp_path / "imported").exists()


def test_missing_required_value():
    rep = validate_tree(_cfg("data.train_files=???"))
    assert [(i.kind, i.key) for i in rep.issues] == [("missing", "data.train_files")]


def test_verl_only_keys_are_typed_by_verls_default():
    rep = validate_tree(
        compose(
            [
                "+recipe=qwen_grpo",
                "actor_rollout_ref.rollout.multi_turn.enable=yes",
                "actor_rollout_ref.rollout.multi_turn.max_parallel_calls=4",
            ]
        ).to_container()
    )
    assert [(i.kind, i.key) for i in rep.issues] == [("verl_type", "actor_rollout_ref.rollout.multi_turn.enable")]
    assert rep.verl_only["actor_rollout_ref.rollout.multi_turn.enable"] == "yes"
    assert rep.verl_only["actor_rollout_ref.rollout.multi_turn.max_parallel_calls"] == 4


@pytest.mark.parametrize(
    "key,kind",
    [
        ("actor_rollout_ref.actor.ppo_micro_batch_size_pergpu", "unknown"),
        ("actor_rollout_ref.model.override_config.rope_scaling.factor", "free"),
        ("actor_rollout_ref.rollout.engine_kwargs.vllm.swap_space", "free"),
        ("actor_rollout_ref.rollout.n.x", "conflict"),
        ("custom_reward_function.path", "legacy"),
        ("reward_model.enable", "legacy"),
        ("sandbox_fusion.url", "legacy"),
        ("critic.ppo_epochs", "schema"),
        ("critic.fsdp.qat.enable", "verl"),
        ("actor_rollout_ref.actor.megatron.tensor_model_parallel_size", "verl"),
        ("ray_kwargs.ray_init.address", "free"),
        ("ray_kwargs.ray_init.runtime_env.env_vars.NCCL_DEBUG", "free"),
        ("fsdpcfg.launcher", "schema"),
    ],
)
def test_classify(key, kind):
    assert K.classify(key) == kind


@pytest.mark.parametrize(
    "key,best",
    [
        ("actor_rollout_ref.actor.ppo_micro_batch_size_pergpu", "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu"),
        ("model.trust_remote_code", "actor_rollout_ref.model.trust_remote_code"),
        ("trainer.nnode", "trainer.nnodes"),
        ("actor_rollout_ref.rollout.gpu_mem_utilization", "actor_rollout_ref.rollout.gpu_memory_utilization"),
    ],
)
def test_suggest(key, best):
    assert K.suggest(key)[0] == best


def test_parse_run_config_raises_config_error():
    with pytest.raises(ConfigError) as e:
        parse_run_config(
            compose(["+recipe=qwen_grpo", "actor_rollout_ref.actor.strategy=fsdp3", "data.truncation=cut"])
        )
    assert e.value.key == "actor_rollout_ref.actor.strategy" and "1 more" in str(e.value)
    assert parse_run_config(_cfg()).trainer.n_gpus_per_node == 2


def test_a_list_of_the_wrong_kind_names_both_kinds_in_words():
    """A constrained element type (``Beta = Annotated[float, ...]``) is named by the type it constrains, in the
    plural: the message once read "expected a list of Annotateds" (issue 22's break-it pass)."""
    from fsdpcfg.check import check_overrides

    key = "actor_rollout_ref.actor.optim.betas"
    found = [f for f in check_overrides(["+recipe=qwen_grpo", f"{key}=['0.9','0.99']"]) if key in f.keys]
    assert [f.message for f in found] == [f"{key}: ['0.9', '0.99'] is a list of strings; expected a list of numbers"]
    assert not check_overrides(["+recipe=qwen_grpo", f"{key}=[0.9,0.99]"])
