"""``reward``: the reward function (verl 0.9's ``reward`` section; the old top-level keys are rule FC701's)."""

from __future__ import annotations

from typing import Any, Literal

from fsdpcfg.schema._base import MAX_WORKERS, F, Section, Sub


class CustomRewardFunction(Section):
    """A Python file with a scoring function (read at launch, never imported by check)."""

    path: str | None = F(
        None, description="file defining the function; null: verl's default_compute_score by data_source"
    )
    name: str | None = F("compute_score", description="function name in that file (read only when path is set; FC415)")
    reward_kwargs: dict[str, Any] = F(
        default_factory=dict,
        description="keyword arguments bound to the function; verl reads them with .get (no default in its tree: "
        "set them with +reward.custom_reward_function.reward_kwargs.NAME=VALUE)",
    )


class RewardManager(Section):
    """How scores are computed over a batch."""

    source: Literal["register", "importlib"] = F(
        "register", description="look the manager up by registered name or import it"
    )
    name: str = F("naive", description="reward manager name (naive, prime, dapo, ...)")


class RewardSection(Section):
    """Rule-based reward."""

    num_workers: int = F(8, le=MAX_WORKERS, ge=1, description="reward worker processes")
    custom_reward_function: CustomRewardFunction = Sub(CustomRewardFunction, "custom scoring function")
    reward_manager: RewardManager = Sub(RewardManager, "reward manager")
    reward_kwargs: dict[str, Any] = F(
        default_factory=dict,
        description="keyword arguments of the reward manager (dapo: overlong_buffer_cfg, max_resp_len); verl "
        "reads them with .get (verl/experimental/reward_loop/reward_manager/dapo.py; no default in its tree: set "
        "them with +reward.reward_kwargs.NAME=VALUE)",
    )
