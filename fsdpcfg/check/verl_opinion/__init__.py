"""Second opinion: verl 0.9.1's own config-time validation, run in a subprocess, compared with fsdpcfg's.

``fsdpcfg check --verl`` asks verl itself what it thinks of a config: verl composes it with its own Hydra
configs, runs ``auto_set_device`` and ``validate_config`` (as ``verl.trainer.main_ppo`` does before Ray
starts) and converts the sections its workers convert into its config dataclasses (see
:mod:`fsdpcfg.check.verl_opinion._worker`). It costs one Python process that imports verl (~10 s), so it runs
only when asked; many configs share one process (:func:`verl_opinions`), and so do the later calls of the same
Python process: the worker stays up after its first answer (:func:`run_worker`), so a program (or a test session)
that asks verl again does not import verl again.

Reading the comparison (:func:`compare`):

* ``agree``: both reject or both accept.
* ``fsdpcfg-bug``: verl rejects a config fsdpcfg accepted. A missing fsdpcfg rule; report it.
* ``verl-gap``: fsdpcfg rejects a config verl accepts. Usually what fsdpcfg exists for: verl accepts it
  at config time and fails (or silently misbehaves) later, on the cluster.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time
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


class _Worker:
    """One ``python -m fsdpcfg.check.verl_opinion._worker --serve`` process: it imports verl once, then answers one
    request (a JSON file of jobs) per line it reads on its stdin, one line per answer on its stdout (what verl
    prints goes to the process's stderr, a file of its private folder, never into the answers). It exits when its
    stdin closes, so it never outlives the process that started it."""

    def __init__(self, python: str, env: dict[str, str]) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="fsdpcfg-verlcheck-"))
        self.stderr_path = self.dir / "stderr.txt"
        self.calls = 0
        self.owner = os.getpid()
        self.lock = threading.Lock()
        self._buffer = b""
        with open(self.stderr_path, "wb") as err:
            # cwd: the private folder, so that `-m` puts no folder of the user's on the worker's sys.path
            self.proc = subprocess.Popen(
                [python, "-m", "fsdpcfg.check.verl_opinion._worker", "--serve"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                env=env,
                cwd=self.dir,
            )

    def alive(self) -> bool:
        return self.proc.poll() is None and self.owner == os.getpid()

    def _stderr_tail(self) -> str:
        try:
            text = self.stderr_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.strip().splitlines()[-15:])

    def _read_line(self, deadline: float) -> bytes | None:
        """The worker's next line, or None at its end (it exited); TimeoutError past ``deadline``."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise TimeoutError
            chunk = os.read(fd, 65536)
            if not chunk:
                return None
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line

    def ask(self, jobs: list[dict[str, Any]], timeout: float) -> dict[str, Any]:
        """Hand the worker ``jobs`` and return its answer; the first call also waits for verl's import."""
        assert self.proc.stdin is not None
        self.calls += 1
        inp, out = self.dir / f"in-{self.calls}.json", self.dir / f"out-{self.calls}.json"
        write_private(inp, json.dumps({"jobs": jobs}))
        deadline = time.monotonic() + timeout
        try:
            try:
                self.proc.stdin.write((json.dumps([str(inp), str(out)]) + "\n").encode())
                self.proc.stdin.flush()
            except BrokenPipeError:
                pass  # it exited (verl is missing, or it crashed): its exit code says which, below
            try:
                line = self._read_line(deadline)
            except TimeoutError:
                raise RuntimeError(f"verl's validation ran past {timeout} s") from None
            if line is None:
                code = self.proc.wait()
                answer = json.loads(out.read_text()) if out.is_file() else {}
                if code == 3:
                    raise VerlUnavailable(answer.get("error", "verl is not importable"))
                raise RuntimeError(f"verl's validation worker failed (exit {code}):\n{self._stderr_tail()}")
            answer = json.loads(out.read_text()) if out.is_file() else {}
            if "results" not in answer:
                raise RuntimeError(f"verl's validation worker failed (no answer):\n{self._stderr_tail()}")
            return answer
        finally:
            inp.unlink(missing_ok=True)
            out.unlink(missing_ok=True)

    def close(self) -> None:
        """Stop the process (it holds nothing to save) and remove its folder; a forked child of the process that
        started it leaves both to that process."""
        if self.owner != os.getpid():
            return
        for pipe in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(OSError):
                if pipe is not None:
                    pipe.close()
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


#: The environment variables that decide what the worker imports and what verl's checks see: ``PYTHONPATH`` (where
#: fsdpcfg, verl and a config's modules are found), verl's own switches (``VERL_USE_EXTERNAL_MODULES``, its plugins,
#: ModelScope), the GPUs ``auto_set_device`` looks for, Hydra's (``HYDRA_FULL_ERROR``: the error texts).
_WORKER_ENV_PREFIXES = ("PYTHONPATH", "VERL_", "CUDA_", "HYDRA_")

#: The running workers of this process, by interpreter and the variables of :data:`_WORKER_ENV_PREFIXES`: verl is
#: imported once per such pair; a call that changed one of them gets a worker of its own. (Not the whole
#: environment: a variable nothing of verl's config-time checks reads, as a test runner's per-test one, would start
#: a worker for every call.)
_WORKERS: dict[tuple[str, tuple[tuple[str, str], ...]], _Worker] = {}
_WORKERS_LOCK = threading.Lock()


def close_workers() -> None:
    """Stop the workers this process started (also run at exit); the next call starts a fresh one."""
    with _WORKERS_LOCK:
        workers = list(_WORKERS.values())
        _WORKERS.clear()
    for w in workers:
        w.close()


atexit.register(close_workers)


def _worker_for(python: str | None) -> tuple[tuple[str, tuple[tuple[str, str], ...]], _Worker]:
    """This process's worker for ``python`` (default: this interpreter) and the current environment, started when
    there is none (or it exited); with its key in :data:`_WORKERS`."""
    python = python or sys.executable
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(paths.REPO_DIR), os.environ.get("PYTHONPATH")])),
    }
    key = (python, tuple(sorted((k, v) for k, v in env.items() if k.startswith(_WORKER_ENV_PREFIXES))))
    with _WORKERS_LOCK:
        worker = _WORKERS.get(key)
        if worker is None or not worker.alive():
            if worker is not None:
                worker.close()
            worker = _WORKERS[key] = _Worker(python, env)
    return key, worker


