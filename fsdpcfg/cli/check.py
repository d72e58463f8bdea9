"""``fsdpcfg check``: pre-flight checks and lint, before anything heavy starts.

    fsdpcfg check [+recipe=NAME] [OVERRIDES...]     a config composed from the tree
    fsdpcfg check FILE.yaml...                      recipe files or full config files (fsdpcfg or verl dumps)
    fsdpcfg check RUN_SCRIPT.sh [OVERRIDES...] [-- ARGS...]
                                                    the verl commands of a run script, read as bash reads it
                                                    (OVERRIDES stand at its "$@", ARGS are its $1 $2 ...)

Human output groups findings by severity, each with its rule ID, keys, numbers, fix and the provenance of
each key's value, then the derived numbers (``--plan``). ``--format json`` prints exactly
``{"findings": [{"rule", "severity", "keys", "message", "fix"}]}``. Exit 1 on any error, else 0; 2 on a
usage error. Extending: add options in :func:`add_arguments` and pass their results through
:func:`collect` (one :class:`fsdpcfg.check_sources.Checked` per input) to :func:`render`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from fsdpcfg.errors import UsageError

_YAML = (".yaml", ".yml")
_SEVERITIES = ("error", "warning", "info")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register ``check``'s arguments."""
    parser.add_argument("inputs", nargs="*", metavar="INPUT",
                        help="Hydra overrides (+recipe=NAME key=value ...), or YAML files, or a verl run script")
    parser.add_argument("--format", choices=("human", "json"), default="human", help="output format")
    plan = parser.add_mutually_exclusive_group()
    plan.add_argument("--plan", dest="plan", action="store_true", default=None,
                      help="show the derived numbers (default when one config is checked)")
    plan.add_argument("--no-plan", dest="plan", action="store_false", help="do not show the derived numbers")
    parser.add_argument("--verl", action="store_true",
                        help="also run verl 0.9.1's own validation (a subprocess importing verl, ~10 s) and report "
                             "where it disagrees (fsdpcfg.verlcheck); exit 1 when verl rejects")


#: ``fsdpcfg.cli.main`` calls :func:`parse` (the words after ``--`` are a run script's own arguments).
PASS_THROUGH = True


def parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """Parse ``argv``; the words after the first ``--`` become ``script_args`` (``None`` when there is no
    ``--``): the positional arguments of the run script being checked."""
    script_args = None
    if "--" in argv:
        i = argv.index("--")
        argv, script_args = argv[:i], argv[i + 1:]
    args = parser.parse_args(argv)
    args.script_args = script_args
    return args


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


def collect(args: argparse.Namespace) -> list[Any]:
    """Check every input and return one :class:`~fsdpcfg.check_sources.Checked` per config.

    Raises:
        UsageError: files mixed with overrides, a missing file, an unparsable override.
    """
    from fsdpcfg.check import check_config, compose_for_check
    from fsdpcfg.check_sources import Checked, check_run_script, check_yaml_file

    kinds = [_kind(a) for a in args.inputs]
    files = [a for a, k in zip(args.inputs, kinds) if k != "override"]
    overrides = [a for a, k in zip(args.inputs, kinds) if k == "override"]
    script_args = getattr(args, "script_args", None)
    if script_args is not None and not (files and all(k == "script" for k in kinds if k != "override")):
        raise UsageError("`-- ARGS` gives a run script's positional arguments: give a run script before it",
                         fix="fsdpcfg check run.sh [key=value ...] -- ARG ...")
    if files and overrides and all(k == "script" for k in kinds if k != "override"):
        return [c for f in files for c in check_run_script(Path(f), overrides, args=script_args)]
    if files and overrides:
        raise UsageError(f"give either files ({', '.join(files)}) or overrides ({', '.join(overrides)}), not both",
                         fix="put the overrides in a recipe file, or check the files on their own")
    if not files:
        composed, findings = compose_for_check(overrides)
        if composed is not None:
            findings = check_config(composed)
        return [Checked(" ".join(overrides) or "(defaults)", findings, composed)]
    out = []
    for f, k in zip(files, kinds):
        if k == "yaml":
            out.append(check_yaml_file(Path(f)))
        else:
            out.extend(check_run_script(Path(f), args=script_args))
    return out


