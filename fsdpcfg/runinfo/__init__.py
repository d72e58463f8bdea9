"""Run-folder metadata: what a run was asked to do and what it did, written next to its metrics.

    <fsdpcfg.run_dir>/
        config.yaml          the resolved config the workers read, secrets saved as ${oc.env:NAME} references
        overrides.yaml       the command-line overrides as given (secret literals masked)
        run_info.json        provenance of every value, group choices, package versions, git commit, hardware,
                             the plan, the command line, the start time
        startup_audit.json   written by rank 0 of the loop: the settings in effect after start-up (FSDP version,
                             mesh, dtypes, patches, rollout backend) next to what was asked; a mismatch stops the run

Every file here is written through :func:`write_private` and every printed line through the CLI's scrubbed
streams: no secret's value is saved or shown (:mod:`fsdpcfg.redact`).

Public API: :func:`write_run_info`, :func:`redact`, :func:`scrub_text`, :func:`write_private`,
:func:`audit_startup`, :func:`expected_audit`,
:func:`compare_audit`, :func:`check_audit_file`, :data:`AUDIT_FILE`, :data:`RUN_INFO_FILE`.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from fsdpcfg import yamlio
from fsdpcfg.redact import REDACTED, contains_secret, redact, scrub_text, write_private
from fsdpcfg.runinfo._collect import git_info, hardware, package_versions
from fsdpcfg.runinfo.audit import AUDIT_FILE, audit_startup, check_audit_file, compare_audit, expected_audit

__all__ = [
    "AUDIT_FILE",
    "OVERRIDES_FILE",
    "REDACTED",
    "RUN_INFO_FILE",
    "audit_startup",
    "check_audit_file",
    "compare_audit",
    "contains_secret",
    "expected_audit",
    "git_info",
    "hardware",
    "package_versions",
    "redact",
    "redact_overrides",
    "run_config",
    "scrub_text",
    "write_private",
    "write_run_info",
]

RUN_INFO_FILE = "run_info.json"
OVERRIDES_FILE = "overrides.yaml"


def _atomic_write(run_dir: Path, name: str, text: str) -> Path:
    from fsdpcfg.runinfo.faults import write_file_in

    return write_file_in(run_dir, name, text, "fsdpcfg.run_dir")


def redact_overrides(overrides: list[str]) -> list[str]:
    """Mask the value of every ``key=value`` override whose key names a secret and whose value is not an
    ``${oc.env:NAME}`` reference."""
    from fsdpcfg.secrets import env_reference, is_secret_key

    out = []
    for o in overrides:
        key, sep, value = o.partition("=")
        if sep and is_secret_key(key.lstrip("+~")) and value and not env_reference(value):
            o = f"{key}={REDACTED}"
        out.append(scrub_text(o))
    return out


def run_config(composed: Any) -> dict[str, Any]:
    """The resolved config of ``composed`` with secrets saved as their ``${oc.env:NAME}`` references: what the
    launcher writes to ``config.yaml``.

    Raises:
        ConfigError: an interpolation cannot be resolved.
    """
    return redact(composed.to_container(resolve=True), composed.to_container(resolve=False))


def write_run_info(
    run_dir: str | Path, composed: Any, *, plan: Any = None, extra: dict[str, Any] | None = None
) -> Path:
    """Write ``overrides.yaml`` and ``run_info.json`` into ``run_dir`` (created); return the JSON's path.

    Raises:
        WriteFault: the folder cannot be written; PathEscape: a file would land outside ``run_dir``.

    Args:
        composed: the :class:`fsdpcfg.compose.Composed` the run was made from (overrides, choices, provenance).
        plan: the run's :class:`fsdpcfg.plan.Plan` (``None`` for launcher=verl).
        extra: more entries for ``run_info.json`` (a sweep adds its point number and sweep folder).
    """
    from fsdpcfg.verlref import flatten

    run_dir = Path(run_dir)

    raw = composed.to_container(resolve=False)
    provenance = {}
    for key in flatten(raw):
        src = composed.provenance.source_of(key)
        provenance[key] = str(src) if src is not None else "unknown"
    overrides = redact_overrides(list(composed.overrides))
    info = {
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "command": redact_overrides(list(sys.argv)),
        "overrides": overrides,
        "choices": dict(composed.choices),
        "kind": getattr(composed, "kind", "ppo"),
        "provenance": provenance,
        "packages": package_versions(),
        "git": git_info(),
        "hardware": hardware(),
        "plan": plan.to_dict() if plan is not None else None,
        **(extra or {}),
    }
    _atomic_write(run_dir, OVERRIDES_FILE, yamlio.dump(overrides))
    return _atomic_write(run_dir, RUN_INFO_FILE, json.dumps(info, indent=2, default=str) + "\n")
