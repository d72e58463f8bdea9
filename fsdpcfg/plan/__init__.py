"""Stage 3, plan: everything a run needs that follows from the resolved config (pure Python, no torch).

Public API: :func:`plan_run` (the plan of a config of either kind: :class:`Plan` for RL, :class:`fsdpcfg.plan.sft.
SftPlan` for SFT; its ``entry`` is the trainer module torchrun runs), :func:`make_plan`, :func:`total_training_steps`
(the torchrun command a plan runs: :mod:`fsdpcfg.launch.torchrun`). Modules: :mod:`.sft` (the SFT run's batch
arithmetic). The memory estimate, the parameter counts and the mesh shape the rules also need are one floor down,
in :mod:`fsdpcfg.estimate`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fsdpcfg import runkind
from fsdpcfg.plan._plan import Plan, Tree, make_plan, total_training_steps

if TYPE_CHECKING:
    from fsdpcfg.plan.sft import SftPlan

__all__ = ["Plan", "make_plan", "plan_run", "total_training_steps"]


def plan_run(cfg: Tree) -> Plan | SftPlan:
    """The plan of ``cfg`` (a resolved config, nested dicts, or a typed one) by the planner of its run kind
    (:attr:`fsdpcfg.runkind.RunKind.planner`: :func:`make_plan` or :func:`fsdpcfg.plan.sft.make_sft_plan`).

    Raises:
        ConfigError: the planner's (a batch size that does not divide, a missing key), or an unknown
            ``fsdpcfg.kind``.
    """
    planned: Plan | SftPlan = runkind.of(cfg).load("planner")(cfg)
    return planned
