"""The result of a check: one :class:`Finding` per problem, carrying everything a person needs to act."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Severity = Literal["error", "warning", "info"]


@dataclass
class Finding:
    """One problem found in a config.

    Attributes:
        rule: the stable rule ID (for example ``FC201``).
        severity: ``error`` (the run must not start), ``warning`` (it may, the user must know), ``info``.
        keys: the full dotted keys involved, in verl's names.
        message: what is wrong, with the numbers.
        fix: what to do.
        derivation: how the numbers in the message were derived (``16 = 2 nodes x 8 GPUs``), if any.
        provenance: key -> where its value came from (``file:line``, group option, command line, default).
        location: ``(file, line or None)`` of a problem no key's value locates (a YAML syntax error, a file
            that was skipped); ``None`` otherwise (the keys' provenance locates it).
    """

    rule: str
    severity: Severity
    keys: list[str]
    message: str
    fix: str
    derivation: str | None = None
    provenance: dict[str, str] = field(default_factory=dict)
    location: tuple[str, int | None] | None = None

    def to_json(self) -> dict:
        """Return the machine form: exactly ``rule``, ``severity``, ``keys``, ``message``, ``fix``."""
        return {
            "rule": self.rule,
            "severity": self.severity,
            "keys": list(self.keys),
            "message": self.message,
            "fix": self.fix,
        }