def start_worker(python: str | None = None) -> None:
    """Start the worker now, without waiting: it imports verl (~10 s) while the caller does its own work (composing
    and checking the configs it will ask about), and the next :func:`run_worker` call of this process uses it. A
    worker that cannot import verl exits; that call then raises :class:`VerlUnavailable`."""
    _worker_for(python)


def run_worker(
    jobs: list[dict[str, Any]], *, timeout: float = DEFAULT_TIMEOUT, python: str | None = None
) -> dict[str, Any]:
    """Run :mod:`fsdpcfg.check.verl_opinion._worker` on ``jobs`` (``{"kind", "tree"}`` dicts) and return its JSON
    answer (``verl_version``, ``import_seconds``, ``results``).

    The worker is a subprocess that imports verl once and stays up for the next call of this process with the same
    interpreter and the same variables of :data:`_WORKER_ENV_PREFIXES` (verl's import is most of a call's time:
    ~10 s, then about a second a config);
    a worker that failed or ran past ``timeout`` is stopped, and the next call starts a fresh one. Each job is
    checked as in a fresh worker: the jobs of one call already share one process, and the worker keeps nothing
    between jobs but verl's imported modules and its own unchanged default config.

    Raises:
        VerlUnavailable: verl cannot be imported by ``python`` (default: this interpreter).
        RuntimeError: the worker crashed or ran past ``timeout`` (its stderr tail is in the message).
    """
    key, worker = _worker_for(python)
    with worker.lock:
        try:
            return worker.ask(jobs, timeout)
        except BaseException:
            # whatever stopped the call (verl missing, a crash, the timeout, an interrupt) leaves the worker of no
            # further use: a later call must not read this call's answer
            with _WORKERS_LOCK:
                if _WORKERS.get(key) is worker:
                    del _WORKERS[key]
            worker.close()
            raise


def verl_opinions(composeds: Iterable[Any], *, timeout: float = DEFAULT_TIMEOUT) -> list[VerlOpinion]:
    """Return verl's opinion of each composed config (``fsdpcfg.compose.Composed``), all in one call of the worker.

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
    composed the way verl's command line composes them, all in one call of the worker.

    Raises:
        VerlUnavailable, RuntimeError: see :func:`run_worker`.
    """
    jobs = [{"kind": k, "config_dir": str(Path(d).absolute()), "overrides": list(o)} for k, d, o in exports]
    if not jobs:
        return []
    return [VerlOpinion(**r) for r in run_worker(jobs, timeout=timeout)["results"]]


def verl_opinion(composed: Any, *, timeout: float = DEFAULT_TIMEOUT) -> VerlOpinion:
    """Return verl's opinion of one composed config (~10 s for verl's import in the first call of a process, well
    under a second after). See :func:`verl_opinions`."""
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
