"""Check every point of a sweep before the first one starts: compose, schema and rules, plan, resume.

A point passes when it composes, :func:`fsdpcfg.check.check_config` finds no error, the native plan divides
and a checkpoint it would resume from was written by the same world size. Two points whose resolved configs are
identical (``lr=1e-6`` and ``lr=0.000001``) are one point: the later one is dropped as a duplicate.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fsdpcfg.errors import ConfigError


@dataclass
class PointCheck:
    """The verdict on one sweep point.

    Attributes:
        index: the point's number in the sweep (after duplicates are removed).
        overrides: its override list.
        findings: every finding of the check (warnings included).
        error: a composition or plan error (``None`` when there is none).
        composed, cfg, plan: the composed config, its resolved form (secrets as references) and its plan (``None``
            for launcher=verl or when the point failed before it).
        digest: SHA-256 of the resolved config (equal digests: the same run).
        duplicate_of: index of the earlier point with the same resolved config.
    """

    index: int
    overrides: list[str]
    findings: list[Any] = field(default_factory=list)
    error: str | None = None
    composed: Any = None
    cfg: dict[str, Any] | None = None
    plan: Any = None
    digest: str | None = None
    duplicate_of: int | None = None

    @property
    def ok(self) -> bool:
        """True when nothing stops this point from starting."""
        return self.error is None and not any(f.severity == "error" for f in self.findings)

    @property
    def label(self) -> str:
        """``point <i>: <overrides>`` as printed."""
        return f"point {self.index}: {' '.join(self.overrides)}"


def config_digest(cfg: dict[str, Any]) -> str:
    """SHA-256 of a resolved config (keys sorted), the identity of a run."""
    return hashlib.sha256(json.dumps(cfg, sort_keys=True, default=str).encode()).hexdigest()


def check_point(index: int, overrides: list[str]) -> PointCheck:
    """Compose, check and plan one point; never raises for a config mistake (it lands in the result)."""
    from fsdpcfg.check import check_config, has_errors
    from fsdpcfg.check.key_advice import KEY_ADVICE
    from fsdpcfg.compose import compose
    from fsdpcfg.native.ckpt_layout import check_resume_layout
    from fsdpcfg.runinfo import run_config

    pc = PointCheck(index, list(overrides))
    try:
        pc.composed = compose(list(overrides), keys=KEY_ADVICE)
        pc.findings = list(check_config(pc.composed))
        if has_errors(pc.findings):
            return pc
        pc.cfg = run_config(pc.composed)
        pc.digest = config_digest(pc.cfg)
        if pc.cfg["fsdpcfg"]["launcher"] == "native":
            from fsdpcfg.plan import plan_run
            from fsdpcfg.schema import parse_config

            pc.plan = plan_run(pc.cfg)

            check_resume_layout(parse_config(pc.cfg).trainer)
    except ConfigError as e:
        pc.error = str(e)
    return pc


def preflight(points: list[list[str]], echo: Callable[[str], None] = print) -> list[PointCheck]:
    """Check every point (printing one line each), mark duplicates of earlier points, return the verdicts."""
    out: list[PointCheck] = []
    by_digest: dict[str, int] = {}
    for i, point in enumerate(points):
        pc = check_point(i, point)
        if pc.digest is not None and pc.digest in by_digest:
            pc.duplicate_of = by_digest[pc.digest]
        elif pc.digest is not None:
            by_digest[pc.digest] = i
        state = ("ok" if pc.ok else "FAILS") if pc.duplicate_of is None else f"same config as point {pc.duplicate_of}"
        echo(f"  {pc.label}  [{state}]")
        out.append(pc)
    return out


def _format(f: Any, composed: Any) -> str:
    src = f.provenance.get(f.keys[0]) if f.keys else None
    head = f"{f.severity}: [{f.rule}] {src}: {f.message}" if src else f"{f.severity}: [{f.rule}] {f.message}"
    return f"{head}\n      -> {f.fix}" if f.fix else head


def report_failures(checks: list[PointCheck], stream=None) -> int:
    """Print each failing point with its errors (to stderr); return how many points fail."""
    stream = stream or sys.stderr
    failing = [c for c in checks if not c.ok]
    for c in failing:
        print(f"{c.label} fails the checks:", file=stream)
        if c.error:
            print("    error: " + c.error.replace("\n", "\n    "), file=stream)
        for f in c.findings:
            if f.severity == "error":
                print("    " + _format(f, c.composed), file=stream)
    stream.flush()
    return len(failing)
