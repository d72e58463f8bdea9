"""The one torchrun command builder (:mod:`fsdpcfg.launch.torchrun`): the plan's command, any target's, and the
rendezvous of several nodes."""

from __future__ import annotations

import sys
from dataclasses import dataclass

import pytest

from fsdpcfg.compose import compose
from fsdpcfg.errors import ConfigError
from fsdpcfg.launch.torchrun import format_command, torchrun_argv, torchrun_command
from fsdpcfg.plan import make_plan


@dataclass
class _Layout:
    nnodes: int
    nproc_per_node: int
    entry: str = "fsdpcfg.train"


def test_the_main_recipes_plan_runs_the_native_loop_on_two_ranks():
    plan = make_plan(compose(["+recipe=qwen_grpo"]).to_container())
    assert torchrun_command(plan, "/r/config.yaml", python="py") == [
        "py",
        "-m",
        "torch.distributed.run",
        "--nnodes",
        "1",
        "--nproc_per_node",
        "2",
        "--standalone",
        "-m",
        "fsdpcfg.train",
        "/r/config.yaml",
    ]


def test_the_sft_plan_runs_the_sft_trainer_and_each_plan_names_its_kinds_entry():
    from fsdpcfg import runkind
    from fsdpcfg.plan import plan_run

    sft = plan_run(compose(["+recipe=qwen_sft"]).to_container())
    assert type(sft).__name__ == "SftPlan" and sft.entry == "fsdpcfg.train.sft" == runkind.SFT.entry
    cmd = torchrun_command(sft, "/r/config.yaml", python="py")
    assert cmd[-3:] == ["-m", "fsdpcfg.train.sft", "/r/config.yaml"]
    grpo = plan_run(compose(["+recipe=qwen_grpo"]).to_container())
    assert type(grpo).__name__ == "Plan" and grpo.entry == "fsdpcfg.train"
    assert "entry" not in grpo.to_dict() and "kind" not in sft.to_dict()  # run_info.json's plan is unchanged


def test_any_target_script_or_module_with_paths_as_strings(tmp_path):
    cmd = torchrun_argv([tmp_path / "w.py", 3, "x"], nproc_per_node=1)
    assert cmd[0] == sys.executable
    assert cmd[1:] == ["-m", "torch.distributed.run", "--nnodes", "1", "--nproc_per_node", "1", "--standalone"] + [
        str(tmp_path / "w.py"),
        "3",
        "x",
    ]
    assert format_command(["py", "a b", "c"]) == "py 'a b' c"


def test_several_nodes_need_a_rendezvous_endpoint(monkeypatch):
    multi = _Layout(nnodes=2, nproc_per_node=8)
    monkeypatch.delenv("FSDPCFG_RDZV_ENDPOINT", raising=False)
    monkeypatch.delenv("MASTER_ADDR", raising=False)
    with pytest.raises(ConfigError, match="trainer.nnodes=2 needs a rendezvous endpoint") as e:
        torchrun_command(multi, "c.yaml")
    assert e.value.key == "trainer.nnodes" and "FSDPCFG_RDZV_ENDPOINT" in (e.value.fix or "")
    monkeypatch.setenv("MASTER_ADDR", "node0")
    monkeypatch.setenv("MASTER_PORT", "1234")
    cmd = torchrun_command(multi, "c.yaml")
    assert cmd[cmd.index("--rdzv_endpoint") + 1] == "node0:1234" and "--standalone" not in cmd
    monkeypatch.setenv("FSDPCFG_RDZV_ENDPOINT", "head:29400")
    cmd = torchrun_command(multi, "c.yaml")
    assert cmd[cmd.index("--rdzv_backend") + 1] == "c10d" and cmd[cmd.index("--rdzv_endpoint") + 1] == "head:29400"
    assert torchrun_argv(["x.py"], nproc_per_node=1, nnodes=2, rdzv_endpoint="h:1")[-3:] == [
        "--rdzv_endpoint",
        "h:1",
        "x.py",
    ]
