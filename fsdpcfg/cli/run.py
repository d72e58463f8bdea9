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
from pathlib import Path

from fsdpcfg.cli import hydra_flags
from fsdpcfg.errors import ConfigError, UsageError

PASS_THROUGH = True


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register the options (for ``--help``; :func:`parse` reads the command line itself)."""
    parser.add_argument("overrides", nargs="*", help="Hydra overrides: +recipe=NAME, group=option, key=value")
    parser.add_argument("-m", "--multirun", action="store_true", help="sweep over comma-separated values")
    parser.add_argument("--dry-run", action="store_true", help="compose, check and plan; print the command")
    parser.add_argument(
        "--only-valid", action="store_true", help="sweeps: launch the points that pass the checks even when others fail"
    )
    hydra = parser.add_argument_group("Hydra's flags (fsdpcfg.cli.hydra_flags)")
    hydra.add_argument(
        "-c",
        "--cfg",
        choices=hydra_flags.CFG_CHOICES,
        help="print the composed config (job, hydra or all) and exit; nothing is checked or started",
    )
    hydra.add_argument("-p", "--package", help="with --cfg: print only this dotted section")
    hydra.add_argument("--resolve", action="store_true", help="with --cfg: resolve interpolations")
    hydra.add_argument(
        "-i",
        "--info",
        nargs="?",
        const="all",
        choices=hydra_flags.INFO_CHOICES,
        help="print the search path, the group choices and the config groups, and exit",
    )
    hydra.add_argument("-cp", "--config-path", help="folder of a config file to run (with -cn)")
    hydra.add_argument(
        "-cn",
        "--config-name",
        help="config file to run, without .yaml (a recipe or a saved "
        "run's config.yaml): the same as +recipe=DIR/NAME.yaml",
    )
    hydra.add_argument(
        "-sc",
        "--shell-completion",
        metavar="install=SHELL",
        help="print the tab-completion code for bash, zsh or fish (eval it), or uninstall=SHELL",
    )
    hydra.add_argument("--version", action="store_true", help="print the versions of fsdpcfg and its stack")


#: flags that take a value (``--cfg job`` or ``--cfg=job``), by every spelling -> attribute.
_VALUED = {
    "-c": "cfg",
    "--cfg": "cfg",
    "-p": "package",
    "--package": "package",
    "-cp": "config_path",
    "--config-path": "config_path",
    "-cn": "config_name",
    "--config-name": "config_name",
    "-sc": "shell_completion",
    "--shell-completion": "shell_completion",
}
_BOOL = {
    "-m": "multirun",
    "--multirun": "multirun",
    "--dry-run": "dry_run",
    "--only-valid": "only_valid",
    "--resolve": "resolve",
    "--version": "version",
}


def parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """Split ``argv`` into flags and overrides (overrides may start with ``+``, ``~`` or contain ``=``).

    Raises:
        UsageError: an unknown option, a flag without its value, or a value a flag does not take.
    """
    ns = argparse.Namespace(
        overrides=[], info=None, **{a: False for a in _BOOL.values()}, **{a: None for a in _VALUED.values()}
    )
    i = 0
    while i < len(argv):
        a = argv[i]
        flag, eq, value = a.partition("=") if a.startswith("-") else (a, "", "")
        if a in _BOOL:
            setattr(ns, _BOOL[a], True)
        elif flag in _VALUED:
            if not eq:
                if i + 1 >= len(argv):
                    raise UsageError(f"{flag} needs a value", fix=f"e.g. {flag} {_example(flag)}")
                i += 1
                value = argv[i]
            setattr(ns, _VALUED[flag], value)
        elif flag in ("-i", "--info"):
            if eq:
                ns.info = value
            elif i + 1 < len(argv) and argv[i + 1] in hydra_flags.INFO_CHOICES:
                i += 1
                ns.info = argv[i]
            else:
                ns.info = "all"
        elif a in ("-h", "--help"):
            parser.print_help()
            raise SystemExit(0)
        elif a.startswith("-") and not a.startswith("--") or a.startswith("--") and "=" not in a:
            raise UsageError(
                f"unknown option {a}",
                fix="options: -m/--multirun, --dry-run, --only-valid, "
                "--cfg, --package, --resolve, --info, -cp/-cn, -sc, --version, --help; "
                "the rest are overrides",
            )
        else:
            ns.overrides.append(a)
        i += 1
    if ns.cfg is not None and ns.cfg not in hydra_flags.CFG_CHOICES:
        raise UsageError(f"--cfg {ns.cfg}: unknown", fix=f"use one of {', '.join(hydra_flags.CFG_CHOICES)}")
    if ns.info is not None and ns.info not in hydra_flags.INFO_CHOICES:
        raise UsageError(f"--info {ns.info}: unknown", fix=f"use one of {', '.join(hydra_flags.INFO_CHOICES)}")
    if ns.config_path is not None or ns.config_name is not None:
        ns.overrides.insert(0, hydra_flags.config_file_override(ns.config_path, ns.config_name))
    return ns


def _example(flag: str) -> str:
    return {
        "cfg": "job",
        "package": "actor_rollout_ref.actor",
        "config_path": "runs/fsdpcfg/qwen_grpo",
        "config_name": "config",
        "shell_completion": "install=bash",
    }[_VALUED[flag]]


def hydra_flag_output(args: argparse.Namespace) -> str | None:
    """What a Hydra flag prints instead of running (``--version``, ``-sc``, ``--cfg``, ``--info``), or ``None``."""
    if args.version:
        return hydra_flags.version_text()
    if args.shell_completion:
        action = args.shell_completion
        if action.startswith("query="):
            return "\n".join(hydra_flags.completions(hydra_flags.env_completion_line()))
        return hydra_flags.completion_script(action)
    if args.cfg:
        return hydra_flags.cfg_text(args.overrides, args.cfg, package=args.package, resolve=args.resolve)
    if args.info:
        return hydra_flags.info_text(args.overrides, args.info)
    return None


def _echo(text: str) -> None:
    print(text, flush=True)


def _format(f, composed) -> str:
    where = ""
    if f.keys:
        src = f.provenance.get(f.keys[0]) or (
            composed.provenance.source_of(f.keys[0]) if composed is not None else None
        )
        where = f"{src}: " if src else ""
    keys = ", ".join(k for k in f.keys if k not in f.message)
    head = f"{f.severity}: [{f.rule}] {where}{keys + ': ' if keys else ''}{f.message}"
    return f"{head}\n  -> {f.fix}" if f.fix else head


def check_or_refuse(composed) -> None:
    """Run the pre-flight checks, print every finding, and refuse to continue on any error.

    Raises:
        ConfigError: at least one error-severity finding (all were printed first).
    """
    from omegaconf import OmegaConf

    from fsdpcfg.check import check_config, has_errors

    findings = check_config(composed)
    # the section may be anything the user wrote (`fsdpcfg: null`, `fsdpcfg=${nope.key}`): the schema reports it
    launcher = OmegaConf.select(composed.cfg, "fsdpcfg.launcher", default=None, throw_on_resolution_failure=False)
    if has_errors(findings) and launcher == "verl":
        # the run stops anyway: also say what verl needs that this machine lacks (FC85x, fsdpcfg/launch/verl_launch.py)
        from fsdpcfg.launch.verl_launch import launch_findings

        findings = list(findings) + launch_findings(composed.to_container(resolve=True))
    for f in findings:
        print(_format(f, composed), file=sys.stderr if f.severity == "error" else sys.stdout, flush=True)
    if has_errors(findings):
        n = sum(f.severity == "error" for f in findings)
        raise ConfigError(f"{n} error(s) in the config; nothing was started")


def prepare(overrides: list[str]):
    """Compose ``overrides``, check the result (refusing on errors) and plan it by its run kind
    (:func:`fsdpcfg.plan.plan_run`).

    Returns:
        ``(composed, cfg, plan)``; ``plan`` is ``None`` for launcher=verl (verl plans its own run).

    Raises:
        ConfigError: a config that cannot be composed, an error finding (an override Hydra refused included:
            :func:`fsdpcfg.check.compose_for_check`), or a plan that does not divide.
    """
    from fsdpcfg.check import compose_for_check
    from fsdpcfg.runinfo import run_config

    # what Hydra refuses is reported beside every other finding, as `fsdpcfg check` does; any of it stops the run
    composed, failed = compose_for_check(overrides)
    if composed is None:
        for f in failed:
            print(_format(f, None), file=sys.stderr, flush=True)
        raise ConfigError(f"{len(failed)} error(s) in the config; nothing was started")
    check_or_refuse(composed)
    cfg = run_config(composed)  # resolved; secrets kept as their ${oc.env:NAME} references
    if cfg["fsdpcfg"]["launcher"] != "native":
        return composed, cfg, None
    from fsdpcfg.plan import plan_run

    return composed, cfg, plan_run(cfg)


def _launch(composed, cfg, plan, dry_run: bool) -> int:
    """Run :func:`fsdpcfg.launch.preflight.preflight` on ``cfg``, then launch it (native with ``plan``, verl
    without); return the exit code."""
    from fsdpcfg.launch.preflight import preflight

    cfg = preflight(cfg, plan, dry_run=dry_run, echo=_echo)
    if plan is None:
        from fsdpcfg.launch.folders import dry_run_folder, hold_folders
        from fsdpcfg.launch.verl import launch_verl

        if dry_run:  # the verl YAML goes to <run_dir>/verl unless the run folder holds a run
            folder = dry_run_folder(cfg["fsdpcfg"]["run_dir"], _echo)
            return launch_verl(composed, dry_run=True, echo=_echo, config_dir=Path(folder) / "verl", run_dir=folder)
        with hold_folders(cfg, _echo):
            return launch_verl(composed, dry_run=False, echo=_echo)
    from fsdpcfg.launch.native import launch_native

    return launch_native(cfg, plan=plan, dry_run=dry_run, echo=_echo, composed=composed)


def sweep_points(overrides: list[str]) -> list[list[str]]:
    """The distinct points of sweep ``overrides`` in Hydra's order (the last key varies fastest), without Hydra's
    own ``hydra.*`` overrides (:func:`fsdpcfg.sweep.expand`).

    Raises:
        UsageError: an override that cannot be parsed or expanded.
    """
    from fsdpcfg.sweep import expand

    return expand(overrides).points


def run(args: argparse.Namespace) -> int:
    """Run one config, or a sweep (:func:`fsdpcfg.sweep.run_sweep`); return the exit code. A Hydra flag
    (``--cfg``, ``--info``, ``--version``, ``-sc``) prints its answer instead and starts nothing."""
    shown = hydra_flag_output(args)
    if shown is not None:
        print(shown.rstrip("\n"))
        return 0
    if not args.multirun:
        composed, cfg, plan = prepare(args.overrides)
        rc = _launch(composed, cfg, plan, args.dry_run)
        if rc == 0 and plan is not None and not args.dry_run:
            from fsdpcfg.runinfo.summary import closing_summary

            _echo(closing_summary(cfg, args.overrides))
        return rc
    from fsdpcfg.sweep import run_sweep

    return run_sweep(args.overrides, only_valid=args.only_valid, dry_run=args.dry_run, echo=_echo)
