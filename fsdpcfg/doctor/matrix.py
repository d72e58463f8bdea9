"""``fsdpcfg doctor --matrix``: the doctor over the tiny scaled-down real architectures, written as
``docs/compatibility.md``.

For each model (an :mod:`fsdpcfg.assets` folder: a real config.json scaled down, random weights): the static
check runs first and every error with a known remedy (:data:`REMEDIES`) is applied and recorded as a *condition*
("needs trust_remote_code", "no chat template: set custom_chat_template"); then the doctor runs its stages with
the remedies, the native patches the model type supports in stage 2, and in stages 3-5 the engines fsdp and fsdp2
plus an fsdp2 LoRA actor (:data:`VARIANTS`), in one torchrun of 2 ranks per model (2 ranks because FSDP only
shards, and the weight stream only gathers, with more than one rank; one launch per model pays torchrun's
start-up once). A model stops at its first failing stage, as the doctor does.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from fsdpcfg.doctor.report import FAIL, NOT_RUN, PASS, SKIP, Report
from fsdpcfg.doctor.smoke import Variant
from fsdpcfg.redact import write_private

RECIPE = "qwen_grpo"
#: engines of stages 3-5 (a LoRA actor costs one more GRPO trainer per model, ~10 s on the tiny models).
VARIANTS = [Variant("fsdp"), Variant("fsdp2"), Variant("fsdp2", lora=True)]
#: a minimal Jinja chat template (the matrix's remedy for a tokenizer without one; quotes kept out for Hydra).
CHAT_TEMPLATE = (
    "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant: {% endif %}"
)
#: rule ID -> (condition as the report states it, overrides that satisfy it).
REMEDIES: dict[str, tuple[str, list[str]]] = {
    "FC402": ("needs trust_remote_code", ["actor_rollout_ref.model.trust_remote_code=true"]),
    "FC403": (
        "no chat template: set custom_chat_template",
        [f"actor_rollout_ref.model.custom_chat_template='{CHAT_TEMPLATE}'"],
    ),
}
#: warning rule ID -> (condition, overrides): a warning whose fix the matrix applies, as a user should.
WARNING_REMEDIES: dict[str, tuple[str, list[str]]] = {
    "FC471": (
        "attention soft-capping: eager attention (sdpa skips the cap)",
        ["+actor_rollout_ref.model.override_config.attn_implementation=eager"],
    ),
}
#: warning rule ID -> note recorded beside the conditions.
NOTES = {"FC404": "no pad token: pads with eos"}


@dataclass
class ModelRow:
    """One model of the matrix: its asset, conditions, notes and doctor report."""

    asset: str
    source: str
    conditions: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    report: Report | None = None


def default_models() -> list[str]:
    """The assets the matrix runs: every default asset (tiny real architectures plus config-only Qwen-7B)."""
    from fsdpcfg.assets import default_names

    return default_names()


def find_conditions(overrides: list[str]) -> tuple[list[str], list[str], list[str]]:
    """Run the static check, apply :data:`REMEDIES` for its errors and :data:`WARNING_REMEDIES` for its warnings
    until none applies.

    Returns:
        ``(overrides + remedies, conditions, notes)``.
    """
    from fsdpcfg.check import check_overrides

    conditions: list[str] = []
    notes: list[str] = []
    overrides = list(overrides)
    for _ in range(len(REMEDIES) + len(WARNING_REMEDIES) + 1):
        findings = check_overrides(overrides)
        remedies = {
            f.rule: (REMEDIES if f.severity == "error" else WARNING_REMEDIES)[f.rule]
            for f in findings
            if (f.severity == "error" and f.rule in REMEDIES)
            or (f.severity == "warning" and f.rule in WARNING_REMEDIES)
        }
        todo = [r for r, (cond, _) in remedies.items() if cond not in conditions]
        notes = sorted({NOTES[f.rule] for f in findings if f.rule in NOTES})
        if not todo:
            break
        for rule in todo:
            conditions.append(remedies[rule][0])
            overrides += remedies[rule][1]
    return overrides, conditions, notes


def _native_patches(path: Path) -> list[str]:
    """The native patches declaring support for the model type in ``path``/config.json."""
    from fsdpcfg.patches import REGISTRY

    model_type = json.loads((path / "config.json").read_text()).get("model_type")
    return [
        p.name
        for p in REGISTRY
        if p.impls and "native" in p.launchers and "cpu" in p.devices and p.supports(model_type)
    ]


def run_model(asset: str, *, timeout: float, echo: Callable[[str], None]) -> ModelRow:
    """Run the doctor on one asset (built first when missing) with the remedies its static check asks for."""
    from fsdpcfg.assets import ensure, get_spec
    from fsdpcfg.doctor.runner import run_doctor

    path = ensure(asset, verbose=False)
    row = ModelRow(asset, get_spec(asset).source_label)
    overrides, row.conditions, row.notes = find_conditions(
        [f"+recipe={RECIPE}", f"actor_rollout_ref.model.path={path}"]
    )
    echo(f"{asset}: conditions: {', '.join(row.conditions) or 'none'}")
    row.report = run_doctor(
        overrides,
        variants=VARIANTS,
        patch_names=_native_patches(path),
        timeout=timeout,
        echo=echo,
        conditions=row.conditions,
    )
    return row


def _cell(report: Report, stage: int, variants: list[str] | None = None) -> str:
    if variants is None:
        s = report.status_of(stage)
        return {PASS: "yes", SKIP: "n/a"}.get(s, "**no**" if s == FAIL else "not run")
    parts = []
    for v in variants:
        s = report.status_of(stage, v)
        parts.append(f"{v} {'yes' if s == PASS else '**no**' if s == FAIL else '-'}")
    return ", ".join(parts)


def _logprob_cell(report: Report) -> str:
    rows = [r for r in report.results if r.stage == 5]
    if not rows:
        return "not run"
    measured = [r.data for r in rows if r.data.get("rollout_max_abs_diff") is not None]
    if not measured:  # stage 5 failed before it compared anything
        return "**no**"
    ok = all(d["rollout_max_abs_diff"] <= d["tolerance"] for d in measured)
    return ("yes" if ok else "**no**") + f" (max diff {max(d['rollout_max_abs_diff'] for d in measured):.1e})"


def _stopped(report: Report) -> str:
    f = report.failure
    if f is None or f.failure is None:  # a FAIL result always carries its Failure
        return ""
    return (
        f"stage {f.stage} {f.name}{' [' + f.variant + ']' if f.variant else ''}, boundary "
        f"*{f.failure.boundary}*: {f.failure.message[:300]}"
    )


def render_markdown(rows: list[ModelRow], *, seconds: float, versions: dict[str, str], date: str) -> str:
    """The compatibility report: header (date, versions, how it was made), one table row per model, details."""
    import platform

    names = [v.name for v in VARIANTS]
    lines = [
        "# Model compatibility (generated by `fsdpcfg doctor --matrix`)",
        "",
        f"Generated {date} on this machine ({platform.machine()}, {_cores()} CPU cores, no GPU) with "
        + ", ".join(f"{k} {v}" for k, v in versions.items())
        + f"; the matrix took {seconds / 60:.1f} min.",
        "",
        "Each model is a tiny scaled-down version of a real architecture (`fsdpcfg assets list`: the real "
        "`config.json`, or where the project has none the transformers config class's own defaults (the *real "
        "config* column then names the class, e.g. `Gemma2Config()`), scaled to 2 layers and hidden size 64, random "
        "weights, the real tokenizer or a stated stand-in), run through the doctor's stages with recipe "
        "`qwen_grpo` on the CPU: 0 static check, 1 load, "
        "2 patches vs the unpatched model, 3 SFT steps (native SFT trainer), 4 two GRPO steps with the `hf` "
        "rollout adapter (two weight synchronisations), 5 actor vs rollout log-probs after a third "
        "synchronisation and a checkpoint save/reload. Stages 3-5 run in one torchrun of 2 ranks (gloo) per "
        f"model, for the engines {', '.join(names)} (LoRA rank 8 on fsdp2, GRPO stages only). "
        "A model stops at its first failing "
        "stage. *Conditions* are what the static check required and the matrix then set (the recipe alone "
        "would stop there). Random weights mean the rewards and losses say nothing about quality: these are "
        "plumbing checks.",
        "",
        "**GPU:** not run. `scripts/gpu_check.sh` runs the doctor on CUDA for tiny-qwen2, tiny-llama3 and "
        "tiny-mixtral (with the GRPO loop on the full-size Qwen2.5-0.5B architecture); no GPU machine was lent to "
        "the session that generated this file, so every row below is CPU-only (fp32, gloo).",
        "",
        "| model (asset) | real config | load | patches | SFT step | GRPO step + rollout | log-prob match | "
        "checkpoint | conditions |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        rep = r.report
        cond = "; ".join(r.conditions + r.notes) or "none"
        if rep is None:
            lines.append(f"| {r.asset} | {r.source} | not run | | | | | | {cond} |")
            continue
        ckpt = "not run" if rep.status_of(5) == NOT_RUN else ("yes" if rep.status_of(5) == PASS else "**no**")
        check = next((x for x in rep.results if x.stage == 0), None)
        load = (
            f"**check failed** ({', '.join(check.failure.rules)})"
            if check is not None and check.status == FAIL and check.failure is not None
            else _cell(rep, 1)
        )
        lines.append(
            f"| {r.asset} | {r.source} | {load} | {_patches_cell(rep)} | "
            f"{_cell(rep, 3, ['fsdp', 'fsdp2'])} | {_cell(rep, 4, names)} | {_logprob_cell(rep)} | {ckpt} | "
            f"{cond} |"
        )
    lines += ["", "## Details", ""]
    for r in rows:
        rep = r.report
        if rep is None:
            continue
        loaded = next((x for x in rep.results if x.stage == 1), None)
        lines.append(
            f"- **{r.asset}** ({rep.seconds:.0f} s): "
            + (loaded.detail + "." if loaded is not None and loaded.status == PASS else "")
            + (f" Stopped at {_stopped(rep)}" if rep.failure else " All stages passed.")
        )
    from fsdpcfg.doctor.claims import render_claims

    by_asset = {r.asset: r for r in rows}

    def outcome(asset: str) -> str:
        r = by_asset.get(asset)
        if r is None or r.report is None:
            return "not in this run"
        cond = f" (with: {'; '.join(r.conditions)})" if r.conditions else ""
        return ("all stages passed" + cond) if r.report.ok else f"stopped at {_stopped(r.report)[:160]}"

    lines += [""] + render_claims(outcome)
    lines += [
        "Regenerate: `fsdpcfg doctor --matrix` (writes this file; about "
        f"{seconds / 60:.0f} min on 2 CPU cores). One model: `fsdpcfg doctor --matrix --models tiny-qwen2 "
        "--output /tmp/one.md`.",
        "",
    ]
    return "\n".join(lines)


def _patches_cell(report: Report) -> str:
    row = next((r for r in report.results if r.stage == 2), None)
    if row is None:
        return "not run"
    if row.status == SKIP:
        return "none supported"
    names = [k for k in row.data if "+" not in k]
    return ("yes" if row.status == PASS else "**no**") + f" ({', '.join(names)})"


def _cores() -> int:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def versions() -> dict[str, str]:
    """torch, transformers, peft and fsdpcfg versions as installed."""
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in ("torch", "transformers", "peft", "fsdpcfg"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "not installed"
    return out


def run_matrix(
    *,
    models: list[str] | None = None,
    output: Path | None = None,
    timeout: float = 900.0,
    echo: Callable[[str], None] = print,
) -> int:
    """Run every model, write the Markdown report to ``output`` (default ``docs/compatibility.md`` of the
    checkout), and return 0 (the report records failures; they are findings, not errors of the command).

    Raises:
        ConfigError: an unknown asset name.
    """
    from fsdpcfg import paths
    from fsdpcfg.assets import get_spec

    names = models or default_models()
    for n in names:
        get_spec(n)
    output = output or paths.conf_dir("ppo").parent / "docs" / "compatibility.md"
    t0 = time.perf_counter()
    rows = []
    for n in names:
        t = time.perf_counter()
        rows.append(run_model(n, timeout=timeout, echo=echo))
        rep = rows[-1].report
        verdict = "not run" if rep is None else "ok" if rep.ok else "stopped: " + _stopped(rep)
        echo(f"{n}: {verdict} ({time.perf_counter() - t:.0f}s)")
    text = render_markdown(rows, seconds=time.perf_counter() - t0, versions=versions(), date=time.strftime("%Y-%m-%d"))
    output.parent.mkdir(parents=True, exist_ok=True)
    write_private(output, text)
    echo(f"wrote {output}")
    return 0
