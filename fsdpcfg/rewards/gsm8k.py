"""GSM8K rule reward with verl's semantics (``verl/utils/reward_score/gsm8k.py``), written for fsdpcfg.

``strict``: the answer is the last ``#### <number>`` within the final 300 characters of the response, with
``,`` and ``$`` removed. ``flexible``: the last number-like run (digits, ``.``, ``,``, optional leading
``-``) that is not just ``.``; it is compared as found. Comparison with the ground truth is exact string
equality, as in verl: ``"72"`` matches ``"72"``, ``"1,234"`` after ``####`` matches ``"1234"``, but ``"72.0"``
does not match ``"72"``.
"""

from __future__ import annotations

import re

#: Only the end of the response is searched (verl: "a safe approximation for 300 tokens").
CLIP_CHARS = 300

_STRICT = re.compile(r"#### (-?[0-9.,]+)")
_FLEXIBLE = re.compile(r"(-?[0-9.,]+)")


def extract_answer(response: str, method: str = "strict") -> str | None:
    """Return the final answer string found in ``response``, or ``None`` when there is none.

    Raises:
        ValueError: ``method`` is not ``"strict"`` or ``"flexible"``.
    """
    if method not in ("strict", "flexible"):
        raise ValueError(f"method must be 'strict' or 'flexible', got {method!r}")
    tail = response[-CLIP_CHARS:]
    if method == "strict":
        found = _STRICT.findall(tail)
        return found[-1].replace(",", "").replace("$", "") if found else None
    candidates = [c for c in _FLEXIBLE.findall(tail) if c not in ("", ".")]
    if candidates:
        return candidates[-1]
    # verl returns the last (invalid) candidate when every one is "." or ""
    found = _FLEXIBLE.findall(tail)
    return found[0] if found else None


def compute_score(
    solution_str: str, ground_truth: str, method: str = "strict", format_score: float = 0.0, score: float = 1.0
) -> float:
    """Return ``score`` when the extracted answer equals ``ground_truth``, ``format_score`` when an answer
    was extracted but differs, and 0.0 when none was found."""
    answer = extract_answer(solution_str, method)
    if answer is None:
        return 0.0
    return float(score) if answer == ground_truth else float(format_score)
