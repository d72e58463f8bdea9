"""Stage 3, plan: everything a run needs that follows from the resolved config (pure Python, no torch).

Public API: :class:`Plan`, :func:`make_plan`, :func:`total_training_steps`, :func:`torchrun_command`.
"""

from fsdpcfg.plan._plan import Plan, make_plan, torchrun_command, total_training_steps

__all__ = ["Plan", "make_plan", "torchrun_command", "total_training_steps"]
