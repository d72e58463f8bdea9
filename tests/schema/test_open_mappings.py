"""Keys below verl's dict-typed config fields are the library's (free); the table is kept to verl's own source."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from fsdpcfg.schema import keys as K

verl = pytest.importorskip("verl")


def _dict_fields() -> set[str]:
    """Names of dataclass fields annotated ``dict[...]``/``Optional[dict[...]]`` in verl's config modules."""
    root = Path(verl.__file__).parent
    out: set[str] = set()
    for f in [*(root / "workers" / "config").glob("*.py"), *(root / "trainer" / "config").glob("*.py")]:
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                if "dict" in ast.unparse(node.annotation):
                    out.add(node.target.id)
    return out


def test_every_open_field_is_a_dict_field_of_verls_dataclasses():
    missing = sorted(K.VERL_DICT_FIELDS - _dict_fields())
    assert not missing, f"not dict-typed fields of verl {verl.__version__}: {missing}"


def test_keys_below_them_are_free_and_their_neighbours_are_not():
    tc = "actor_rollout_ref.actor.megatron.override_transformer_config"
    assert K.classify(f"{tc}.num_layers_in_first_pipeline_stage") == "free"
    assert K.classify("actor_rollout_ref.rollout.engine_kwargs.vllm.swap_space") == "free"
    # HFModelConfig.lora is dict[str, Any]; the vLLM server reads lora.get("fully_sharded_loras")
    assert K.classify("actor_rollout_ref.model.lora.fully_sharded_loras") == "free"
    assert K.classify("actor_rollout_ref.actor.megatron.no_such_flag") == "unknown"


def test_plus_keys_are_fields_of_the_named_dataclass():
    root = Path(verl.__file__).parent
    for key, (file, cls) in K.VERL_PLUS_KEYS.items():
        tree = ast.parse((root / file).read_text())
        (node,) = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == cls]
        fields = {n.target.id for n in node.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
        assert key.rsplit(".", 1)[1] in fields, (key, file, cls)
        assert K.classify(key) == "verl"


def test_verl_style_plus_keys_and_megatron_overrides_check_clean():
    from fsdpcfg.check import check_overrides

    base = [
        "+recipe=qwen_grpo",
        "launcher=verl",
        "rollout=vllm",
        "trainer=gpu_8x",
        "data.train_batch_size=64",
        "actor_rollout_ref.actor.ppo_mini_batch_size=32",
    ]
    gdpo = ["algorithm.adv_estimator=gdpo", "+algorithm.gdpo_reward_keys=[format_reward,accuracy_reward]"]
    assert not [f.rule for f in check_overrides(base + gdpo) if f.severity == "error"]
    # verl 0.9.1 reads SAPO's tau_pos/tau_neg from the actor (ActorConfig), not from policy_loss as 0.9.0 did
    sapo = ["+actor_rollout_ref.actor.policy_loss.tau_pos=1.0"]
    (f,) = [f for f in check_overrides(base + sapo) if f.severity == "error"]
    assert f.rule == "FC102" and f.keys[0] == "actor_rollout_ref.actor.policy_loss.tau_pos"
    mega = ["engine=megatron", "+actor_rollout_ref.actor.megatron.override_transformer_config.moe_grouped_gemm=true"]
    errors = [f for f in check_overrides(base + mega) if f.severity == "error"]
    assert not errors, [(f.rule, f.message) for f in errors]
