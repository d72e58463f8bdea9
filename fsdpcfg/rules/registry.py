"""The rule table: every rule registers here with a stable ID, a title and its source.

A rule is a small pure function ``fn(ctx: Context) -> Iterable[Finding]`` decorated with :func:`rule`. Its
docstring cites where the rule comes from (the verl file and function, or the reported problem). The table
feeds ``fsdpcfg check``, ``fsdpcfg explain RULE_ID`` and the generated reference page.

ID ranges:
    FC1xx  schema, unknown and unread keys, types and allowed values
    FC2xx  batch arithmetic (train/mini/micro batch sizes, dynamic batch size, token budgets)
    FC3xx  parallelism (world size, fsdp_size, Ulysses, rollout TP x DP x PP)
    FC4xx  model and tokenizer inspection (config.json, tokenizer_config.json, generation_config.json)
    FC5xx  rollout engine settings (context length, chunked prefill, LoRA rank, load_format, layered_summon)
    FC6xx  algorithm (advantage estimators, KL, loss aggregation)
    FC7xx  silent traps (legacy keys, device, FSDP1 flags under FSDP2, on-policy micro-batch mismatch)
    FC8xx  launcher and device support (what the native launcher, the CPU or verl can run)
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fsdpcfg.rules.context import Context
    from fsdpcfg.rules.finding import Finding, Severity

RuleFn = Callable[["Context"], Iterable["Finding"]]


@dataclass(frozen=True)
class Rule:
    """A registered rule.

    Attributes:
        id: stable ID (``FC201``); never reused for another meaning.
        title: one line saying what it checks.
        severity: the severity of its findings unless a finding says otherwise.
        fn: the rule function.
        keys: the dotted keys the rule reads (for ``fsdpcfg explain KEY``).
        example: a failing example, as Hydra overrides on a recipe (for ``fsdpcfg explain RULE_ID``).
        kinds: the config kinds it applies to (``ppo``: the RL tree, ``sft``: the SFT tree); ``check_config``
            runs only the rules of the config's kind.
        stage: ``check`` (a config rule: ``fsdpcfg check`` and every launch run it) or ``launch`` (a check of
            the machine the run starts on, e.g. its GPUs: right for a cluster, wrong on a laptop, so only the
            launcher runs it, never ``fsdpcfg check``).
    """

    id: str
    title: str
    severity: Severity
    fn: RuleFn
    keys: tuple[str, ...] = ()
    example: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ("ppo",)
    stage: str = "check"

    @property
    def doc(self) -> str:
        """The rule function's docstring: what it checks and its source."""
        return inspect.getdoc(self.fn) or ""


RULES: dict[str, Rule] = {}


def rule(
    id: str,
    title: str,
    *,
    severity: Severity = "error",
    keys: Iterable[str] = (),
    example: Iterable[str] = (),
    kinds: Iterable[str] = ("ppo",),
    stage: str = "check",
) -> Callable[[RuleFn], RuleFn]:
    """Register the decorated function as rule ``id``, applying to configs of ``kinds`` at ``stage``
    (``check`` or ``launch``, see :class:`Rule`).

    Raises:
        ValueError: ``id`` is already registered (two rules may never share an ID) or the function has no
            docstring (every rule cites its source).
    """

    def deco(fn: RuleFn) -> RuleFn:
        if id in RULES:
            raise ValueError(f"rule ID {id} registered twice ({RULES[id].fn.__qualname__} and {fn.__qualname__})")
        if not inspect.getdoc(fn):
            raise ValueError(f"rule {id} ({fn.__qualname__}) needs a docstring citing its source")
        if stage not in ("check", "launch"):
            raise ValueError(f"rule {id}: stage must be 'check' or 'launch', not {stage!r}")
        RULES[id] = Rule(id, title, severity, fn, tuple(keys), tuple(example), tuple(kinds), stage)
        return fn

    return deco
