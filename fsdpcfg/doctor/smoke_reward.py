"""The reward of the doctor's GRPO smoke steps (``reward.custom_reward_function``, verl's signature).

A tiny or untrained model scores 0 on a real task, so every group advantage is 0 and the policy-gradient step has
no gradient: the step would not exercise the update. This reward is a deterministic function of the response text
with spread (character codes modulo 11, scaled to [0, 1]); it measures nothing, it only makes samples of one
prompt score differently so that the update has a real gradient and the second synchronisation carries it.
"""

from __future__ import annotations

from typing import Any


def compute_score(data_source: Any, solution_str: str, ground_truth: Any, extra_info: Any = None) -> float:
    """``sum(ord(c)) mod 11 / 10`` of ``solution_str``: a number in [0, 1] (0.0 for an empty response)."""
    return (sum(map(ord, solution_str)) % 11) / 10.0
