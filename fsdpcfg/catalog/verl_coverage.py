"""``docs/verl-coverage.md``: every check verl makes on config values, joined with the fsdpcfg rule that
catches it before launch, or the reason it can only fail at run time.

The checks come from :mod:`fsdpcfg.catalog.verl_checks` (the installed verl's source, parsed); the mapping
``check id -> rule IDs | runtime reason`` is data, ``fsdpcfg/data/verl_coverage.yaml``, written by reading
each check. A test keeps the two equal (a new verl check fails it until mapped) and the page fresh:

    python scripts/gen_verl_coverage.py            # rewrite docs/verl-coverage.md
    python scripts/gen_verl_coverage.py --check    # exit 1 when it is stale or a check is unmapped
    python scripts/gen_verl_coverage.py --missing  # print YAML stubs for the checks the mapping lacks

Needs verl installed (its files are read, never imported); nothing here is on the ``fsdpcfg check`` path.
"""

from __future__ import annotations

import importlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args

import yaml

from fsdpcfg import paths, verlref
from fsdpcfg.catalog import verl_checks
from fsdpcfg.catalog.verl_checks import Check

#: Where the generated page lives.
PAGE = paths.REPO_DIR / "docs" / "verl-coverage.md"
#: The mapping, written by hand.
MAPPING = paths.data_dir() / "verl_coverage.yaml"
RUNTIME = "runtime:"
#: Rules for what verl does not check at all and fails on after start-up (data files, reward function, template).
BEYOND_VERL = ("FC403", "FC408", "FC410", "FC411", "FC412", "FC413", "FC414", "FC415", "FC417")


@dataclass(frozen=True)
class Mapping:
    """The parsed mapping file.

    Attributes:
        checks: check id -> ``FC201 FC205`` (rule IDs) or ``runtime: REASON`` (a code of ``reasons`` or text).
        reasons: reason code -> text.
        names: registry name -> ``module:ATTRIBUTE`` of fsdpcfg's own copy of the names (a tuple, a frozenset or
            a ``Literal``), which must equal verl's.
        evidence: check id -> overrides that break the check (``SFT ...``: on the SFT recipe), which a test runs
            through ``fsdpcfg check`` to show that a mapped rule reports them.
        oracle_disagreements: id -> ``{rules, verl, where, reason}``: where ``fsdpcfg check`` and verl disagree on
            purpose about an override of the generated sets verl judges
            (tests/check/verl_opinion/test_generated_overrides_oracle.py, whose table matches each id).
    """

    checks: dict[str, str]
    reasons: dict[str, str]
    names: dict[str, str]
    evidence: dict[str, str]
    oracle_disagreements: dict[str, dict[str, str]] = field(default_factory=dict)


def load_mapping(path: Path = MAPPING) -> Mapping:
    """Read the mapping file.

    Raises:
        ValueError: the file is not a mapping with ``checks`` (a mapping of strings).
    """
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    checks = data.get("checks") or {}
    if not isinstance(checks, dict) or not all(isinstance(v, str) for v in checks.values()):
        raise ValueError(f"{path}: 'checks' must map each check id to 'FCnnn ...' or 'runtime: reason'")
    return Mapping(
        checks,
        dict(data.get("reasons") or {}),
        dict(data.get("registry_names") or {}),
        dict(data.get("evidence") or {}),
        dict(data.get("oracle_disagreements") or {}),
    )


def rule_ids(value: str) -> list[str]:
    """The rule IDs of a mapping value (``"FC201 FC205"``); empty for a runtime reason."""
    return [] if value.startswith(RUNTIME) else value.split()


def reason(value: str, mapping: Mapping) -> str:
    """The text of a runtime reason (a code of ``reasons`` expanded)."""
    text = value[len(RUNTIME) :].strip()
    return mapping.reasons.get(text, text)


def fsdpcfg_names(ref: str) -> frozenset[str]:
    """fsdpcfg's own copy of a registry's names, from ``module:ATTRIBUTE`` (a tuple/set of strings or a
    ``typing.Literal``)."""
    module, attr = ref.split(":")
    obj: Any = getattr(importlib.import_module(module), attr)
    args = get_args(obj)
    return frozenset(args if args else obj)


