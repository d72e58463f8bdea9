"""Second opinion: verl 0.9.1's own config-time validation, run in a subprocess, compared with fsdpcfg's.

``fsdpcfg check --verl`` asks verl itself what it thinks of a config: verl composes it with its own Hydra
configs, runs ``auto_set_device`` and ``validate_config`` (as ``verl.trainer.main_ppo`` does before Ray
starts) and converts the sections its workers convert into its config dataclasses (see
:mod:`fsdpcfg.check.verl_opinion._worker`). It costs one Python process that imports verl (~10 s), so it runs
only when asked; many configs share one process (:func:`verl_opinions`).

Reading the comparison (:func:`compare`):

* ``agree``: both reject or both accept.
* ``fsdpcfg-bug``: verl rejects a config fsdpcfg accepted. A missing fsdpcfg rule; report it.
* ``verl-gap``: fsdpcfg rejects a config verl accepts. Usually what fsdpcfg exists for: verl accepts it
  at config time and fails (or silently misbehaves) later, on the cluster.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fsdpcfg import paths
from fsdpcfg.redact import write_private

#: Seconds one worker process may take (import ~10 s, then well under a second per config).
DEFAULT_TIMEOUT = 300


class VerlUnavailable(RuntimeError):
    """verl cannot be imported in the interpreter the worker runs (not installed, or broken)."""


@dataclass
class VerlOpinion:
    """What verl 0.9.1 says about one config at config time (before any GPU work).

    Attributes:
        accepted: True when verl composed, validated and converted the config without an error.
        error: verl's error (``ExceptionType: message``) when it rejected the config, else None.
        stage: where verl stopped: ``compose``, ``auto_set_device``, ``validate_config``, ``resolve`` or
            ``dataclass:<section>`` (e.g. ``dataclass:actor_rollout_ref.rollout``); None when accepted.
        ignored_keys: keys of the config that verl's own config does not define: verl takes them without a
            word and never reads them.
        missing_keys: required values (``???``) left unset that verl's defaults would not fill.
        notices: what verl printed or changed on the way (``auto_set_device: trainer.device cpu -> cuda``,
            its WARNING/NOTICE lines).
        seconds: time verl spent on this config (the import excluded).
        not_run: why verl's checks past composing were not run (a ``_target_`` that is not verl's own: verl would
            import and call it; fsdpcfg runs no code a config names), else None; ``accepted`` is then only
            verl's composition's verdict.
    """

    accepted: bool
    error: str | None = None
    stage: str | None = None
    ignored_keys: list[str] = field(default_factory=list)
    missing_keys: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    seconds: float = 0.0
    not_run: str | None = None


def _tree(composed: Any) -> dict[str, Any]:
    from fsdpcfg.check.to_verl import verl_tree

    return verl_tree(composed, strict=False)


def _job(composed: Any) -> dict[str, Any]:
    """The worker's job for a composed config: its kind, its verl tree and verl's composition it extends."""
    from fsdpcfg.check.to_verl import verl_composition

    return {
        "kind": getattr(composed, "kind", "ppo"),
        "tree": _tree(composed),
        "composition": verl_composition(composed),
    }


def run_worker(
    jobs: list[dict[str, Any]], *, timeout: float = DEFAULT_TIMEOUT, python: str | None = None
) -> dict[str, Any]:
    """Run :mod:`fsdpcfg.check.verl_opinion._worker` on ``jobs`` (``{"kind", "tree"}`` dicts) in one subprocess and
    return its JSON answer (``verl_version``, ``import_seconds``, ``results``).

    Raises:
        VerlUnavailable: verl cannot be imported by ``python`` (default: this interpreter).
        RuntimeError: the worker crashed or ran past ``timeout`` (its stderr tail is in the message).
    """
    with tempfile.TemporaryDirectory(prefix="fsdpcfg-verlcheck-") as d:
        inp, out = Path(d, "in.json"), Path(d, "out.json")
        write_private(inp, json.dumps({"jobs": jobs}))
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(paths.REPO_DIR), os.environ.get("PYTHONPATH")])),
        }
        try:
            proc = subprocess.run(
                [python or sys.executable, "-m", "fsdpcfg.check.verl_opinion._worker", str(inp), str(out)],
                capture_output=True,
                text=True,
                timeout=timeout,
                env=env,
                cwd=d,
            )
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"verl's validation ran past {timeout} s") from None
        answer = json.loads(out.read_text()) if out.is_file() else {}
        if proc.returncode == 3:
            raise VerlUnavailable(answer.get("error", "verl is not importable"))
        if proc.returncode != 0 or "results" not in answer:
            tail = "\n".join(proc.stderr.strip().splitlines()[-15:])
            raise RuntimeError(f"verl's validation worker failed (exit {proc.returncode}):\n{tail}")
        return answer


def verl_opinions(composeds: Iterable[Any], *, timeout: float = DEFAULT_TIMEOUT) -> list[VerlOpinion]:
    """Return verl's opinion of each composed config (``fsdpcfg.compose.Composed``), all in one subprocess.

    Raises:
        ConfigError: a config cannot be turned into verl's tree (an unresolvable interpolation).
        VerlUnavailable, RuntimeError: see :func:`run_worker`.
    """
    jobs = [_job(c) for c in composeds]
    if not jobs:
        return []
    answer = run_worker(jobs, timeout=timeout)
    return [VerlOpinion(**r) for r in answer["results"]]


def verl_opinions_of_exports(
    exports: Iterable[tuple[str, str | Path, list[str]]], *, timeout: float = DEFAULT_TIMEOUT
) -> list[VerlOpinion]:
    """Return verl's opinion of exported configs: ``(kind, folder holding config.yaml, overrides)`` each,
    composed the way verl's command line composes them, all in one subprocess.

    Raises:
        VerlUnavailable, RuntimeError: see :func:`run_worker`.
    """
    jobs = [{"kind": k, "config_dir": str(Path(d).absolute()), "overrides": list(o)} for k, d, o in exports]
    if not jobs:
        return []
    return [VerlOpinion(**r) for r in run_worker(jobs, timeout=timeout)["results"]]


def verl_opinion(composed: Any, *, timeout: float = DEFAULT_TIMEOUT) -> VerlOpinion:
    """Return verl's opinion of one composed config (one subprocess, ~10 s). See :func:`verl_opinions`."""
    return verl_opinions([composed], timeout=timeout)[0]


