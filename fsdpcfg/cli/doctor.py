"""``fsdpcfg doctor``: validate a model for training and rollout, cheapest stage first.

    fsdpcfg doctor +recipe=qwen_grpo actor_rollout_ref.model.path=PATH [OVERRIDES...]
    fsdpcfg doctor +recipe=qwen_grpo actor_rollout_ref.model.path=PATH --format json
    fsdpcfg doctor --matrix [--models tiny-qwen2,tiny-llama2] [--output docs/compatibility.md]

Stages: 0 static checks, 1 load, 2 patches vs unpatched, 3 FSDP/FSDP2 SFT steps, 4 two GRPO steps with the
rollout adapter, 5 actor vs rollout log-probs and a checkpoint round trip (3-5: one torchrun, 2 ranks). It stops
at the first failing stage and names the boundary that owns the failure and what to try. Exit code 0 when every
stage passed, 1 otherwise (2 for a usage error).
"""

from __future__ import annotations

import argparse
import sys

from fsdpcfg.errors import UsageError

PASS_THROUGH = True
_FLAGS_WITH_VALUE = ("--format", "--timeout", "--engines", "--models", "--output", "--work-dir")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register the options (for ``--help``; :func:`parse` reads the command line itself)."""
    parser.add_argument("overrides", nargs="*", help="+recipe=NAME actor_rollout_ref.model.path=PATH, then overrides")
    parser.add_argument("--format", choices=["table", "json"], default="table", help="table for people, json for tools")
    parser.add_argument(
        "--engines",
        default="fsdp,fsdp2",
        help="engine variants of the distributed stages: fsdp, fsdp2, fsdp+lora, fsdp2+lora",
    )
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds the torchrun stages may take")
    parser.add_argument("--work-dir", default=None, help="keep run folders and torchrun.log here")
    parser.add_argument(
        "--matrix", action="store_true", help="run the tiny real architectures and write the compatibility report"
    )
    parser.add_argument("--models", default=None, help="--matrix: comma-separated asset names (default: all)")
    parser.add_argument("--output", default=None, help="--matrix: the Markdown file (default docs/compatibility.md)")


def parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """Split ``argv`` into the doctor's flags and Hydra overrides.

    Raises:
        UsageError: an unknown flag, a flag without its value, or a bad ``--format``/``--timeout``.
    """
    ns = argparse.Namespace(
        overrides=[],
        format="table",
        engines="fsdp,fsdp2",
        timeout=900.0,
        work_dir=None,
        matrix=False,
        models=None,
        output=None,
    )
    it = iter(argv)
    for a in it:
        name, eq, inline = a.partition("=")
        if a in ("-h", "--help"):
            parser.print_help()
            raise SystemExit(0)
        if a == "--matrix":
            ns.matrix = True
        elif name in _FLAGS_WITH_VALUE:
            value = inline if eq else next(it, None)
            if value is None:
                raise UsageError(f"{name} needs a value", fix=f"e.g. {name}=...")
            setattr(ns, name[2:].replace("-", "_"), value)
        elif a.startswith("-"):
            raise UsageError(f"unknown option {a}", fix="options: " + ", ".join(("--matrix",) + _FLAGS_WITH_VALUE))
        else:
            ns.overrides.append(a)
    if ns.format not in ("table", "json"):
        raise UsageError(f"--format {ns.format!r}", fix="use --format table or --format json")
    try:
        ns.timeout = float(ns.timeout)
    except ValueError:
        raise UsageError(f"--timeout {ns.timeout!r} is not a number of seconds", fix="e.g. --timeout 600") from None
    return ns


def run(args: argparse.Namespace) -> int:
    """Run the doctor (or the matrix) and print the report; return 0 when everything passed."""
    from pathlib import Path

    from fsdpcfg.doctor import Variant, render_json, render_table, run_doctor

    variants = [Variant.parse(v.strip()) for v in args.engines.split(",") if v.strip()]
    if args.matrix:
        from fsdpcfg.doctor.matrix import run_matrix

        return run_matrix(
            models=args.models.split(",") if args.models else None,
            output=Path(args.output) if args.output else None,
            timeout=args.timeout,
            echo=lambda line: print(line, file=sys.stderr, flush=True),
        )
    if not args.overrides:
        raise UsageError("no model given", fix="fsdpcfg doctor +recipe=qwen_grpo actor_rollout_ref.model.path=PATH")
    human = args.format == "table"
    report = run_doctor(
        args.overrides,
        variants=variants,
        sft_engines=tuple(dict.fromkeys(v.engine for v in variants)),
        timeout=args.timeout,
        work_dir=Path(args.work_dir) if args.work_dir else None,
        keep=bool(args.work_dir),
        echo=(lambda line: print(line, file=sys.stderr, flush=True)) if human else None,
    )
    print(render_table(report) if human else render_json(report))
    return 0 if report.ok else 1
