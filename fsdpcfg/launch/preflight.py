"""The one step between a checked, planned config and a launch: what must hold on this machine before anything is
written or started.

    cfg = preflight(cfg, plan)                 # absolute folders; refuses a run that cannot start here
    launch_native(cfg, plan=plan)              # then only: lock folders, write config.yaml, run torchrun

In order (each refuses with a :class:`fsdpcfg.errors.ConfigError` naming the key and the fix):

1. the run folder and the checkpoint folder become absolute (:func:`absolutise`), so the workers and the saved
   config mean the same folders wherever they are read;
2. a ``${fsdpcfg_latest:ROOT}`` model path whose run has saved no checkpoint yet (rule FC690);
3. native runs (a ``plan``): a checkpoint to resume trained from another model or world size
   (:func:`fsdpcfg.runinfo.ckpt_identity.check_resume_identity`, :func:`fsdpcfg.native.ckpt_layout.
   check_resume_layout`);
4. native runs that start (not ``dry_run``): the offline assets the model paths name are built
   (:func:`ensure_assets`), the model and tokenizer exist (:func:`require_model`), the training files exist
   (:func:`require_data`).

A dry run stops after 3 (it prints the command on a machine that may not hold the model); launcher=verl
(``plan=None``) after 2 (verl checks its own inputs). Every step reads the run kind's record
(:mod:`fsdpcfg.runkind`) for where the model section is and how the config is typed.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from fsdpcfg import paths, runkind
from fsdpcfg.errors import ConfigError
from fsdpcfg.launch.torchrun import Layout


def absolutise(cfg: dict[str, Any]) -> dict[str, Any]:
    """Make the run folder and checkpoint folder absolute (relative to the current directory), so the workers
    and the saved config mean the same folders wherever they are read; return ``cfg`` (changed in place)."""
    cfg["fsdpcfg"]["run_dir"] = str(Path(cfg["fsdpcfg"]["run_dir"]).expanduser().absolute())
    cfg["trainer"]["default_local_dir"] = str(Path(cfg["trainer"]["default_local_dir"]).expanduser().absolute())
    return cfg


def ensure_assets(cfg: dict[str, Any], echo: Callable[[str], None] = print) -> list[Path]:
    """Build the offline assets the config's model and tokenizer paths point at (``$FSDPCFG_HOME/models/X``)
    when they are missing; return their folders. Paths elsewhere are left alone.

    Raises:
        ConfigError: the path names an asset folder that fsdpcfg does not know how to build.
    """
    models = (paths.home_dir() / "models").resolve()
    model_key = runkind.of(cfg).model_key
    model = runkind.model_of(cfg)
    built = []
    for key in ("path", "tokenizer_path"):
        value = model[key]
        if not value:
            continue
        p = Path(str(value)).expanduser()
        if p.is_absolute() and p.resolve().parent == models:
            from fsdpcfg import assets

            if p.name not in assets.SPECS:
                if p.is_dir():
                    continue
                raise ConfigError(
                    f"{p} does not exist and is not an asset fsdpcfg can build (known: {', '.join(assets.SPECS)})",
                    key=f"{model_key}.{key}",
                    value=str(value),
                    fix="choose model=tiny_qwen2 or point it at a model folder",
                )
            built.append(assets.ensure(p.name))
    return built


def require_model(cfg: dict[str, Any]) -> None:
    """Refuse, before torchrun starts, a model path the workers could not load: a missing folder, a folder
    without config.json, or a hub id that is neither cached nor reachable (the message names the offline
    option ``model=tiny_qwen2``). The tokenizer path, when set, must exist the same way.

    Raises:
        ConfigError: naming ``actor_rollout_ref.model.path`` (``model.path`` for SFT: the run kind's
            :attr:`fsdpcfg.runkind.RunKind.model_key`) and the fix.
    """
    from fsdpcfg.schema.model import require_model_path

    model_key = runkind.of(cfg).model_key
    model = runkind.model_of(cfg)
    for key in ("path", "tokenizer_path"):
        if key == "tokenizer_path" and not model.get(key):
            continue
        try:
            require_model_path(model[key])
        except ConfigError as e:
            e.key = f"{model_key}.{key}"
            raise


def require_data(cfg: dict[str, Any]) -> None:
    """Refuse, before torchrun starts, training data files that do not exist on this machine.

    Raises:
        ConfigError: naming ``data.train_files`` and the missing paths.
    """
    from fsdpcfg.rules.data_files import missing_files

    missing = missing_files(cfg["data"]["train_files"])
    if missing:
        raise ConfigError(
            f"no such file: {', '.join(missing)}",
            key="data.train_files",
            value=missing[0],
            fix="point data.train_files at a jsonl or parquet file in verl's format, or choose a "
            "shipped set (data=gsm8k, data=arith)",
        )


def preflight(
    cfg: dict[str, Any], plan: Layout | None, *, dry_run: bool = False, echo: Callable[[str], None] = print
) -> dict[str, Any]:
    """Make ``cfg`` (a resolved config that passed the rules) ready to launch and refuse what cannot start here
    (the steps of the module docstring); return it with absolute folders (changed in place).

    Args:
        cfg: the resolved config (nested dicts).
        plan: its plan (:func:`fsdpcfg.plan.plan_run`) for the native launcher; ``None`` for launcher=verl.
        dry_run: skip what needs the model and the data on this machine (step 4).
        echo: where a note goes (resuming a checkpoint of an older fsdpcfg, or of another model on purpose).

    Raises:
        ConfigError: a pending ``${fsdpcfg_latest:...}`` model (FC690), a checkpoint of another model or world
            size, an asset that cannot be built, a missing model, tokenizer or training file.
    """
    from fsdpcfg.rules.chain import refuse_pending_checkpoint

    kind = runkind.of(cfg)
    cfg = absolutise(cfg)
    refuse_pending_checkpoint(cfg, kind.name)  # FC690: the run it starts from has no checkpoint yet
    if plan is None:  # launcher=verl: verl checks its model, data and checkpoints itself
        return cfg
    from fsdpcfg.native.ckpt_layout import check_resume_layout
    from fsdpcfg.runinfo.ckpt_identity import check_resume_identity

    typed = kind.load("parse")(cfg)
    folder = check_resume_layout(typed.trainer)
    check_resume_identity(typed, folder, echo=echo)
    if dry_run:
        echo(_resume_note(folder, typed.trainer.default_local_dir))
    if not dry_run:
        ensure_assets(cfg, echo)
        require_model(cfg)
        require_data(cfg)
    return cfg


def _resume_note(folder: Path | None, root: str) -> str:
    """What a dry run says about resuming: the checkpoint and its step, or step 0 (and a damaged Hugging Face
    export the run would write again)."""
    from fsdpcfg.native.ckpt_layout import export_damage, read_manifest

    if folder is None:
        return f"dry run: the run would start at step 0 (no checkpoint to resume in {root})"
    note = f"dry run: the run would resume {folder} (step {(read_manifest(folder) or {}).get('step')})"
    if export_damage(folder):
        note += "; its Hugging Face export is damaged and would be written again from the trainer state"
    return note