@dataclass(frozen=True)
class Row:
    """One check with its mapping (``value`` is ``None`` when unmapped)."""

    check: Check
    value: str | None


def join(checks: list[Check] | None = None, mapping: Mapping | None = None) -> list[Row]:
    """Each check of verl with its mapping value."""
    checks = verl_checks.scan() if checks is None else checks
    mapping = mapping or load_mapping()
    return [Row(c, mapping.checks.get(c.id)) for c in checks]


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _code(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return "`" + text.replace("`", "'").replace("|", "\\|") + "`"


def render(rows: list[Row] | None = None, mapping: Mapping | None = None) -> str:
    """The page's Markdown (deterministic: no dates, no absolute paths)."""
    mapping = mapping or load_mapping()
    rows = join(mapping=mapping) if rows is None else rows
    caught = [r for r in rows if r.value is not None and rule_ids(r.value)]
    runtime = [r for r in rows if r.value is not None and not rule_ids(r.value)]
    unmapped = [r for r in rows if r.value is None]
    out = [
        "# verl's own checks, and what fsdpcfg catches before launch",
        "",
        "<!-- generated by `python scripts/gen_verl_coverage.py` from the installed verl and "
        "fsdpcfg/data/verl_coverage.yaml; do not edit -->",
        "",
        f"**{len(rows)} checks found in verl {verlref.VERL_VERSION}: {len(caught)} caught before launch by "
        f"`fsdpcfg check`, {len(runtime)} runtime only"
        + (f", {len(unmapped)} not mapped yet" if unmapped else "")
        + ".**",
        "",
        "A *check* is an `assert` or a `raise` (under the `if` tests that lead to it) that verl runs on config "
        "values, or a name table verl looks a config value up in. They are found by parsing verl's source "
        "(`fsdpcfg/catalog/verl_checks.py`, nothing of verl is imported) in these files (paths under `verl/`):",
        "",
    ]
    for rel, scope in verl_checks.FILES.items():
        what = (
            "every check"
            if scope == "all"
            else "checks on config values (the condition reads a config "
            "object or a config leaf name), and every check of a validator"
        )
        out.append(f"- `{rel}`: {what}")
    out += [
        "",
        "and the registries " + ", ".join(f"`{r.name}` (`{r.key}`)" for r in verl_checks.REGISTRIES) + ".",
        "",
        "*Caught* names the fsdpcfg rules (`fsdpcfg explain RULE`) that report the same mistake in "
        "`fsdpcfg check`, before anything starts. *Runtime only* says why a check cannot be made before launch "
        "(it reads tensors, the machine, or a code path fsdpcfg does not check). *(tested)*: "
        "tests/catalog/test_verl_coverage.py breaks the check with the overrides in the mapping's `evidence` and "
        "asserts that the rule reports it.",
        "",
    ]
    codes: dict[str, int] = {}
    for r in runtime:
        code = r.value[len(RUNTIME) :].strip()  # type: ignore[index]
        codes[code] = codes.get(code, 0) + 1
    out += ["## Why a check is runtime only", "", "| reason | checks | why |", "|---|---|---|"]
    for code, n in sorted(codes.items(), key=lambda kv: (-kv[1], kv[0])):
        label = code if code in mapping.reasons else "(other)"
        out.append(f'| <a id="why-{label}"></a>{label} | {n} | {_cell(reason(RUNTIME + code, mapping))} |')
    out.append("")
    from fsdpcfg.catalog import ruleinfo

    table = ruleinfo.rules()
    out += [
        "## What verl does not check",
        "",
        "verl reads these only inside its workers, where a mistake is a raw traceback 15 s to minutes after "
        "start-up; `fsdpcfg check` opens the files (the head of each data file, the reward file parsed, never "
        "imported) before anything starts:",
        "",
    ]
    out += [f"- [{rid}](reference.md#{rid.lower()}): {table[rid].title}" for rid in BEYOND_VERL if rid in table]
    out.append("")
    out += _oracle_section(mapping)
    regs = [r for r in rows if r.check.kind == "registry"]
    out += ["## Name tables", "", "| registry | config key | names in verl | caught by |", "|---|---|---|---|"]
    for r in regs:
        key = next(g.key for g in verl_checks.REGISTRIES if f"registry::{g.name}" == r.check.id)
        out.append(f"| {r.check.id.split('::')[1]} | `{key}` | {_cell(r.check.condition)} | {_verdict(r, mapping)} |")
    out.append("")
    by_file: dict[str, list[Row]] = {}
    for r in rows:
        if r.check.kind != "registry":
            by_file.setdefault(r.check.file, []).append(r)
    for rel, frows in by_file.items():
        n_caught = sum(1 for r in frows if r.value is not None and rule_ids(r.value))
        out += [
            f"## `{rel}`",
            "",
            f"{len(frows)} checks, {n_caught} caught before launch.",
            "",
            "| function | check | verl's message | caught by |",
            "|---|---|---|---|",
        ]
        for r in frows:
            c = r.check
            if c.kind == "assert":
                cond = c.condition if c.condition.startswith("if ") else f"assert {c.condition}"
            else:
                cond = f"raise if {c.condition}"
            out.append(
                f"| `{c.function}` (line {c.line}) | {_code(cond)} | {_cell(c.message) or '-'} | "
                f"{_verdict(r, mapping)} |"
            )
        out.append("")
    return "\n".join(out)


def _oracle_section(mapping: Mapping) -> list[str]:
    """The section "Oracle disagreements left": where ``fsdpcfg check`` and verl disagree on purpose."""
    out = [
        "## Oracle disagreements left",
        "",
        "verl itself judges override sets drawn from its whole key tree (tests/check/verl_opinion/"
        "test_generated_overrides_oracle.py): verl's own compose of its config with the overrides, then "
        "`validate_config` and its config dataclasses, say per override whether verl refuses it, crashes on it, "
        "accepts it, or accepts it and reads nothing there; `fsdpcfg check` must agree on each key, as overrides and "
        "as a run script. Every disagreement left is below, each kept on purpose; any other fails the test.",
        "",
        "| id | fsdpcfg | verl | overrides | why fsdpcfg reports it |",
        "|---|---|---|---|---|",
    ]
    for eid, e in mapping.oracle_disagreements.items():
        rules = ", ".join(f"[{r}](reference.md#{r.lower()})" for r in str(e.get("rules", "")).split())
        out.append(
            f"| {eid} | {rules} | {_cell(e.get('verl', ''))} | {_cell(e.get('where', ''))} | "
            f"{_cell(e.get('reason', ''))} |"
        )
    out.append("")
    return out


def _verdict(row: Row, mapping: Mapping) -> str:
    if row.value is None:
        return "**not mapped**"
    ids = rule_ids(row.value)
    if ids:
        shown = ", ".join(f"[{i}](reference.md#{i.lower()})" for i in ids)
        return shown + (" (tested)" if row.check.id in mapping.evidence else "")
    code = row.value[len(RUNTIME) :].strip()
    if code in mapping.reasons:
        return f"runtime only ([{code}](#why-{code}))"
    return "runtime only: " + _cell(code)


def stale(page: Path = PAGE) -> bool:
    """True when ``page`` differs from a fresh render."""
    return not page.is_file() or page.read_text(encoding="utf-8") != render() + "\n"


def write(page: Path = PAGE) -> Path:
    """Render and write the page; return its path."""
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(render() + "\n", encoding="utf-8")
    return page


def stubs(rows: list[Row] | None = None) -> str:
    """YAML lines for the checks the mapping lacks, each with its condition and message as a comment."""
    rows = join() if rows is None else rows
    out = []
    for r in rows:
        if r.value is None:
            c = r.check
            out.append(f"  # {c.file}:{c.line} {c.message[:100]}")
            out.append(f"  {json.dumps(c.id)}: 'runtime: TODO'")
    return "\n".join(out)
