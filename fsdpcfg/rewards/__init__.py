"""Reward functions in verl's signature ``fn(data_source, solution_str, ground_truth, extra_info=None)``.

- :func:`default_compute_score` dispatches on ``data_source`` like verl's ``default_compute_score``
  (``openai/gsm8k`` -> :mod:`fsdpcfg.rewards.gsm8k`, ``fsdpcfg/arith`` and ``fsdpcfg/arith_heldout`` ->
  :mod:`fsdpcfg.rewards.arith`).
- :func:`load_reward_fn` returns the function a ``reward`` config section selects: the custom function
  ``reward.custom_reward_function.path``/``name`` when ``path`` is set (imported from the file, with
  ``reward_kwargs`` bound), otherwise :func:`default_compute_score`.
"""

from __future__ import annotations

import functools
import importlib.util
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from fsdpcfg.errors import ConfigError

RewardFn = Callable[..., float]


def _gsm8k(data_source: str, solution_str: str, ground_truth: str, extra_info: dict | None = None) -> float:
    from fsdpcfg.rewards import gsm8k

    return gsm8k.compute_score(solution_str, ground_truth)


def _arith(data_source: str, solution_str: str, ground_truth: str, extra_info: dict | None = None) -> float:
    from fsdpcfg.rewards import arith

    return arith.compute_score(data_source, solution_str, ground_truth, extra_info)


#: data_source -> scorer. verl's own default dispatcher knows ``openai/gsm8k`` too.
SCORERS: dict[str, RewardFn] = {"openai/gsm8k": _gsm8k, "fsdpcfg/arith": _arith, "fsdpcfg/arith_heldout": _arith}

#: data_source -> the response a model that answers correctly writes, in the format its scorer reads
#: (``fsdpcfg preview`` scores it: a correct answer must get the full reward).
REFERENCE_RESPONSES: dict[str, Callable[[str], str]] = {
    "openai/gsm8k": lambda truth: f"#### {truth}",  # the prompt asks for the answer after "####"
    "fsdpcfg/arith": lambda truth: str(truth),
    "fsdpcfg/arith_heldout": lambda truth: str(truth),
}


def reference_response(data_source: str, ground_truth: Any) -> str | None:
    """The correct response for ``ground_truth`` in ``data_source``'s answer format, or ``None`` when fsdpcfg
    does not know that format (a custom data source)."""
    make = REFERENCE_RESPONSES.get(data_source)
    return None if make is None or ground_truth is None else make(str(ground_truth))


def default_compute_score(
    data_source: str, solution_str: str, ground_truth: str, extra_info: dict | None = None, **kwargs: Any
) -> float:
    """Score one response with the rule of its ``data_source``; returns a float in [0, 1].

    Raises:
        ConfigError: no scorer for ``data_source`` (the message names the known ones and how to add one).
    """
    scorer = SCORERS.get(data_source)
    if scorer is None:
        raise ConfigError(
            f"no built-in reward for data_source {data_source!r} (known: {', '.join(SCORERS)})",
            key="data_source",
            value=data_source,
            fix="set reward.custom_reward_function.path (and .name) to a file defining "
            "compute_score(data_source, solution_str, ground_truth, extra_info=None)",
        )
    return scorer(data_source, solution_str, ground_truth, extra_info)


def load_reward_fn(cfg_reward: Mapping[str, Any]) -> RewardFn:
    """Return the reward function selected by the ``reward`` config section ``cfg_reward``.

    With ``custom_reward_function.path`` set, the file is imported (never from ``sys.path``) and the
    function ``custom_reward_function.name`` is returned, with ``custom_reward_function.reward_kwargs``
    (when present) bound as keyword arguments, as verl does. Otherwise :func:`default_compute_score`.

    Raises:
        ConfigError: the file does not exist, fails to import, or lacks the named function.
    """
    custom = cfg_reward.get("custom_reward_function") or {}
    path = custom.get("path")
    if not path:
        return default_compute_score
    key = "reward.custom_reward_function"
    name = custom.get("name")
    file = Path(str(path)).expanduser()
    if not file.is_file():
        raise ConfigError(
            "reward function file not found",
            key=f"{key}.path",
            value=str(path),
            fix="point it at an existing .py file, or set it to null for the built-in rewards",
        )
    module_name = f"fsdpcfg_custom_reward_{abs(hash(str(file.resolve())))}"
    spec = importlib.util.spec_from_file_location(module_name, file)
    if spec is None or spec.loader is None:  # not a .py file: no loader knows the suffix
        raise ConfigError(
            f"the reward function file {file.name} is not a Python file (.py)",
            key=f"{key}.path",
            value=str(path),
            fix="point it at a .py file that defines the function",
        )
    try:
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        spec.loader.exec_module(module)
    except Exception as e:  # the user's file: report it, not a traceback of ours
        raise ConfigError(
            f"importing the reward file failed: {type(e).__name__}: {e}",
            key=f"{key}.path",
            value=str(path),
            fix="fix the file so that `python FILE` imports it cleanly",
        ) from e
    fn = getattr(module, str(name), None) if name else None
    if not callable(fn):
        funcs = sorted(k for k, v in vars(module).items() if callable(v) and not k.startswith("_"))
        raise ConfigError(
            f"{file.name} has no function {name!r} (functions there: {', '.join(funcs) or 'none'})",
            key=f"{key}.name",
            value=name,
            fix="set it to the reward function's name",
        )
    kwargs = dict(custom.get("reward_kwargs") or {})
    return functools.partial(fn, **kwargs) if kwargs else fn
