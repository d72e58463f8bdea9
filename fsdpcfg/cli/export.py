"""``fsdpcfg export --launcher verl +recipe=NAME [OVERRIDES...] -o DIR``: a runnable verl script and YAML.

Composes the config with ``launcher=verl`` added, runs fsdpcfg's checks (an error stops the export), and
writes ``DIR/config.yaml`` (verl's keys on top of verl's own ``ppo_trainer``/``sft_trainer_engine``),
``DIR/run_verl.sh`` (executable) and ``DIR/files/`` (copies of shipped data and reward files). See
:mod:`fsdpcfg.launch.verl_export`.

    $ fsdpcfg export --launcher verl +recipe=qwen_grpo -o out/      # rollout=hf becomes rollout=vllm (printed)
    $ fsdpcfg export --launcher verl +recipe=qwen_grpo rollout=sglang trainer=gpu_8x data.train_batch_size=64 -o out/
    $ bash out/run_verl.sh +ray_kwargs.ray_init.address=auto

Nothing here needs verl, a GPU or torch; ``--verl-check`` additionally asks verl itself (a subprocess that
imports verl, ~10 s) whether it accepts the exported config.
"""

from __future__ import annotations

import argparse

from fsdpcfg.errors import UsageError
from fsdpcfg.native import backends

#: The arguments are Hydra overrides mixed with export's own options.
PASS_THROUGH = True
LAUNCHERS = ("verl",)
#: Rollout backends only the native loop runs, and the one export picks instead when the recipe chose one.
NATIVE_ONLY_ROLLOUTS = tuple(b.name for b in backends.ROLLOUTS if b.launchers == ("native",))
VERL_DEFAULT_ROLLOUT = "vllm"


def _chose_rollout(tokens: list[str]) -> bool:
    """True when the user picked the rollout on the command line (group option or the key itself)."""
    return any(t.lstrip("+~").split("=", 1)[0] in ("rollout", "actor_rollout_ref.rollout.name") for t in tokens)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register ``export``'s arguments."""
    parser.add_argument(
        "tokens",
        nargs="*",
        metavar="RECIPE|OVERRIDE",
        help="a recipe (+recipe=NAME, NAME or a recipe file path), then Hydra overrides "
        "(key=value, +key=value, ~key, group=option)",
    )
    parser.add_argument(
        "--launcher",
        default="verl",
        choices=LAUNCHERS,
        help="the launcher to export for (verl: python -m verl.trainer.main_ppo / torchrun -m "
        "verl.trainer.sft_trainer)",
    )
    parser.add_argument("-o", "--output", required=True, metavar="DIR", help="folder to write into")
    parser.add_argument("--force", action="store_true", help="overwrite an earlier export in DIR")
    parser.add_argument(
        "--verl-check",
        action="store_true",
        help="also run verl's own validation on the written config (imports verl, ~10 s)",
    )


def parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """Parse options and overrides in any order."""
    return parser.parse_intermixed_args(argv)


def run(args: argparse.Namespace) -> int:
    """Compose, check and export; return 0, or 1 when ``--verl-check`` finds verl rejecting the config.

    Raises:
        ConfigError: the config fails fsdpcfg's checks or cannot be handed to verl.
        UsageError: the tokens choose another launcher than ``--launcher``.
    """
    from omegaconf import OmegaConf

    from fsdpcfg import catalog
    from fsdpcfg.launch.verl import require_valid
    from fsdpcfg.launch.verl_export import export_verl

    if args.verl_check:
        from fsdpcfg.check.verl_opinion import start_worker

        start_worker()  # verl's import (~10 s) runs in its own process while fsdpcfg composes, checks and writes
    tokens = list(args.tokens)
    chosen = [t for t in tokens if t.lstrip("+").startswith("launcher=")]
    if any(t.split("=", 1)[1] != args.launcher for t in chosen):
        raise UsageError(
            f"`{chosen[0]}` contradicts --launcher {args.launcher}",
            fix=f"drop `{chosen[0]}`; export writes the {args.launcher} invocation",
        )
    if not chosen:
        tokens.append(f"launcher={args.launcher}")
    composed = catalog.load(tokens)
    notes = []
    if (
        composed.kind == "ppo"
        and composed.origin != "file"
        and not _chose_rollout(tokens)
        and OmegaConf.select(composed.cfg, "actor_rollout_ref.rollout.name") in NATIVE_ONLY_ROLLOUTS
    ):
        # the recipe's rollout runs only in the native loop: verl needs a serving engine instead
        tokens.append(f"rollout={VERL_DEFAULT_ROLLOUT}")
        composed = catalog.load(tokens)
        notes.append(
            f"the recipe's rollout (hf) runs only under launcher=native; exported with "
            f"rollout={VERL_DEFAULT_ROLLOUT} (pass rollout=sglang to choose another engine)"
        )
    if composed.origin == "file":
        OmegaConf.update(composed.cfg, "fsdpcfg.launcher", args.launcher, force_add=True)
    for n in notes:
        print(f"note: {n}")
    for f in require_valid(composed):
        print(f"{f.severity}: [{f.rule}] {', '.join(f.keys)}: {f.message}")
    res = export_verl(composed, args.output, force=args.force)
    print(f"wrote {res.config}")
    print(f"wrote {res.script}")
    for key, path in res.copied.items():
        print(f"copied {key} -> {path}")
    for n in res.invocation.notes if res.invocation else []:
        print(f"note: {n}")
    print(f"run it: bash {res.script}")
    if args.verl_check:
        from fsdpcfg.check.verl_opinion import VerlUnavailable, verl_opinion

        try:
            op = verl_opinion(composed)
        except VerlUnavailable as e:
            raise UsageError(
                f"--verl-check needs verl in this environment: {e}",
                fix="pip install 'verl[verl-core]==0.9.1', or drop --verl-check",
            ) from None
        if op.not_run:
            print(f"verl's checks were not run: {op.not_run}")
            return 0
        if not op.accepted:
            print(f"verl {op.stage}: REJECTS the config: {op.error}")
            return 1
        print("verl 0.9.1 accepts the config (composition, validate_config, config dataclasses)")
    return 0
