"""Recognising verl's entry points in a run script's commands (fsdpcfg.check.runscript.verl_cmd)."""

from __future__ import annotations

import pytest

from fsdpcfg.check.runscript import evaluate, find_verl_commands
from fsdpcfg.check.runscript.verl_cmd import CONFIG_NAMES, config_name_of


def commands(script: str):
    return find_verl_commands(evaluate(script, environ={"HOME": "/h"}))


@pytest.mark.parametrize(
    "line, entry, kind, launcher",
    [
        ("python3 -m verl.trainer.main_ppo a=1", "verl.trainer.main_ppo", "ppo", "python"),
        ("python verl/trainer/main_ppo.py a=1", "verl.trainer.main_ppo", "ppo", "python"),
        ("python3 -u /opt/src/verl/verl/trainer/main_ppo.py a=1", "verl.trainer.main_ppo", "ppo", "python"),
        (
            "torchrun --nnodes 1 --nproc_per_node 8 -m verl.trainer.sft_trainer a=1",
            "verl.trainer.sft_trainer",
            "sft",
            "torchrun",
        ),
        (
            "python -m torch.distributed.run --nproc-per-node=4 -m verl.trainer.sft_trainer a=1",
            "verl.trainer.sft_trainer",
            "sft",
            "torchrun",
        ),
        ("python3 -m verl.trainer.sft_trainer_ray a=1", "verl.trainer.sft_trainer_ray", "sft", "python"),
        (
            "ray job submit --address=http://h:8265 --runtime-env=env.yaml -- python3 -m verl.trainer.main_ppo a=1",
            "verl.trainer.main_ppo",
            "ppo",
            "ray job submit",
        ),
        ("nohup env X=1 python3 -m verl.trainer.main_ppo a=1", "verl.trainer.main_ppo", "ppo", "python"),
        (
            "python3 -m verl.trainer.main_generation_server a=1",
            "verl.trainer.main_generation_server",
            "other",
            "python",
        ),
        ("python3 -m recipe.dapo.main_dapo a=1", "recipe.dapo.main_dapo", "other", "python"),
    ],
)
def test_entry_points(line, entry, kind, launcher):
    [vc] = commands(line)
    assert (vc.entry, vc.kind, vc.launcher) == (entry, kind, launcher)
    assert [w.text for w in vc.overrides] == ["a=1"]


def test_not_verl_commands():
    assert (
        commands(
            "python3 examples/data_preprocess/gsm8k.py --local_dir x\necho python3 -m verl.trainer.main_ppo\n"
            "pip install verl"
        )
        == []
    )


def test_hydra_and_torchrun_options():
    [vc] = commands(
        "torchrun --standalone --nnodes=2 --nproc_per_node 8 -m verl.trainer.sft_trainer "
        "--config-path=/cfg --config-name sft_x.yaml --cfg job a=1 +b=2 ~c"
    )
    assert {k: w.text for k, w in vc.launcher_options.items()} == {
        "standalone": "true",
        "nnodes": "2",
        "nproc_per_node": "8",
    }
    assert {k: w.text for k, w in vc.hydra.items()} == {"config_path": "/cfg", "config_name": "sft_x.yaml"}
    assert config_name_of(vc) == "sft_x"
    assert [w.text for w in vc.ignored] == ["--cfg", "job"] or [w.text for w in vc.ignored] == ["--cfg"]
    assert [w.text for w in vc.overrides if w.text != "job"] == ["a=1", "+b=2", "~c"]


def test_megatron_config_name_maps_to_one_group_option():
    assert CONFIG_NAMES["ppo_megatron_trainer"] == ("ppo", ("engine=megatron",))
    [vc] = commands("python3 -m verl.trainer.main_ppo --config-path=config --config-name='ppo_megatron_trainer.yaml'")
    assert config_name_of(vc) == "ppo_megatron_trainer"


def test_several_commands_each_with_its_line():
    got = commands(
        "python3 -m verl.trainer.main_ppo a=1\n\nfor s in 1 2; do\n"
        "  python3 -m verl.trainer.main_ppo trainer.seed=$s\ndone\n"
    )
    assert [(vc.line, [w.text for w in vc.overrides]) for vc in got] == [
        (1, ["a=1"]),
        (4, ["trainer.seed=1"]),
        (4, ["trainer.seed=2"]),
    ]