@dataclass
class Comparison:
    """fsdpcfg's verdict next to verl's.

    Attributes:
        outcome: ``agree``, ``fsdpcfg-bug`` (verl rejects, fsdpcfg accepted), ``verl-gap`` (fsdpcfg
            rejects, verl accepts) or ``not-run`` (verl's checks would run code the config names: not asked).
        fsdpcfg_errors: rule IDs of fsdpcfg's error findings.
        opinion: verl's opinion.
        explanation: one or two sentences for the user.
    """

    outcome: str
    fsdpcfg_errors: list[str]
    opinion: VerlOpinion
    explanation: str


def compare(findings: Iterable[Any], opinion: VerlOpinion) -> Comparison:
    """Compare fsdpcfg's findings (objects with ``rule`` and ``severity``) with verl's opinion."""
    errors = [f.rule for f in findings if f.severity == "error"]
    if opinion.not_run:
        return Comparison("not-run", errors, opinion, f"verl's checks were not run: {opinion.not_run}")
    if opinion.accepted and not errors:
        outcome, text = "agree", "both accept the config"
    elif not opinion.accepted and errors:
        outcome, text = "agree", f"both reject it (verl at {opinion.stage}: {opinion.error})"
    elif not opinion.accepted:
        outcome = "fsdpcfg-bug"
        text = (
            f"verl rejects it at {opinion.stage} ({opinion.error}) but fsdpcfg found no error: a missing "
            "fsdpcfg rule, please report it"
        )
    else:
        outcome = "verl-gap"
        extra = f"; verl ignores {', '.join(opinion.ignored_keys)}" if opinion.ignored_keys else ""
        text = (
            f"fsdpcfg rejects it ({', '.join(errors)}) and verl accepts it at config time{extra}: verl would "
            "fail or misbehave later, after the cluster started"
        )
    return Comparison(outcome, errors, opinion, text)


