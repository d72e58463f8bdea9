"""Stage 3, plan: everything a run needs that follows from the resolved config (pure Python, no torch).

Public API: :class:`Plan`, :func:`make_plan`, :func:`total_training_steps`, :func:`torchrun_command`,
:func:`format_command`. Modules: :mod:`.sft` (the SFT run's batch arithmetic), :mod:`.memory` (the memory
estimate), :mod:`.param_count` (parameter counts from ``config.json``).
"""

from fsdpcfg.plan._plan import Plan, format_command, make_plan, torchrun_command, total_training_steps

__all__ = ["Plan", "format_command", "make_plan", "torchrun_command", "total_training_steps"]
