"""Stage 3, plan: everything a run needs that follows from the resolved config (pure Python, no torch).

Public API: :class:`Plan`, :func:`make_plan`, :func:`total_training_steps` (the torchrun command a plan runs:
:mod:`fsdpcfg.launch.torchrun`). Modules: :mod:`.sft` (the SFT run's batch arithmetic), :mod:`.memory` (the memory
estimate), :mod:`.param_count` (parameter counts from ``config.json``).
"""

from fsdpcfg.plan._plan import Plan, make_plan, total_training_steps

__all__ = ["Plan", "make_plan", "total_training_steps"]
