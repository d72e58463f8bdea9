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
import math
import sys
import traceback
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
    except (Exception, SystemExit) as e:  # the user's file: report it, not a traceback of ours (sys.exit too)
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


def reward_label(cfg_reward: Mapping[str, Any]) -> tuple[str, str]:
    """``(what, key)``: how messages name the reward function the ``reward`` section selects
    (``compute_score in /path/rew.py``) and the key that selects it."""
    custom = cfg_reward.get("custom_reward_function") or {}
    if custom.get("path"):
        return f"{custom.get('name')} in {custom.get('path')}", "reward.custom_reward_function.name"
    return "the built-in reward (fsdpcfg.rewards.default_compute_score)", "reward.custom_reward_function.path"


def _user_frame(e: BaseException) -> str:
    """`` (FILE:LINE)``: the innermost frame of ``e``'s traceback, where the reward function failed."""
    frames = traceback.extract_tb(e.__traceback__)
    return f" ({Path(frames[-1].filename).name}:{frames[-1].lineno})" if frames else ""


def score(
    fn: RewardFn,
    data_source: Any,
    solution_str: str,
    ground_truth: Any,
    extra_info: Any,
    *,
    label: tuple[str, str] = ("the reward function", "reward.custom_reward_function.name"),
    where: str = "a row",
) -> float:
    """Call the reward function ``fn`` once and return its score as a float, as verl's naive reward manager
    takes it: a number, or a dict whose ``"score"`` is one (verl/workers/reward_manager/naive.py writes it into
    the reward tensor). ``label`` is :func:`reward_label`'s ``(what, key)``; ``where`` names the data row.

    Raises:
        ConfigError: the function raised (its exception, the file and line), or returned ``None``, a string,
            a dict without a numeric ``"score"``, NaN or an infinity: naming the function, the row, the value
            and the fix, never a traceback.
    """
    what, key = label
    try:
        out = fn(data_source, solution_str, ground_truth, extra_info)
    except ConfigError:
        raise  # the built-in dispatcher's own message (an unknown data_source)
    except (Exception, SystemExit) as e:  # the user's function: report it, not a traceback of ours; a sys.exit()
        # in it would end the rank with torchrun's report alone
        raise ConfigError(
            f"the reward function {what} raised {type(e).__name__}: {str(e)[:300]}{_user_frame(e)} on {where} "
            f"(data_source {data_source!r}, ground truth {ground_truth!r:.80})",
            key=key,
            fix="make the reward function return a number for every response (catch what can fail in it and "
            "return 0.0); `fsdpcfg preview` calls it on the first rows",
        ) from e
    value = out.get("score") if isinstance(out, dict) else out
    problem = None
    if isinstance(out, dict) and "score" not in out:
        problem = f"a dict without 'score' (keys: {', '.join(map(str, out))})"
    elif value is None or isinstance(value, (str, bytes)):
        problem = repr(value)[:80]
    else:
        try:
            number = float(value)
        except (TypeError, ValueError, OverflowError):
            problem = f"{type(value).__name__} {value!r:.60}"
        else:
            if not math.isfinite(number):
                problem = repr(number)
    if problem is not None:
        raise ConfigError(
            f"the reward function {what} returned {problem} on {where} (data_source {data_source!r}, ground truth "
            f"{ground_truth!r:.80}); a reward must be a finite number, or a dict whose 'score' is one",
            key=key,
            fix="make the reward function return a float (e.g. 0.0 when the answer cannot be parsed) for every "
            "response; `fsdpcfg preview` calls it on the first rows",
        )
    return number
