"""Every shipped recipe, exported for launcher=verl, is a config verl 0.9.1 itself accepts (CPU, no Ray).

One subprocess imports verl once and, for each exported folder, composes ``config.yaml`` plus the overrides
``run_verl.sh`` adds exactly as ``python -m verl.trainer.main_ppo --config-path=DIR --config-name=config``
would, runs ``auto_set_device`` and ``validate_config`` (use_reference_policy / use_critic derived as
main_ppo derives them) and converts the config dataclasses verl's trainer and workers build
(:mod:`fsdpcfg.check.verl_opinion._worker`). Then: no key verl would ignore, no required value left unset, accepted.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from fsdpcfg import paths
from fsdpcfg.compose import Composed, compose, recipe_kind
from fsdpcfg.launch.verl import build_verl_invocation, require_valid
from fsdpcfg.launch.verl_export import export_verl

pytestmark = [
    pytest.mark.xdist_group("verl_compat"),  # one worker: the shared fixture (tests/conftest.py)
    pytest.mark.verl,
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("verl") is None, reason="verl 0.9.1 is not installed"),
]

#: What makes a recipe (sized for this CPU machine) a valid verl run: GPUs, a rollout engine, and one GPU so
#: that the small CPU batch sizes still divide (rollout TP 1 on one GPU).
VERL_OVERRIDES = {
    "ppo": [
        "launcher=verl",
        "rollout=vllm",
        "trainer=gpu_1x",
        "actor_rollout_ref.rollout.tensor_model_parallel_size=1",
    ],
    "sft": ["launcher=verl", "trainer=gpu_1x"],
}
RECIPES = sorted(p.stem for p in paths.recipes_dir().glob("*.yaml"))
#: Runs beyond the recipes that verl must accept as fsdpcfg exports them (issue 12.2): GAE/PPO with a critic
#: (verl validates the critic config: use_critic from need_critic), and the Megatron engine's composition.
EXTRA = {
    "<gae critic>": [
        "+recipe=qwen_grpo",
        *VERL_OVERRIDES["ppo"],
        "algorithm.adv_estimator=gae",
        "critic.model.path=${actor_rollout_ref.model.path}",
        "critic.optim.lr=1e-5",
        "critic.ppo_micro_batch_size_per_gpu=4",
    ],
    "<megatron>": ["+recipe=qwen_grpo", *VERL_OVERRIDES["ppo"], "engine=megatron"],
}


def _synthetic_sft() -> Composed:
    """An SFT config in verl's sft_trainer_engine layout (until the SFT recipe tree ships its own)."""
    tree = {
        "model": {"path": "/models/Qwen2.5-0.5B-Instruct", "enable_gradient_checkpointing": True},
        "engine": {"strategy": "fsdp2"},
        "optim": {"lr": 1e-5},
        "data": {
            "train_files": str(paths.data_dir() / "datasets/gsm8k_sft/train.jsonl"),
            "micro_batch_size_per_gpu": 2,
            "train_batch_size": 16,
        },
        "trainer": {"nnodes": 1, "n_gpus_per_node": 8, "device": "cuda", "total_epochs": 1},
        "fsdpcfg": {"kind": "sft", "launcher": "verl"},
    }
    return Composed(cfg=OmegaConf.create(tree), kind="sft")


@pytest.fixture(scope="module")
def opinions(tmp_path_factory):
    """{name: (export result, verl opinion)} for every recipe plus the synthetic SFT config, one verl process,
    started first so that its import of verl runs while this process composes and exports."""
    from fsdpcfg.check.verl_opinion import start_worker, verl_opinions_of_exports

    start_worker()
    exports = {}
    for name in RECIPES:
        c = compose([f"+recipe={name}", *VERL_OVERRIDES[recipe_kind(name)]])
        require_valid(c)  # fsdpcfg accepts it first
        exports[name] = export_verl(c, tmp_path_factory.mktemp(name))
    exports["<synthetic sft>"] = export_verl(_synthetic_sft(), tmp_path_factory.mktemp("sft"))
    for name, overrides in EXTRA.items():
        c = compose(overrides)
        require_valid(c)
        exports[name] = export_verl(c, tmp_path_factory.mktemp(name.strip("<>").replace(" ", "_")))
    ops = verl_opinions_of_exports([(r.invocation.kind, r.out_dir, r.overrides) for r in exports.values()])
    return dict(zip(exports, zip(exports.values(), ops, strict=True), strict=True))


@pytest.mark.parametrize("name", RECIPES + ["<synthetic sft>", *EXTRA])
def test_exported_config_is_accepted_by_verl(opinions, name):
    res, op = opinions[name]
    assert op.ignored_keys == [], f"{name}: keys verl 0.9.1 does not define (it would ignore them): {op.ignored_keys}"
    assert op.missing_keys == [], f"{name}: required values left unset: {op.missing_keys}"
    assert op.accepted, f"{name}: verl rejects the exported config at {op.stage}: {op.error}"
    assert not any("trainer.device" in n for n in op.notices), op.notices  # cuda stays cuda
    assert res.invocation.entry_point in ("verl.trainer.main_ppo", "verl.trainer.sft_trainer")


def test_every_recipe_is_covered():
    assert "qwen_grpo" in RECIPES
    for name in RECIPES:
        assert recipe_kind(name) in VERL_OVERRIDES


def test_launch_yaml_equals_export_yaml(tmp_path):
    """launch_verl and export write the same config (only the header paths differ)."""
    c = compose(["+recipe=qwen_grpo", *VERL_OVERRIDES["ppo"]])
    inv = build_verl_invocation(c, tmp_path)
    res = export_verl(c, tmp_path / "exp")

    def body(text: str) -> str:
        return "\n".join(line for line in text.splitlines() if not line.startswith("#"))

    assert body(inv.yaml_text) == body(Path(res.config).read_text())
