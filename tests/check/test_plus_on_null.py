"""``+key=value`` on a key verl's tree holds is refused by Hydra only when the key's value is not null and the
value added is no list or dict (``hydra/_internal/config_loader_impl.py`` ``_apply_overrides_to_config``): verl's
megatron examples add ``+...override_transformer_config.recompute_granularity=full`` on a null default. A run
script's `+` words are judged the same way as the command line's, by asking Hydra itself."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import ConfigCompositionException
from omegaconf import OmegaConf

from fsdpcfg.check.sources import check_run_script

SCRIPT = """#!/usr/bin/env bash
python3 -m verl.trainer.main_ppo \\
    algorithm.adv_estimator=grpo \\
    data.train_batch_size=64 \\
    actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct \\
    actor_rollout_ref.actor.ppo_mini_batch_size=16 \\
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2 \\
    actor_rollout_ref.rollout.name=vllm \\
    actor_rollout_ref.rollout.n=4 \\
    {word} \\
    trainer.n_gpus_per_node=8 trainer.nnodes=1
"""


def _hydra_accepts(word: str, current) -> bool:
    """Hydra's own second stage on a tree holding the key at ``current``."""
    from hydra._internal.config_loader_impl import ConfigLoaderImpl

    key = word.lstrip("+").split("=", 1)[0]
    tree = OmegaConf.create({})
    OmegaConf.update(tree, key, current, force_add=True)
    OmegaConf.set_struct(tree, True)
    try:
        ConfigLoaderImpl._apply_overrides_to_config(OverridesParser.create().parse_overrides([word]), tree)
    except ConfigCompositionException:
        return False
    return True


@pytest.mark.parametrize(
    "word, current",
    [
        ("+actor_rollout_ref.rollout.max_model_len=4096", None),  # verl's default is null: Hydra adds it
        ("+data.max_prompt_length=1024", 512),  # a value is there: Hydra refuses the `+`
    ],
)
def test_a_plus_word_is_refused_exactly_when_hydra_refuses_it(word, current, tmp_path: Path):
    p = tmp_path / "run.sh"
    p.write_text(SCRIPT.format(word=word))
    (checked,) = check_run_script(p, environ={})
    fc112 = [f for f in checked.findings if f.rule == "FC112"]
    assert bool(fc112) == (not _hydra_accepts(word, current))
