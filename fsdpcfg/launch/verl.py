"""launcher=verl: turn a validated composed config into verl 0.9.1's own invocation.

How the config reaches verl: a YAML file passed with ``--config-path DIR --config-name NAME``, whose
defaults list puts verl's own entry-point config first and the fsdpcfg config on top::

    defaults: [ppo_trainer, _self_]          # or sft_trainer_engine for SFT
    hydra: {searchpath: [pkg://verl.trainer.config]}
    actor_rollout_ref: {...}                 # the keys fsdpcfg composed, verl's names, fsdpcfg section gone

Why a YAML rather than a list of ``key=value`` overrides on verl's command line:

* verl composes its full tree itself (its defaults, its interpolations, its ``_target_`` dataclass
  markers) exactly as ``python -m verl.trainer.main_ppo`` does with no arguments; fsdpcfg's keys merge on
  top, like a verl user's own config file. ``pkg://verl.trainer.config`` finds verl's configs wherever verl
  is installed, so the file moves to a cluster unchanged.
* Keys verl reads but does not list (``ray_kwargs.ray_init.address``, ray's ``runtime_env.env_vars``,
  ``engine_kwargs``) need ``+`` on a command line but merge plainly from a file, and lists, dicts and
  strings with spaces need no shell-plus-Hydra quoting.
* The user reads one file and can still append ``key=value`` overrides to the command.

Hydra merges a file's keys without rejecting unknown ones, so the config must have passed fsdpcfg's
check first (:func:`require_valid`; ``fsdpcfg check --verl`` also lists the keys verl would ignore).

SFT (``fsdpcfg.kind: sft``, verl's ``sft_trainer_engine`` layout) runs ``torchrun -m
verl.trainer.sft_trainer`` with the same YAML mechanism; the entry point comes from
:data:`fsdpcfg.verlref.ENTRY_POINTS`.

The keys the YAML holds are the config translated into verl's tree (:func:`fsdpcfg.check.to_verl.verl_tree`), the
translation the second opinion (:mod:`fsdpcfg.check.verl_opinion`) hands verl too.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fsdpcfg import paths, verlref, yamlio
from fsdpcfg.check.to_verl import verl_composition, verl_defaults_list, verl_tree
from fsdpcfg.errors import ConfigError

#: Hydra search path entry that finds verl's configs inside the installed verl package.
VERL_SEARCHPATH = "pkg://verl.trainer.config"
#: File name of the written config (``--config-name`` is its stem).
CONFIG_FILE = "config.yaml"


@dataclass
class VerlInvocation:
    """Everything needed to start verl on a config.

    Attributes:
        argv: the command, e.g. ``[python, -m, verl.trainer.main_ppo, --config-path=DIR, --config-name=config]``.
        env: environment variables to set on top of the current environment (``fsdpcfg.env``).
        yaml_text: the config file's full text (header comment, defaults list, verl keys).
        config_dir: the folder ``--config-path`` names; the YAML must be written there
            (:meth:`write`) before ``argv`` runs.
        kind: ``ppo`` or ``sft``.
        verl_config: verl's entry-point config the YAML extends (``ppo_trainer``, ``sft_trainer_engine``).
        entry_point: the verl module run (``verl.trainer.main_ppo``, ``verl.trainer.sft_trainer``).
        tree: the verl config as nested dicts (what the YAML holds besides ``defaults``/``hydra``).
        notes: things the user should know about the hand-over (local paths, data formats).
    """

    argv: list[str]
    env: dict[str, str]
    yaml_text: str
    config_dir: Path
    kind: str
    verl_config: str
    entry_point: str
    tree: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def config_path(self) -> Path:
        """Path of the YAML file the command reads."""
        return self.config_dir / CONFIG_FILE

    def write(self, run_dir: Path | None = None) -> Path:
        """Write the YAML into :attr:`config_dir` (created if needed, atomically, secrets as references:
        :func:`fsdpcfg.redact.write_private`) and return its path. With ``run_dir`` (the run folder holding
        :attr:`config_dir`), the path is built with :func:`fsdpcfg.paths.owned`: the run folder is claimed and
        a ``verl`` link leading out of it is refused.

        Raises:
            FolderNotOwned: ``run_dir`` holds files fsdpcfg did not write (rule FC731).
            PathEscape: :attr:`config_dir` resolves outside ``run_dir``.
        """
        from fsdpcfg.redact import write_private

        path = self.config_path
        if run_dir is not None:
            path = paths.owned(run_dir, os.path.relpath(path, run_dir), key="fsdpcfg.run_dir")
        path.parent.mkdir(parents=True, exist_ok=True)
        return write_private(path, self.yaml_text)

    def command_line(self) -> str:
        """The exact command as one shell line, ``env`` assignments first; a secret is shown as the variable it
        comes from (``WANDB_API_KEY="${MYKEY}"``, :func:`fsdpcfg.redact.shell_value`), never its value."""
        from fsdpcfg.redact import scrub_text, shell_value

        prefix = " ".join(f"{k}={shell_value(k, v)}" for k, v in self.env.items())
        return (prefix + " " if prefix else "") + scrub_text(shlex.join(self.argv))


def env_of(composed: Any) -> dict[str, str]:
    """Return ``fsdpcfg.env`` (environment variables for the verl run) as ``{str: str}``.

    Raises:
        ConfigError: ``fsdpcfg.env`` is not a mapping of names to scalars.
    """
    cfg = composed.to_container(resolve=True)
    env = (cfg.get("fsdpcfg") or {}).get("env") or {}
    if not isinstance(env, dict):
        raise ConfigError(
            "must be a mapping of environment variable names to values",
            key="fsdpcfg.env",
            value=env,
            fix="write it as fsdpcfg.env: {NCCL_DEBUG: WARN} or +fsdpcfg.env.NAME=VALUE",
        )
    out = {}
    for k, v in env.items():
        if isinstance(v, (dict, list)) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", str(k)):
            raise ConfigError(
                "an environment variable needs a NAME and a scalar value",
                key=f"fsdpcfg.env.{k}",
                value=v,
                fix="use a shell-style name (letters, digits, _) and a string or number",
            )
        out[str(k)] = "" if v is None else (str(v).lower() if isinstance(v, bool) else str(v))
    return out


def _header(config: str, entry: str, composed: Any, notes: list[str]) -> str:
    lines = [
        f"verl {verlref.VERL_VERSION} config written by fsdpcfg (launcher=verl): {entry} reads verl's own",
        f"`{config}` config first, then the keys below on top (this file's defaults list).",
        f"Run: {'torchrun --nproc_per_node=GPUS -m' if config in verlref.SFT_COMPOSITIONS else 'python -m'} {entry} "
        f"--config-path=<this folder> --config-name={Path(CONFIG_FILE).stem} [key=value ...]",
    ]
    choices = getattr(composed, "choices", {}) or {}
    if choices:
        lines.append("Composed from: " + " ".join(f"{k}={v}" for k, v in choices.items()))
    if getattr(composed, "overrides", None):
        lines.append("Overrides: " + " ".join(composed.overrides))
    lines += [f"Note: {n}" for n in notes]
    return "".join(f"# {line}\n" for line in lines)


def _notes(tree: dict[str, Any], config: str) -> list[str]:
    notes = []
    flat = verlref.flatten(tree)
    for key in ("data.train_files", "data.val_files"):
        files = flat.get(key)
        for f in files if isinstance(files, list) else [files]:
            if isinstance(f, str) and f.endswith((".jsonl", ".json")):
                notes.append(
                    f"{key} is JSON lines; verl {verlref.VERL_VERSION}'s datasets read .jsonl/.json as "
                    "well as .parquet, so it is passed as it is"
                )
                break
    home = str(paths.home_dir())
    for key, v in flat.items():
        if isinstance(v, str) and (v.startswith(home) or v.startswith(str(paths.PACKAGE_DIR))):
            notes.append(
                f"{key} is a path on this machine ({v}); on a cluster every node needs it there, or override it"
            )
    return notes


def build_verl_invocation(
    composed: Any, config_dir: str | Path | None = None, *, python: str | None = None
) -> VerlInvocation:
    """Build verl's invocation for a validated composed config (``fsdpcfg.compose.Composed``).

    Args:
        composed: the composed config (kind ``ppo`` or ``sft``).
        config_dir: where the YAML will be written (``--config-path``); default ``<fsdpcfg.run_dir>/verl``.
        python: the interpreter in the command (default ``python3``, what a cluster node has on PATH).

    RL runs ``python3 -m verl.trainer.main_ppo``; SFT runs ``torchrun --nnodes=N --nproc_per_node=G -m
    verl.trainer.sft_trainer`` (multi-node SFT rendezvous at ``$MASTER_ADDR:$MASTER_PORT``, which must be
    set). Node and GPU counts are verl's own ``trainer.nnodes``/``trainer.n_gpus_per_node``; attaching to a
    running Ray cluster is verl's ``ray_kwargs.ray_init.address`` (``+ray_kwargs.ray_init.address=auto``).

    Raises:
        ConfigError: a required value not set, a bad ``fsdpcfg.env``, multi-node SFT without ``MASTER_ADDR``.
    """
    kind = getattr(composed, "kind", "ppo")
    config = verl_composition(composed)
    entry = verlref.ENTRY_POINTS[config]
    tree = verl_tree(composed)
    env = env_of(composed)
    if env and kind == "ppo":
        # Ray workers on other nodes do not inherit the driver's environment; runtime_env reaches them.
        ray_env = tree.setdefault("ray_kwargs", {}).setdefault("ray_init", {}).setdefault("runtime_env", {})
        env_vars = ray_env.setdefault("env_vars", {})
        for k, v in env.items():
            env_vars.setdefault(k, v)  # an explicit runtime_env.env_vars entry wins
    if config_dir is None:
        run_dir = (composed.to_container(resolve=True).get("fsdpcfg") or {}).get("run_dir") or "runs/verl"
        config_dir = Path(run_dir) / "verl"
    config_dir = Path(config_dir).absolute()
    from fsdpcfg.redact import scrub, scrub_text

    tree = scrub(tree)  # a secret verl reads (runtime_env.env_vars) becomes ${oc.env:NAME}: verl resolves it
    notes = _notes(tree, config)
    doc = {"defaults": verl_defaults_list(config), "hydra": {"searchpath": [VERL_SEARCHPATH]}, **tree}
    text = scrub_text(_header(config, entry, composed, notes) + yamlio.dump(doc, default_flow_style=False, width=120))
    cfg_args = [f"--config-path={config_dir}", f"--config-name={Path(CONFIG_FILE).stem}"]
    py = python or "python3"
    if kind == "ppo":
        argv = [py, "-m", entry, *cfg_args]
    else:
        trainer = tree.get("trainer", {})
        nnodes = int(trainer.get("nnodes", verlref.defaults(config)["trainer.nnodes"]))
        ngpus = int(trainer.get("n_gpus_per_node", verlref.defaults(config)["trainer.n_gpus_per_node"]))
        argv = ["torchrun", f"--nnodes={nnodes}", f"--nproc_per_node={ngpus}"]
        if nnodes > 1:
            addr = env.get("MASTER_ADDR") or os.environ.get("MASTER_ADDR")
            if not addr:
                raise ConfigError(
                    f"multi-node SFT ({nnodes} nodes) needs a rendezvous address",
                    key="trainer.nnodes",
                    value=nnodes,
                    fix="set MASTER_ADDR (and MASTER_PORT) in the environment or in "
                    "fsdpcfg.env, and start the same command on every node",
                )
            port = env.get("MASTER_PORT") or os.environ.get("MASTER_PORT") or "29500"
            argv += ["--rdzv_backend=c10d", f"--rdzv_endpoint={addr}:{port}"]
        argv += ["-m", entry, *cfg_args]
    return VerlInvocation(
        argv=argv,
        env=env,
        yaml_text=text,
        config_dir=config_dir,
        kind=kind,
        verl_config=config,
        entry_point=entry,
        tree=tree,
        notes=notes,
    )


def require_valid(composed: Any) -> list[Any]:
    """Run fsdpcfg's checks (:func:`fsdpcfg.check.check_config`, or the schema's key and type validation
    where the full check is not available) and return the non-error findings.

    Raises:
        ConfigError: the first error, with the number of further errors (``fsdpcfg check`` lists them all).
    """
    check_config: Callable[[Any], list[Any]] | None
    try:
        from fsdpcfg.check import check_config
    except ImportError:
        check_config = None
    if check_config is not None:
        findings = list(check_config(composed))
        errors = [f for f in findings if f.severity == "error"]
        if errors:
            f = errors[0]
            more = f" (and {len(errors) - 1} more error(s))" if len(errors) > 1 else ""
            raise ConfigError(
                f"[{f.rule}] {f.message}{more}",
                key=f.keys[0] if f.keys else None,
                fix=f"{f.fix}; `fsdpcfg check` lists every finding",
            )
        return [f for f in findings if f.severity != "error"]
    from fsdpcfg.schema.validate import validate_tree

    report = validate_tree(composed.to_container(resolve=True))
    if report.issues:
        i = report.issues[0]
        raise ConfigError(i.message, key=i.key, value=i.value, fix=i.fix)
    if report.legacy:
        raise ConfigError(
            "is under a section verl 0.9 no longer reads; it would be ignored",
            key=report.legacy[0],
            fix="move it under reward.custom_reward_function.* / reward.reward_model.*",
        )
    return []


def launch_verl(
    composed: Any,
    *,
    dry_run: bool = False,
    config_dir: str | Path | None = None,
    echo: Callable[[str], None] = print,
    check_machine: bool = True,
    run_dir: str | Path | None = None,
) -> int:
    """Start verl on ``composed`` and return its exit code (0 for a dry run).

    Writes the YAML (into ``config_dir``, default ``<fsdpcfg.run_dir>/verl``; inside the run folder, ``run_dir``
    or by default ``fsdpcfg.run_dir``, it is written as every run-folder file is: :meth:`VerlInvocation.write`),
    then (unless ``dry_run``) runs the command with ``fsdpcfg.env`` added to the current
    environment, streaming verl's output. Before anything starts, :func:`fsdpcfg.launch.verl_launch.
    launch_findings` checks this machine (CUDA GPUs, verl and the rollout engine installed); on a dry run
    its findings are printed as warnings instead.

    Raises:
        ConfigError: the machine cannot run verl (a GPU-less machine: use launcher=native), or the config
            cannot be handed over (see :func:`build_verl_invocation`).
        Interrupted: a signal stopped verl (:func:`fsdpcfg.launch.signals.run_forwarding`).
    """
    from fsdpcfg.launch.verl_launch import launch_findings

    inv = build_verl_invocation(composed, config_dir, python=sys.executable)  # the interpreter verl was found in
    findings = launch_findings(composed.to_container(resolve=True)) if check_machine else []
    errors = [f for f in findings if f.severity == "error"]
    if errors and not dry_run:
        f = errors[0]
        more = "".join(f"\n  [{g.rule}] {g.message}\n    -> {g.fix}" for g in errors[1:])
        raise ConfigError(
            f"[{f.rule}] this machine cannot start verl (nothing was started): {f.message}{more}",
            key=f.keys[0] if f.keys else None,
            fix=f.fix,
        )
    if run_dir is None and config_dir is None:
        run_dir = inv.config_dir.parent  # the default <fsdpcfg.run_dir>/verl
    path = inv.write(run_dir=Path(run_dir) if run_dir is not None else None)
    echo(f"verl config: {path}")
    for n in inv.notes:
        echo(f"note: {n}")
    for f in findings:
        echo(f"{'warning' if dry_run else f.severity}: [{f.rule}] {f.message}")
    echo(inv.command_line())
    if dry_run:
        return 0
    sys.stdout.flush()
    from fsdpcfg.launch.signals import run_forwarding

    # as for torchrun: SIGINT/SIGTERM/SIGHUP forwarded and waited for, verl dies with this process
    return run_forwarding(inv.argv, {**os.environ, **inv.env}, say=echo)
