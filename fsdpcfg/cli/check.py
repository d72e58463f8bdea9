"""``fsdpcfg check``: pre-flight checks and lint, before anything heavy starts.

    fsdpcfg check [+recipe=NAME] [OVERRIDES...]     a config composed from the tree
    fsdpcfg check FILE.yaml...                      recipe files, full configs (a run folder's config.yaml, a verl
                                                    dump) or verl config files (fsdpcfg export's config.yaml)
    fsdpcfg check RUN_SCRIPT.sh [OVERRIDES...] [-- ARGS...]
                                                    the verl commands of a run script, read as bash reads it
                                                    (OVERRIDES stand at its "$@", ARGS are its $1 $2 ...)
    fsdpcfg check --skip-unrelated FILES...         as pre-commit runs it: a script with no verl command is skipped
    fsdpcfg check --fix FILE|SCRIPT...              rewrite what has one right answer (legacy keys, removed
                                                    trainer modules: :mod:`fsdpcfg.check.fix`), then check
    fsdpcfg check --diff FILE|SCRIPT...             print that rewrite as a unified diff; write nothing

Human output groups findings by severity, each with its rule ID, ``file:line``, keys, numbers, fix and the
provenance of each key's value, then the derived numbers (``--plan``). ``--format json`` prints one JSON
document (:func:`render`, shape in docs/cli.md), also for a usage error. Exit codes (:data:`EXIT_CODES`): 0 no
error finding (warnings and infos only), 1 an error finding in any input (or verl rejects with ``--verl``), 2 a
usage error. YAML that is not a fsdpcfg or verl config is skipped with the info FC130 in every mode.
Extending: add options in :func:`add_arguments` and pass their results through :func:`collect` (one
:class:`fsdpcfg.check.sources.Checked` per input) to :func:`render`.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fsdpcfg.errors import ConfigError, UsageError

_YAML = (".yaml", ".yml")
_SEVERITIES = ("error", "warning", "info")
#: infos that say an input was skipped as not a config (fsdpcfg.rules.inputs).
_SKIPPED = ("FC130", "FC131")
#: the exit codes, for ``--help`` and docs/cli.md.
EXIT_CODES = {
    0: "no error finding (warnings and infos only, or every input skipped as not a config)",
    1: "an error finding in at least one input (or verl rejects the config, with --verl)",
    2: "a usage error (a missing file, files mixed with overrides, a bad option or override)",
}
#: read by fsdpcfg.cli.main: check parses its own command line (so that a usage error is JSON too).
PASS_THROUGH = True


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register ``check``'s arguments."""
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = (
        "exit codes:\n"
        + "\n".join(f"  {k}  {v}" for k, v in EXIT_CODES.items())
        + '\n\n--format json: {"exit_code", "inputs": [{"input", "status", "counts", '
        '"findings": [{"rule", "severity", "keys", "message", "fix", "file", '
        '"line"}], a run script\'s "keys": {"set", "judged", "share"}}], "findings": [every input\'s '
        'findings, each with its "input"]}; a '
        'usage error: {"exit_code": 2, "error": {"message", "key", "fix"}, "inputs": [], '
        '"findings": []}. See docs/cli.md.'
    )
    parser.add_argument(
        "inputs",
        nargs="*",
        metavar="INPUT",
        help="Hydra overrides (+recipe=NAME key=value ...), or YAML files, or verl run scripts",
    )
    parser.add_argument(
        "--format",
        choices=("human", "json"),
        default="human",
        help="output format: human, or json (one object per input, each finding with its file and line)",
    )
    parser.add_argument(
        "--skip-unrelated",
        action="store_true",
        help="skip (with the info FC131) a shell script that runs no verl trainer, instead of a "
        "usage error: what the pre-commit hooks pass (YAML that is not a config is always "
        "skipped, with FC130)",
    )
    plan = parser.add_mutually_exclusive_group()
    plan.add_argument(
        "--plan",
        dest="plan",
        action="store_true",
        default=None,
        help="show the derived numbers (default when one config is checked)",
    )
    plan.add_argument("--no-plan", dest="plan", action="store_false", help="do not show the derived numbers")
    fix = parser.add_mutually_exclusive_group()
    fix.add_argument(
        "--fix",
        action="store_true",
        help="rewrite, in the YAML files and run scripts given, what has exactly one right answer (a legacy "
        "verl key whose verl 0.9.1 key is known, FC701; a removed trainer module, FC708), atomically, keeping "
        "the rest of each file as it is; then check the rewritten files",
    )
    fix.add_argument(
        "--diff",
        action="store_true",
        help="print what --fix would rewrite as a unified diff and write nothing; exit 1 when there is a change",
    )
    parser.add_argument(
        "--verl",
        action="store_true",
        help="also run verl 0.9.1's own validation (a subprocess importing verl, ~10 s) and report "
        "where it disagrees (fsdpcfg.check.verl_opinion); exit 1 when verl rejects",
    )


