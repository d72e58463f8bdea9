"""Stage 3, plan: everything a run needs that follows from the resolved config (pure Python, no torch).

Public API: :class:`Plan`, :func:`make_plan`, :func:`total_training_steps` (the torchrun command a plan runs:
:mod:`fsdpcfg.launch.torchrun`). Modules: :mod:`.sft` (the SFT run's batch arithmetic). The memory estimate, the
parameter counts and the mesh shape the rules also need are one floor down, in :mod:`fsdpcfg.estimate`.
"""

from fsdpcfg.plan._plan import Plan, make_plan, total_training_steps

__all__ = ["Plan", "make_plan", "total_training_steps"]
