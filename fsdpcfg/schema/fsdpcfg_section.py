"""``fsdpcfg``: fsdpcfg's own choices, which verl has no key for (removed when a config is handed to verl)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import StringConstraints

from fsdpcfg.schema._base import F, Section


class FsdpcfgSection(Section):
    """Launcher and run-folder settings."""

    kind: Literal["ppo", "sft"] = F(
        "ppo", description="which tree the recipe uses: ppo (RL, conf/config.yaml) or sft (conf/sft/config.yaml)"
    )
    launcher: Literal["native", "verl"] = F(
        "native", description="who runs the loop: native (torchrun, built-in FSDP loop) or verl (Ray)"
    )
    run_dir: str = F("runs/fsdpcfg/run", description="run folder (metrics, resolved config)")
    update_weights_bucket_megabytes: int = F(512, le=2**20, gt=0, description="weight-sync bucket size in MiB")
    device_memory_gb: float | None = F(
        None,
        le=2**20,
        gt=0,
        description="memory of one device in GiB for the memory "
        "estimate of `fsdpcfg check` (null: detected; the CPU: this machine's RAM)",
    )
    memory_margin: float | None = F(
        0.25,
        ge=0,
        le=100,
        description="how far the memory estimate may pass the "
        "device memory before `check` refuses the run (0.25: 25% over; the estimate "
        "leaves out allocator overheads and may overcount); a warning from 90% of the "
        "device up; null: never refuse, warn only (rule FC450)",
    )
    lora_layer_prefixes: list[Annotated[str, StringConstraints(min_length=1)]] = F(
        default_factory=lambda: ["layers."],
        min_length=1,
        description="LoRA with rollout.layered_summon: names of "
        "the block containers whose numbered children are gathered one at a time for the rollout (layers. -> "
        "model.layers.0); set it for models whose blocks are named otherwise, e.g. [transformer_blocks.]",
    )
    env: dict[str, str | int | float | bool] = F(
        default_factory=dict,
        description="environment variables for the launched run (NAME: value); launcher=verl "
        "sets them for the verl process and passes them to every Ray worker on every node through "
        "ray_kwargs.ray_init.runtime_env.env_vars; e.g. +fsdpcfg.env.NCCL_DEBUG=WARN",
    )