#: ``fsdpcfg.cli.main`` calls :func:`parse` (the words after ``--`` are a run script's own arguments).
def _kind(arg: str) -> str:
    """``override`` for any ``key=value`` / ``~key`` token (also ``+recipe=PATH.yaml`` and values ending in
    ``.yaml``), else ``yaml`` or ``script`` for a file path."""
    if "=" in arg or arg.startswith("~"):
        return "override"
    if arg.endswith(_YAML):
        return "yaml"
    if arg.endswith(".sh") or Path(arg).is_file():
        return "script"
    if Path(arg).is_dir():
        raise UsageError(f"{arg} is a folder", fix="give the YAML files or scripts in it (e.g. recipes/*.yaml)")
    return "override"


def parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """Parse ``check``'s command line. The words after the first ``--`` become ``script_args`` (``None`` when
    there is no ``--``): the positional arguments of the run script being checked. With ``--format json`` an
    argparse usage error is returned as ``args.usage_error`` (printed as JSON by :func:`run`) instead of
    argparse's text on stderr."""
    script_args = None
    if "--" in argv:
        i = argv.index("--")
        argv, script_args = argv[:i], argv[i + 1 :]
    json_mode = any(
        a == "--format=json" or a == "--format" and argv[i + 1 : i + 2] == ["json"] for i, a in enumerate(argv)
    )
    if not json_mode:
        args = parser.parse_args(argv)
        args.script_args = script_args
        return args

    def error(message: str):
        raise UsageError(message, fix="see `fsdpcfg check --help`")

    parser.error = error  # type: ignore[method-assign]
    try:
        args = parser.parse_args(argv)
    except UsageError as e:
        return argparse.Namespace(usage_error=e, format="json")
    args.script_args = script_args
    return args