def format_opinion(cmp: Comparison) -> str:
    """Render a comparison for ``fsdpcfg check --verl``."""
    op = cmp.opinion
    head = "not asked" if op.not_run else "accepts" if op.accepted else f"rejects at {op.stage}"
    lines = [f"verl 0.9.1 {head} [{cmp.outcome}] {cmp.explanation}"]
    if op.ignored_keys:
        lines.append(f"  verl would ignore: {', '.join(op.ignored_keys)}")
    if op.missing_keys:
        lines.append(f"  verl finds unset required values: {', '.join(op.missing_keys)}")
    lines += [f"  verl: {n}" for n in op.notices]
    return "\n".join(lines)


@dataclass
class SecondOpinion:
    """verl's opinion of every checked config, for ``fsdpcfg check --verl``.

    Attributes:
        rows: ``(label, comparison or None, note)`` per checked input; None with a note when verl could not
            be asked (no composed config, a tree verl cannot take).
        text: the human report.
    """

    rows: list[tuple[str, Comparison | None, str]]
    text: str

    @property
    def verl_rejects(self) -> bool:
        """True when verl rejected at least one config."""
        return any(c is not None and not c.opinion.accepted for _, c, _ in self.rows)

    @property
    def fsdpcfg_bugs(self) -> list[str]:
        """Labels of the configs verl rejects although fsdpcfg found no error."""
        return [label for label, c, _ in self.rows if c is not None and c.outcome == "fsdpcfg-bug"]

    def to_json(self) -> list[dict[str, Any]]:
        """One ``{"input", "outcome", "accepted", "stage", "error", "ignored_keys", "note"}`` per input."""
        out = []
        for label, c, note in self.rows:
            op = c.opinion if c else None
            out.append(
                {
                    "input": label,
                    "outcome": c.outcome if c else None,
                    "accepted": op.accepted if op else None,
                    "stage": op.stage if op else None,
                    "error": op.error if op else None,
                    "ignored_keys": op.ignored_keys if op else [],
                    "note": "; ".join(filter(None, [c.explanation if c else "", note])),
                }
            )
        return out


def second_opinion(results: Iterable[Any], *, timeout: float = DEFAULT_TIMEOUT) -> SecondOpinion:
    """Ask verl about every checked input (objects with ``label``, ``findings``, ``composed``, as
    ``fsdpcfg check`` collects them) in one subprocess and compare with fsdpcfg's findings. A run script's command
    (one with a ``verl_job``) is given to verl as its Hydra gets it, the script's own override words on verl's
    ``--config-path``/``--config-name``, not as the tree the check composed (which takes a misspelt key that
    verl's Hydra refuses).

    Raises:
        UsageError: verl is not installed (``--verl`` needs it).
    """
    from fsdpcfg.errors import ConfigError, UsageError

    results = list(results)
    rows: list[tuple[str, Comparison | None, str]] = []
    asked: list[tuple[int, Any]] = []
    for r in results:
        script = getattr(r, "verl_job", None)
        if script is not None:  # a run script's command: verl gets its own words, not a tree the check composed
            job, note = script
            if job is None:
                rows.append((r.label, None, note))
            else:
                asked.append((len(rows), job))
                rows.append((r.label, None, note))
            continue
        if getattr(r, "composed", None) is None:
            rows.append((r.label, None, "not asked: no composed config (the input did not compose)"))
            continue
        try:
            asked.append((len(rows), _job(r.composed)))
            rows.append((r.label, None, ""))
        except ConfigError as e:
            rows.append((r.label, None, f"not asked: {e.message}"))
    if asked:
        try:
            answer = run_worker([job for _, job in asked], timeout=timeout)
        except VerlUnavailable as e:
            raise UsageError(
                f"--verl needs verl 0.9.1 in this environment: {e}",
                fix="pip install 'verl[verl-core]==0.9.1' (CPU is enough), or drop --verl",
            ) from None
        for (i, _), res in zip(asked, answer["results"], strict=True):
            label, _, note = rows[i]
            findings = next(r.findings for r in results if r.label == label)
            rows[i] = (label, compare(findings, VerlOpinion(**res)), note)
    lines = [f"VERL {'(' + answer['verl_version'] + ') ' if asked else ''}SECOND OPINION"]
    for label, c, note in rows:
        prefix = f"  {label}: " if len(rows) > 1 else "  "
        if c is None:
            lines.append(prefix + note)
        else:
            lines.append(prefix + format_opinion(c).replace("\n", "\n  "))
            if note:
                lines.append(f"    asked with the command's own overrides; {note}")
    return SecondOpinion(rows, "\n".join(lines))
