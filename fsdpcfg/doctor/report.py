"""The doctor's results: one :class:`StageResult` per stage (and engine), gathered in a :class:`Report`, written
as a table for people or JSON for tools.

Stages, cheapest first (``STAGES``): 0 ``check`` (the static checks, no torch), 1 ``load``, 2 ``patches``,
3 ``sft``, 4 ``grpo``, 5 ``match`` (actor vs rollout log-probs after synchronisation, checkpoint save/reload).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from fsdpcfg.doctor.boundaries import Failure

#: stage number -> (name, what it does).
STAGES: dict[int, tuple[str, str]] = {
    0: ("check", "static checks of the composed config and the model files (no torch)"),
    1: ("load", "tokenizer, processor, config and model with the run's trust_remote_code/external_lib"),
    2: ("patches", "each selected patch vs the unpatched model: forward log-probs and backward gradients"),
    3: ("sft", "FSDP/FSDP2 SFT smoke path: a couple of optimizer steps (2 ranks)"),
    4: ("grpo", "online GRPO optimizer steps with the rollout adapter, two weight synchronisations (2 ranks)"),
    5: ("match", "actor vs rollout token log-probs after synchronisation; checkpoint saved, reloaded, compared"),
}
PASS, FAIL, SKIP, NOT_RUN = "pass", "FAIL", "skip", "not run"


@dataclass
class StageResult:
    """The outcome of one stage for one engine/variant.

    Attributes:
        stage: the stage number (:data:`STAGES`).
        variant: ``""`` for single-process stages, else the engine and options (``fsdp2``, ``fsdp2+lora``).
        status: ``pass``, ``FAIL``, ``skip`` (nothing to do, with the reason in ``detail``).
        seconds: wall time of the stage.
        detail: one line of what was measured (numbers, classes, tolerances).
        failure: why it failed (``None`` unless ``status`` is ``FAIL``).
        data: measured numbers for tools (JSON-serialisable).
    """

    stage: int
    variant: str
    status: str
    seconds: float
    detail: str = ""
    failure: Failure | None = None
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return STAGES[self.stage][0]

    @classmethod
    def failed(
        cls, stage: int, variant: str, seconds: float, detail: str, boundary: str, message: str, fix: str, data: dict
    ) -> StageResult:
        """A ``FAIL`` of ``stage`` whose measured comparison went wrong: ``Failure(boundary, message, fix)``
        (:class:`fsdpcfg.doctor.boundaries.Failure`) beside the ``detail`` line and the ``data`` measured."""
        return cls(stage, variant, FAIL, seconds, detail, failure=Failure(boundary, message, fix), data=data)

    def to_json(self) -> dict:
        """The machine form."""
        return {
            "stage": self.stage,
            "name": self.name,
            "variant": self.variant,
            "status": self.status,
            "seconds": round(self.seconds, 2),
            "detail": self.detail,
            "failure": self.failure.to_json() if self.failure else None,
            "data": self.data,
        }

    @classmethod
    def from_json(cls, d: dict) -> StageResult:
        """Inverse of :meth:`to_json`."""
        return cls(
            stage=int(d["stage"]),
            variant=d["variant"],
            status=d["status"],
            seconds=float(d["seconds"]),
            detail=d.get("detail", ""),
            failure=Failure.from_json(d["failure"]) if d.get("failure") else None,
            data=d.get("data") or {},
        )


@dataclass
class Report:
    """Everything one doctor run found.

    Attributes:
        model: the model path; recipe: the recipe name; overrides: as given.
        results: stage results in the order they ran.
        conditions: what the model needs that the recipe had to be told (matrix: "needs trust_remote_code").
        sft_path: how stage 3 trained (``fsdpcfg.train.sft.SFTTrainer``).
        seconds: total wall time.
    """

    model: str
    recipe: str | None
    overrides: list[str]
    results: list[StageResult] = field(default_factory=list)
    conditions: list[str] = field(default_factory=list)
    sft_path: str = ""
    seconds: float = 0.0

    @property
    def failure(self) -> StageResult | None:
        """The first failed stage, or ``None``."""
        return next((r for r in self.results if r.status == FAIL), None)

    @property
    def ok(self) -> bool:
        return self.failure is None

    def status_of(self, stage: int, variant: str | None = None) -> str:
        """``pass``/``FAIL``/``skip`` of ``stage`` (all its variants, or one), ``not run`` when it did not run."""
        rows = [r for r in self.results if r.stage == stage and (variant is None or r.variant == variant)]
        if not rows:
            return NOT_RUN
        if any(r.status == FAIL for r in rows):
            return FAIL
        return PASS if any(r.status == PASS for r in rows) else SKIP

    def to_json(self) -> dict:
        """The machine form (``--format json``)."""
        f = self.failure
        return {
            "model": self.model,
            "recipe": self.recipe,
            "overrides": list(self.overrides),
            "ok": self.ok,
            "stopped_at": None
            if f is None
            else {"stage": f.stage, "name": f.name, "variant": f.variant, **(f.failure.to_json() if f.failure else {})},
            "conditions": list(self.conditions),
            "sft_path": self.sft_path,
            "seconds": round(self.seconds, 2),
            "stages": [r.to_json() for r in self.results],
            "not_run": [STAGES[s][0] for s in STAGES if self.status_of(s) == NOT_RUN],
        }


def render_table(report: Report) -> str:
    """The report for people: one row per stage and variant, then the verdict (boundary and what to try)."""
    rows = [("stage", "variant", "status", "time", "detail")]
    for r in report.results:
        rows.append((f"{r.stage} {r.name}", r.variant or "-", r.status, f"{r.seconds:.1f}s", r.detail))
    ran = {r.stage for r in report.results}
    for s, (name, _) in STAGES.items():
        if s not in ran:
            rows.append((f"{s} {name}", "-", NOT_RUN, "", ""))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = [f"fsdpcfg doctor: {report.model}" + (f" (recipe {report.recipe})" if report.recipe else "")]
    for i, row in enumerate(rows):
        lines.append("  " + "  ".join(c.ljust(w) for c, w in zip(row[:4], widths, strict=True)) + "  " + row[4])
        if i == 0:
            lines.append("  " + "  ".join("-" * w for w in widths) + "  " + "-" * 6)
    if report.conditions:
        lines.append("conditions: " + "; ".join(report.conditions))
    if report.sft_path:
        lines.append(f"stage 3 ran {report.sft_path}")
    f = report.failure
    if f is None:
        lines.append(f"OK: every stage passed ({report.seconds:.1f}s)")
    else:
        why = f.failure
        assert why is not None  # a FAIL result always carries its Failure (StageResult's contract)
        lines.append(
            f"FAILED at stage {f.stage} {f.name}"
            + (f" [{f.variant}]" if f.variant else "")
            + f"; boundary: {why.boundary}"
        )
        lines.append(f"  {why.error_type + ': ' if why.error_type else ''}{why.message}")
        lines.append(f"  -> {why.fix}")
    return "\n".join(lines)


def render_json(report: Report) -> str:
    """:meth:`Report.to_json` as indented JSON text."""
    return json.dumps(report.to_json(), indent=2)