def collect(args: argparse.Namespace, *, keep_configs: bool = True) -> list[Any]:
    """Check every input and return one :class:`~fsdpcfg.check.sources.Checked` per config. Without
    ``keep_configs`` each file's composed config is reduced to what places its findings
    (:func:`fsdpcfg.check.sources.located`) as soon as it is checked, so that memory does not grow with the
    number of files (a pre-commit hook over a repository's YAML files).

    Raises:
        UsageError: files mixed with overrides, a missing file, an unparsable override.
    """
    from fsdpcfg.check import check_config, compose_for_check
    from fsdpcfg.check.sources import Checked, check_run_script, check_yaml_file, located

    kinds = [_kind(a) for a in args.inputs]
    files = [a for a, k in zip(args.inputs, kinds, strict=True) if k != "override"]
    overrides = [a for a, k in zip(args.inputs, kinds, strict=True) if k == "override"]
    script_args = getattr(args, "script_args", None)
    if script_args is not None and not (files and all(k == "script" for k in kinds if k != "override")):
        raise UsageError(
            "`-- ARGS` gives a run script's positional arguments: give a run script before it",
            fix="fsdpcfg check run.sh [key=value ...] -- ARG ...",
        )
    if files and overrides and all(k == "script" for k in kinds if k != "override"):
        return [c for f in files for c in check_run_script(Path(f), overrides, args=script_args)]
    if files and overrides:
        raise UsageError(
            f"give either files ({', '.join(files)}) or overrides ({', '.join(overrides)}), not both",
            fix="put the overrides in a recipe file, or check the files on their own",
        )
    if not files:
        composed, findings = compose_for_check(overrides)
        if composed is not None:
            findings = check_config(composed)
        return [Checked(" ".join(overrides) or "(defaults)", findings, composed)]
    out: list[Any] = []
    for f, k in zip(files, kinds, strict=True):
        start = len(out)
        if k == "yaml":
            out.append(check_yaml_file(Path(f)))
        else:
            try:
                out.extend(check_run_script(Path(f), args=script_args))
            except UsageError as e:  # no verl command in it (or it cannot be read)
                if not getattr(args, "skip_unrelated", False) or not Path(f).is_file():
                    raise
                from fsdpcfg.rules.inputs import not_a_config

                why = e.message[len(f"{f}: ") :] if e.message.startswith(f"{f}: ") else e.message
                out.append(Checked(f, [not_a_config("FC131", f, why)]))
        if not keep_configs:
            for r in out[start:]:
                r.composed = located(r.composed)
    return out


def run(args: argparse.Namespace) -> int:
    """Run the check and print the findings; return the exit code (:data:`EXIT_CODES`)."""
    if getattr(args, "usage_error", None) is not None:
        return _json_error(args.usage_error)
    fixed: list[str] = []
    try:
        if getattr(args, "fix", False) or getattr(args, "diff", False):
            fixes = _fixes(args)
            if args.diff:
                sys.stdout.write("".join(f.diff() for f in fixes))
                return 1 if any(f.new != f.old for f in fixes) else 0
            for f in fixes:
                f.write()
                fixed += f.applied
        if getattr(args, "verl", False):
            from fsdpcfg.check.verl_opinion import start_worker

            start_worker()  # verl's import (~10 s) runs in its own process while fsdpcfg checks
        files = [a for a in args.inputs if _kind(a) != "override"]
        # one file's plan, or verl's opinion, reads the whole composed config; a report of many files only places
        # each finding (the plan is shown for one input unless asked)
        keep = len(files) <= 1 or bool(args.plan) or bool(getattr(args, "verl", False))
        results = collect(args, keep_configs=keep)
    except ConfigError as e:
        if args.format != "json":
            raise
        return _json_error(e)
    show_plan = args.plan if args.plan is not None else len(results) == 1
    op = None
    if getattr(args, "verl", False):
        from fsdpcfg.check.verl_opinion import second_opinion

        op = second_opinion(results)
    verl_rejects = op is not None and op.verl_rejects
    rc = 1 if verl_rejects or any(f.severity == "error" for r in results for f in r.findings) else 0
    if args.format == "json":
        report = json_report(results)
        if getattr(args, "fix", False):
            report["fixed"] = fixed
        if op is not None:
            report["verl"] = op.to_json()
        text = json.dumps({**report, "exit_code": rc}, indent=2)  # one dump: 10,000 findings cost 0.3 s each
    else:
        text = render(results, fmt=args.format, plan=show_plan)
        if getattr(args, "fix", False):
            text = "\n".join([f"FIXED {a}" for a in fixed] or ["FIXED nothing (no rewrite has one right answer)"]) + (
                "\n\n" + text
            )
        if op is not None:
            text = f"{text}\n\n{op.text}"
    sys.stdout.write(text + ("\n" if text and not text.endswith("\n") else ""))
    return rc