def run(args: argparse.Namespace) -> int:
    """Run the check and print the findings; return 1 on any error, else 0."""
    results = collect(args)
    show_plan = args.plan if args.plan is not None else len(results) == 1
    text = render(results, fmt=args.format, plan=show_plan)
    verl_rejects = False
    if getattr(args, "verl", False):
        from fsdpcfg.verlcheck import second_opinion

        op = second_opinion(results)
        verl_rejects = op.verl_rejects
        text = (json.dumps({**json.loads(text), "verl": op.to_json()}, indent=2) if args.format == "json"
                else f"{text}\n\n{op.text}")
    sys.stdout.write(text + ("\n" if text and not text.endswith("\n") else ""))
    return 1 if verl_rejects or any(f.severity == "error" for r in results for f in r.findings) else 0


def render(results: list[Any], *, fmt: str = "human", plan: bool = False) -> str:
    """Format the results: JSON (exactly ``{"findings": [...]}``) or the human report."""
    if fmt == "json":
        return json.dumps({"findings": [f.to_json() for r in results for f in r.findings]}, indent=2)
    parts = [_human(r, plan=plan, header=len(results) > 1) for r in results]
    return "\n\n".join(p for p in parts if p)


def _where(f: Any) -> str:
    """``file:line `` of the first key whose value came from a file, else empty."""
    for k in f.keys:
        src = f.provenance.get(k, "")
        loc = src.split("(")[-1].rstrip(")") if "(" in src else src
        if ":" in loc and not loc.startswith(("command line", "default", "verl")) and loc.rsplit(":", 1)[1].isdigit():
            return loc + " "
    return ""


def _human(r: Any, *, plan: bool, header: bool) -> str:
    lines = [f"== {r.label}"] if header else []
    counts = {s: sum(1 for f in r.findings if f.severity == s) for s in _SEVERITIES}
    for sev in _SEVERITIES:
        group = [f for f in r.findings if f.severity == sev]
        if not group:
            continue
        lines.append(f"{sev.upper()}S ({len(group)})" if len(group) > 1 else sev.upper())
        for f in group:
            lines.append(f"  {f.rule} {_where(f)}{f.message}")
            if f.derivation:
                lines.append(f"        numbers: {f.derivation}")
            lines.append(f"        -> {f.fix}")
            for k in f.keys:
                if k in f.provenance:
                    lines.append(f"        {k} from {f.provenance[k]}")
    if plan and r.composed is not None:
        lines.append(_plan_section(r.composed))
    summary = ", ".join(f"{n} {s}{'s' if n != 1 else ''}" for s, n in counts.items())
    verdict = "fails" if counts["error"] else "passes"
    lines.append(f"{r.label}: {verdict} ({summary})" if header else f"check {verdict} ({summary})")
    return "\n".join(lines)


def _plan_section(composed: Any) -> str:
    """The derived numbers with their derivation, from :func:`fsdpcfg.plan.make_plan` (the same arithmetic
    the launcher uses)."""
    from fsdpcfg.check import resolve
    from fsdpcfg.errors import ConfigError

    try:
        from fsdpcfg.plan import make_plan
    except ImportError:  # the plan stage is optional for check
        return "DERIVED NUMBERS: not available (fsdpcfg.plan is not importable)"
    cfg, _, _ = resolve(composed)
    if getattr(composed, "kind", "ppo") == "sft":
        from fsdpcfg.train.sft.plan import make_sft_plan as make_plan
    try:
        p = make_plan(cfg)
    except ConfigError as e:
        return f"DERIVED NUMBERS: cannot be derived: {e.key + ' ' if e.key else ''}{e.message}"
    except Exception as e:  # a config the rules already reported as invalid
        return f"DERIVED NUMBERS: cannot be derived ({type(e).__name__}: {e})"
    text = "DERIVED NUMBERS\n" + "\n".join(f"  {k}: {v}" for k, v in p.derivations.items())
    if getattr(composed, "kind", "ppo") != "sft":
        from fsdpcfg.plan.memory import describe_for_check

        text += "\n" + "\n".join("  " + line for line in describe_for_check(cfg).splitlines())
    return text
