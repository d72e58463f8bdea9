"""Stage 0, ``check``: the static checks of :func:`fsdpcfg.check.check_config` over the composed config and the
model's files (read as JSON, nothing executed), each error mapped to the boundary that owns it."""

from __future__ import annotations

import time

from fsdpcfg.doctor.boundaries import CONFIG, Failure, boundary_of_rule
from fsdpcfg.doctor.report import FAIL, PASS, StageResult

#: the order in which boundaries are named when several errors are found (the most specific first).
_PRIORITY = ["model construction", "training-state names", "rollout loading", "trainer-to-rollout transfer", CONFIG]


def run_check(composed) -> tuple[StageResult, list]:
    """Run every rule over ``composed`` (a :class:`fsdpcfg.compose.Composed`).

    Returns:
        ``(result, findings)``: ``FAIL`` when any finding is an error; the failure names the boundary of the most
        specific error (model construction before config), every error's rule and message, and their fixes.
    """
    from fsdpcfg.check import check_config, has_errors, sort_findings

    t = time.perf_counter()
    findings = sort_findings(check_config(composed))
    errors = [f for f in findings if f.severity == "error"]
    warnings = [f for f in findings if f.severity == "warning"]
    seconds = time.perf_counter() - t
    data = {"errors": [f.to_json() for f in errors], "warnings": [f.to_json() for f in warnings]}
    if not has_errors(findings):
        warn = f"; warnings: {', '.join(sorted({f.rule for f in warnings}))}" if warnings else ""
        return StageResult(0, "", PASS, seconds, f"{len(findings)} finding(s), no errors{warn}", data=data), findings
    boundaries = [boundary_of_rule(f.rule) for f in errors]
    boundary = min(boundaries, key=_PRIORITY.index)
    first = errors[boundaries.index(boundary)]
    ordered = [first] + [f for f in errors if f is not first]
    message = " | ".join(f"[{f.rule}] {' '.join(f.message.split())}" for f in ordered)
    failure = Failure(
        boundary=boundary,
        message=message[:1200],
        fix=" | ".join(f.fix for f in ordered),
        key=first.keys[0] if first.keys else None,
        rules=tuple(f.rule for f in ordered),
    )
    detail = f"{len(errors)} error(s): {', '.join(f.rule for f in ordered)}"
    return StageResult(0, "", FAIL, seconds, detail, failure=failure, data=data), findings