def _fixes(args: argparse.Namespace) -> list[Any]:
    """The rewrite of each file input (:func:`fsdpcfg.check.fix.fix_file`).

    Raises:
        UsageError: ``--fix``/``--diff`` without a file, or a file that cannot be read.
    """
    from fsdpcfg.check.fix import fix_file

    files = [a for a in args.inputs if _kind(a) != "override"]
    if not files:
        raise UsageError(
            "--fix and --diff rewrite files: give the YAML files or run scripts",
            fix="fsdpcfg check --fix run.sh (or recipe.yaml)",
        )
    out = []
    for f in files:
        try:
            out.append(fix_file(Path(f)))
        except (OSError, UnicodeDecodeError) as e:
            raise UsageError(f"cannot read {f}: {e}", fix="check the path") from None
    return out


def render(results: list[Any], *, fmt: str = "human", plan: bool = False) -> str:
    """Format the results as the human report or as JSON:

    ``{"exit_code": 0|1, "inputs": [{"input", "status": "passes"|"fails"|"skipped", "counts": {"error",
    "warning", "info"}, "findings": [{"rule", "severity", "keys", "message", "fix", "file", "line"}]}],
    "findings": [...]}``: one object per input, in the order given; each finding's ``file``/``line`` is
    where the value of its first located key was written (:func:`location`), null when none was; the top-level
    ``findings`` lists every input's findings, each with its ``input``, for readers of the one-input shape.
    """
    if fmt == "json":
        return json.dumps(json_report(results), indent=2)
    parts = [_human(r, plan=plan, header=len(results) > 1) for r in results]
    return "\n\n".join(p for p in parts if p)


def json_report(results: list[Any]) -> dict[str, Any]:
    """The JSON report as a dict (its shape: :func:`render`); ``exit_code`` is 1 when any input fails."""
    inputs = [_json_input(r) for r in results]
    flat = [{**f, "input": i["input"]} for i in inputs for f in i["findings"]]
    failed = any(i["status"] == "fails" for i in inputs)
    return {"exit_code": int(failed), "inputs": inputs, "findings": flat}


def location(
    f: Any, composed: Any = None, fallback: tuple[str, int | None] | None = None
) -> tuple[str | None, int | None]:
    """``(file, line)`` of a finding, always in the user's own input: its own ``location`` (a YAML syntax error, a
    skipped file), else the first of its keys whose value the user wrote in a file (the provenance the report
    shows, from :meth:`fsdpcfg.compose.provenance.Source.location`; never a file of fsdpcfg's own tree, a shipped
    recipe or group option: ``Source.shipped``), else ``fallback`` (the input's own place,
    :attr:`fsdpcfg.check.sources.Checked.origin`: the line of a recipe's defaults list that brings the value in,
    a script's command), else ``(None, None)`` (the command line)."""
    if f.location is not None:
        return f.location
    for k in f.keys:
        src = composed.provenance.source_of(k) if composed is not None else None
        if src is not None and not src.shipped and (k not in f.provenance or f.provenance[k] == str(src)):
            loc = src.location()
            if loc is not None:
                return loc
    return fallback if fallback is not None else (None, None)


def _json_input(r: Any) -> dict[str, Any]:
    findings = []
    for f in r.findings:
        file, line = location(f, r.composed, getattr(r, "origin", None))
        findings.append({**f.to_json(), "file": file, "line": line})
    counts = {s: sum(1 for f in r.findings if f.severity == s) for s in _SEVERITIES}
    skipped = bool(r.findings) and all(f.rule in _SKIPPED for f in r.findings)
    status = "fails" if counts["error"] else "skipped" if skipped else "passes"
    out = {"input": r.label, "status": status, "counts": counts, "findings": findings}
    kj = getattr(r, "keys_judged", None)
    if kj is not None:
        out["keys"] = {"set": kj[1], "judged": kj[0], "share": round(kj[0] / kj[1], 3) if kj[1] else 1.0}
    return out


