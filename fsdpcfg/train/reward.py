"""Score generated responses with the run's reward function (``fsdpcfg.rewards.load_reward_fn``), the way verl's
``naive`` reward manager does: decode the valid response tokens (special tokens skipped) and call
``fn(data_source, solution_str, ground_truth, extra_info)`` once per response."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import torch

from fsdpcfg.errors import ConfigError

if TYPE_CHECKING:
    from fsdpcfg.schema.reward import RewardSection


def make_reward_fn(reward_cfg: RewardSection) -> Callable[..., float]:
    """The reward function the ``reward`` section selects (custom file or the built-in dispatcher); the
    native loop is verl's naive manager (one call per response: declared in :mod:`fsdpcfg.native.support`,
    rule FC803). The function carries ``fsdpcfg_label`` (:func:`fsdpcfg.rewards.reward_label`) for messages.

    Raises:
        ConfigError: a custom reward file that cannot be loaded.
    """
    import functools

    from fsdpcfg.rewards import load_reward_fn, reward_label

    section = reward_cfg.model_dump()
    fn = functools.partial(load_reward_fn(section))  # shared with `fsdpcfg preview`, which reads a mapping
    fn.fsdpcfg_label = reward_label(section)  # type: ignore[attr-defined]
    return fn


def score_responses(
    fn: Callable[..., float],
    tokenizer,
    responses: torch.Tensor,
    response_mask: torch.Tensor,
    rows: list[dict],
    reward_fn_key: str = "data_source",
    where: Callable[[int], str] | None = None,
) -> tuple[torch.Tensor, list[str]]:
    """Score each response.

    Args:
        fn: the reward function.
        tokenizer: decodes the responses.
        responses: ``(batch, response_len)`` token ids; response_mask: same shape, 1 on valid tokens.
        rows: the dataset row of each response (``reward_model.ground_truth``, ``extra_info``, the source).
        reward_fn_key: the row key holding the data source (``data.reward_fn_key``).
        where: ``row R of FILE`` of response ``i``'s prompt, for messages.

    Returns:
        ``(scores, texts)``: ``(batch,)`` float32 scores and the decoded responses.

    Raises:
        ConfigError: a row without ``reward_model.ground_truth``; a reward function that raises or returns
            no finite number (:func:`fsdpcfg.rewards.score`).
    """
    from fsdpcfg.rewards import score

    label = getattr(fn, "fsdpcfg_label", ("the reward function", "reward.custom_reward_function.name"))
    scores, texts = [], []
    for i, row in enumerate(rows):
        valid = responses[i][response_mask[i].bool()].tolist()
        text = tokenizer.decode(valid, skip_special_tokens=True)
        try:
            truth = row["reward_model"]["ground_truth"]
        except (KeyError, TypeError):
            raise ConfigError(
                f"{where(i) if where else 'a training row'} has no reward_model.ground_truth",
                key="data.train_files",
                fix="write rows in verl's RL format",
            ) from None
        at = where(i) if where else f"response {i}"
        scores.append(score(fn, row.get(reward_fn_key), text, truth, row.get("extra_info"), label=label, where=at))
        texts.append(text)
    return torch.tensor(scores, dtype=torch.float32), texts
