"""The one builder of torchrun command lines (``python -m torch.distributed.run ...``), for every place that
starts ranks: the native launcher, sweeps, ``fsdpcfg doctor``, the benchmarks and the distributed tests.

Torch-free: it builds argument lists only.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Sequence
from typing import Protocol

from fsdpcfg.errors import ConfigError


class Layout(Protocol):
    """What :func:`torchrun_command` reads of a plan: torchrun's node and per-node process counts and the trainer
    module of its run kind (the GRPO :class:`fsdpcfg.plan.Plan` and the SFT plan both have them)."""

    nnodes: int
    nproc_per_node: int

    @property
    def entry(self) -> str: ...


def torchrun_argv(
    target: Sequence[str],
    *,
    nproc_per_node: int,
    nnodes: int = 1,
    python: str | None = None,
    rdzv_endpoint: str | None = None,
) -> list[str]:
    """Return ``[python, -m, torch.distributed.run, --nnodes N, --nproc_per_node P, <rendezvous>, *target]``.

    ``target`` is what torchrun runs on each rank: a script and its arguments, or ``["-m", module, ...]``.
    One node: ``--standalone`` (torchrun picks a free port, so parallel jobs do not collide). Several nodes:
    torchrun's c10d rendezvous at ``rdzv_endpoint`` (default ``$FSDPCFG_RDZV_ENDPOINT``, else
    ``$MASTER_ADDR:$MASTER_PORT``); run the same command on every node.

    Raises:
        ConfigError: several nodes and no rendezvous endpoint (key ``trainer.nnodes``).
    """
    cmd = [
        python or sys.executable,
        "-m",
        "torch.distributed.run",
        "--nnodes",
        str(nnodes),
        "--nproc_per_node",
        str(nproc_per_node),
    ]
    if nnodes == 1:
        cmd.append("--standalone")
    else:
        ep = rdzv_endpoint or os.environ.get("FSDPCFG_RDZV_ENDPOINT")
        if not ep and os.environ.get("MASTER_ADDR"):
            ep = f"{os.environ['MASTER_ADDR']}:{os.environ.get('MASTER_PORT', '29500')}"
        if not ep:
            raise ConfigError(
                f"trainer.nnodes={nnodes} needs a rendezvous endpoint",
                key="trainer.nnodes",
                value=nnodes,
                fix="export FSDPCFG_RDZV_ENDPOINT=host:port (the same on every node)",
            )
        cmd += ["--rdzv_backend", "c10d", "--rdzv_endpoint", ep]
    return cmd + [str(t) for t in target]


def torchrun_command(
    plan: Layout, config_path: str, *, python: str | None = None, rdzv_endpoint: str | None = None
) -> list[str]:
    """Return the torchrun command line that runs ``python -m <plan.entry> <config_path>`` on every rank of
    ``plan``'s layout (:func:`torchrun_argv`): ``fsdpcfg.train`` for an RL plan, ``fsdpcfg.train.sft`` for SFT
    (:attr:`fsdpcfg.runkind.RunKind.entry`).

    Raises:
        ConfigError: several nodes and no rendezvous endpoint.
    """
    return torchrun_argv(
        ["-m", plan.entry, str(config_path)],
        nproc_per_node=plan.nproc_per_node,
        nnodes=plan.nnodes,
        python=python,
        rdzv_endpoint=rdzv_endpoint,
    )


def format_command(cmd: Sequence[str]) -> str:
    """Return ``cmd`` as one shell-quoted line."""
    return " ".join(shlex.quote(c) for c in cmd)