def _json_error(e: ConfigError) -> int:
    """Print a usage (or input) error as the JSON document and return its exit code."""
    doc = {
        "exit_code": e.exit_code,
        "error": {"message": str(e.message), "key": e.key, "fix": e.fix},
        "inputs": [],
        "findings": [],
    }
    sys.stdout.write(json.dumps(doc, indent=2) + "\n")
    return e.exit_code


def _where(f: Any, composed: Any = None, fallback: tuple[str, int | None] | None = None) -> str:
    """``file:line `` of the finding (:func:`location`), else empty."""
    file, line = location(f, composed, fallback)
    return f"{file}:{line} " if file and line else ""


def _human(r: Any, *, plan: bool, header: bool) -> str:
    lines = [f"== {r.label}"] if header else []
    counts = {s: sum(1 for f in r.findings if f.severity == s) for s in _SEVERITIES}
    for sev in _SEVERITIES:
        group = [f for f in r.findings if f.severity == sev]
        if not group:
            continue
        lines.append(f"{sev.upper()}S ({len(group)})" if len(group) > 1 else sev.upper())
        for f in group:
            lines.append(f"  {f.rule} {_where(f, r.composed, getattr(r, 'origin', None))}{f.message}")
            if f.derivation:
                lines.append(f"        numbers: {f.derivation}")
            lines.append(f"        -> {f.fix}")
            for k in f.keys:
                if k in f.provenance:
                    lines.append(f"        {k} from {f.provenance[k]}")
    if plan and r.composed is not None:
        lines.append(_plan_section(r.composed))
    kj = getattr(r, "keys_judged", None)
    if kj is not None and kj[1]:
        unchecked = getattr(r, "keys_unchecked", 0)
        names_only = kj[1] - kj[0] - unchecked
        lines.append(
            f"keys judged: {kj[0]} of the {kj[1]} the script sets ({100 * kj[0] // kj[1]}%)"
            + (f"; {names_only} with a value the check cannot know (names checked, FC107)" if names_only > 0 else "")
            + (f"; {unchecked} of a group option the check cannot compose (not checked, FC108)" if unchecked else "")
        )
    summary = ", ".join(f"{n} {s}{'s' if n != 1 else ''}" for s, n in counts.items())
    skipped = bool(r.findings) and all(f.rule in _SKIPPED for f in r.findings)
    verdict = "fails" if counts["error"] else "skipped" if skipped else "passes"
    lines.append(f"{r.label}: {verdict} ({summary})" if header else f"check {verdict} ({summary})")
    return "\n".join(lines)


def _plan_section(composed: Any) -> str:
    """The derived numbers with their derivation, from the run kind's planner (:attr:`fsdpcfg.runkind.RunKind.
    planner`, the same arithmetic the launcher uses), and its memory estimate when the kind has one
    (:attr:`fsdpcfg.runkind.RunKind.memory`)."""
    from fsdpcfg import runkind
    from fsdpcfg.check import resolve
    from fsdpcfg.errors import ConfigError

    kind = runkind.get(getattr(composed, "kind", None))
    try:
        planner: Callable[[dict], Any] = kind.load("planner")
    except ImportError:  # the plan stage is optional for check
        return "DERIVED NUMBERS: not available (fsdpcfg.plan is not importable)"
    cfg, _, _ = resolve(composed)
    try:
        p = planner(cfg)
    except ConfigError as e:
        return f"DERIVED NUMBERS: cannot be derived: {e.key + ' ' if e.key else ''}{e.message}"
    except Exception as e:  # a config the rules already reported as invalid
        return f"DERIVED NUMBERS: cannot be derived ({type(e).__name__}: {e})"
    text = "DERIVED NUMBERS\n" + "\n".join(f"  {k}: {v}" for k, v in p.derivations.items())
    if kind.memory is not None:
        describe: Callable[[dict], str] = kind.load("memory")
        text += "\n" + "\n".join("  " + line for line in describe(cfg).splitlines())
    return text
