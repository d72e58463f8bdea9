"""``python -m fsdpcfg +recipe=NAME [OVERRIDES...]``: compose, check, plan and launch a run.

    python -m fsdpcfg +recipe=qwen_grpo                                  # one run
    python -m fsdpcfg +recipe=qwen_grpo --dry-run                        # everything but the launch
    python -m fsdpcfg +recipe=qwen_grpo -m actor_rollout_ref.actor.optim.lr=1e-6,3e-6   # a sweep

Every finding of :func:`fsdpcfg.check.check_config` is printed; any error stops the run before anything
starts. A sweep (``-m``) is :func:`fsdpcfg.sweep.run_sweep`: Hydra's sweep syntax expanded into points, duplicates
removed, every point checked before any starts (``--only-valid`` launches the passing ones when some fail),
the points launched by Hydra's launcher plugin (``hydra/launcher=basic|joblib|submitit_slurm|fsdpcfg_slurm``),
each in ``<hydra.sweep.dir>/<job>``, and a summary table written next to them.
"""

from __future__ import annotations

import argparse
import sys

from fsdpcfg.errors import ConfigError, UsageError

PASS_THROUGH = True


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register the options (for ``--help``; :func:`parse` reads the command line itself)."""
    parser.add_argument("overrides", nargs="*", help="Hydra overrides: +recipe=NAME, group=option, key=value")
    parser.add_argument("-m", "--multirun", action="store_true", help="sweep over comma-separated values")
    parser.add_argument("--dry-run", action="store_true", help="compose, check and plan; print the command")
    parser.add_argument("--only-valid", action="store_true",
                        help="sweeps: launch the points that pass the checks even when others fail")


def parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """Split ``argv`` into flags and overrides (overrides may start with ``+``, ``~`` or contain ``=``)."""
    ns = argparse.Namespace(overrides=[], multirun=False, dry_run=False, only_valid=False)
    for a in argv:
        if a in ("-m", "--multirun"):
            ns.multirun = True
        elif a == "--dry-run":
            ns.dry_run = True
        elif a == "--only-valid":
            ns.only_valid = True
        elif a in ("-h", "--help"):
            parser.print_help()
            raise SystemExit(0)
        elif a.startswith("-") and not a.startswith("--") or a.startswith("--") and "=" not in a:
            raise UsageError(f"unknown option {a}", fix="options: -m/--multirun, --dry-run, --only-valid; the rest are overrides")
        else:
            ns.overrides.append(a)
    return ns


def _echo(text: str) -> None:
    print(text, flush=True)


def _format(f, composed) -> str:
    where = ""
    if f.keys:
        src = f.provenance.get(f.keys[0]) or (composed.provenance.source_of(f.keys[0]) if composed is not None else None)
        where = f"{src}: " if src else ""
    keys = ", ".join(k for k in f.keys if k not in f.message)
    head = f"{f.severity}: [{f.rule}] {where}{keys + ': ' if keys else ''}{f.message}"
    return f"{head}\n  -> {f.fix}" if f.fix else head


def check_or_refuse(composed) -> None:
    """Run the pre-flight checks, print every finding, and refuse to continue on any error.

    Raises:
        ConfigError: at least one error-severity finding (all were printed first).
    """
    from fsdpcfg.check import check_config, has_errors

    findings = check_config(composed)
    section = composed.cfg.get("fsdpcfg")  # may be anything the user wrote (`fsdpcfg: null`): the schema reports it
    launcher = section.get("launcher") if hasattr(section, "get") else None
    if has_errors(findings) and launcher == "verl":
        # the run stops anyway: also say what verl needs that this machine lacks (FC85x, fsdpcfg/rules/verl_launch.py)
        from fsdpcfg.rules.verl_launch import launch_findings

        findings = list(findings) + launch_findings(composed.to_container(resolve=True))
    for f in findings:
        print(_format(f, composed), file=sys.stderr if f.severity == "error" else sys.stdout, flush=True)
    if has_errors(findings):
        n = sum(f.severity == "error" for f in findings)
        raise ConfigError(f"{n} error(s) in the config; nothing was started")


def prepare(overrides: list[str]):
    """Compose ``overrides``, check the result (refusing on errors) and plan it.

    Returns:
        ``(composed, cfg, plan)``; ``plan`` is ``None`` for launcher=verl (verl plans its own run).

    Raises:
        ConfigError: a composition error, an error finding, or a plan that does not divide.
    """
    from fsdpcfg.compose import compose
    from fsdpcfg.runinfo import run_config

    composed = compose(overrides)
    check_or_refuse(composed)
    cfg = run_config(composed)  # resolved; secrets kept as their ${oc.env:NAME} references
    if cfg["fsdpcfg"]["launcher"] != "native":
        return composed, cfg, None
    if composed.kind == "sft":  # verl's sft_trainer_engine layout: the native SFT trainer
        from fsdpcfg.train.sft.plan import make_sft_plan

        plan = make_sft_plan(cfg)
    else:
        from fsdpcfg.plan import make_plan

        plan = make_plan(cfg)
    from fsdpcfg.train.ckpt_layout import check_resume_world_size

    check_resume_world_size(cfg["trainer"], plan.world_size)  # refused here, before torchrun starts
    return composed, cfg, plan


def _launch(composed, cfg, plan, dry_run: bool) -> int:
    if plan is None:
        from fsdpcfg.launch.verl import launch_verl

        return launch_verl(composed, dry_run=dry_run, echo=_echo)
    from fsdpcfg.launch.native import absolutise, launch_native
    from fsdpcfg.runinfo import write_run_info

    cfg = absolutise(cfg)
    write_run_info(cfg["fsdpcfg"]["run_dir"], composed, plan=plan)
    return launch_native(cfg, plan=plan, dry_run=dry_run, echo=_echo)


def sweep_points(overrides: list[str]) -> list[list[str]]:
    """The distinct points of sweep ``overrides`` in Hydra's order (the last key varies fastest), without Hydra's
    own ``hydra.*`` overrides (:func:`fsdpcfg.sweep.expand`).

    Raises:
        UsageError: an override that cannot be parsed or expanded.
    """
    from fsdpcfg.sweep import expand

    return expand(overrides).points


def run(args: argparse.Namespace) -> int:
    """Run one config, or a sweep (:func:`fsdpcfg.sweep.run_sweep`); return the exit code."""
    if not args.multirun:
        composed, cfg, plan = prepare(args.overrides)
        return _launch(composed, cfg, plan, args.dry_run)
    from fsdpcfg.sweep import run_sweep

    return run_sweep(args.overrides, only_valid=args.only_valid, dry_run=args.dry_run, echo=_echo)
