"""Rule reward of the synthetic arithmetic task (data_source ``fsdpcfg/arith``), usable as a verl custom
reward function (``reward.custom_reward_function.path`` pointing at this file, ``name: compute_score``).

The response scores 1.0 when its first integer equals the ground truth and 0.0 otherwise (no integer, a
different one, or extra digits such as ``"78"`` for ``"7"``).
"""

from __future__ import annotations

import re

_INTEGER = re.compile(r"-?\d+")


def compute_score(
    data_source: str, solution_str: str, ground_truth: str, extra_info: dict | None = None, **kwargs
) -> float:
    """Return 1.0 when the first integer in ``solution_str`` equals ``int(ground_truth)``, else 0.0.

    ``data_source``, ``extra_info`` and extra keyword arguments (verl's ``reward_kwargs``) are accepted for
    verl's custom reward signature and not used.
    """
    found = _INTEGER.search(solution_str)
    if found is None:
        return 0.0
    return 1.0 if int(found.group(0)) == int(str(ground_truth).strip()) else 0.0
