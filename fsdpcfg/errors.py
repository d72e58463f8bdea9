"""Errors that reach the user as a message, never as a traceback.

Every user mistake is raised as :class:`ConfigError` (or a subclass) carrying the key, the value, the rule
that was broken and the fix; the CLI prints ``str(error)`` and exits with :attr:`ConfigError.exit_code`.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any


class ConfigError(Exception):
    """A configuration mistake the user can fix.

    Args:
        message: what is wrong, with the numbers.
        key: the full dotted key involved, in verl's names (``None`` when no single key is at fault).
        value: the offending value.
        fix: what to do instead.
        exit_code: process exit code the CLI uses (1 for a bad config, 2 for a usage error).
    """

    def __init__(
        self, message: str, *, key: str | None = None, value: Any = None, fix: str | None = None, exit_code: int = 1
    ) -> None:
        super().__init__(message)
        self.message = message
        self.key = key
        self.value = value
        self.fix = fix
        self.exit_code = exit_code

    def __str__(self) -> str:
        head = f"{self.key}: {self.message}" if self.key else self.message
        return f"{head}\n  -> {self.fix}" if self.fix else head


class UsageError(ConfigError):
    """A command-line usage mistake (exit code 2)."""

    def __init__(self, message: str, *, fix: str | None = None, key: str | None = None) -> None:
        super().__init__(message, fix=fix, key=key, exit_code=2)


class Interrupted(BaseException):
    """The run was stopped by a signal (SIGINT, SIGTERM, SIGHUP) after its torchrun and ranks were stopped.

    A ``BaseException`` like ``KeyboardInterrupt``: code that keeps going after a failed part (a sweep's
    point) must not swallow it. The CLI exits with :attr:`exit_code`, ``128 + signum`` (130, 143, 129).

    Args:
        signum: the signal received.
    """

    def __init__(self, signum: int) -> None:
        import signal

        self.signum = int(signum)
        self.name = signal.Signals(self.signum).name
        self.exit_code = 128 + self.signum
        super().__init__(f"stopped by {self.name}; torchrun and its ranks were stopped")


def did_you_mean(word: str, candidates: Iterable[str], n: int = 3, cutoff: float = 0.6) -> list[str]:
    """Return up to ``n`` candidates closest to ``word`` (difflib ratio >= ``cutoff``), best first.

    For dotted keys the last component is also compared with the last components of the candidates, so
    ``actor.ppo_micro_batch_size_pergpu`` finds ``actor.ppo_micro_batch_size_per_gpu``.
    """
    cands = list(dict.fromkeys(candidates))
    best = difflib.get_close_matches(word, cands, n=n, cutoff=cutoff)
    if "." in word:
        leaf = word.rsplit(".", 1)[1]
        by_leaf: dict[str, list[str]] = {}
        for c in cands:
            by_leaf.setdefault(c.rsplit(".", 1)[-1], []).append(c)
        for m in difflib.get_close_matches(leaf, list(by_leaf), n=n, cutoff=max(cutoff, 0.75)):
            # prefer the candidates that share the most leading components with the word
            ranked = sorted(by_leaf[m], key=lambda c: -_common_prefix(c, word))
            for c in ranked:
                if c not in best:
                    best.append(c)
    best.sort(key=lambda c: -difflib.SequenceMatcher(None, word, c).ratio())
    return best[:n]


def _common_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a.split("."), b.split("."), strict=False):
        if x != y:
            break
        n += 1
    return n
