"""OmegaConf resolvers that the config tree uses for paths: ``${fsdpcfg_home:...}``, ``${fsdpcfg_data:...}``,
``${fsdpcfg_pkg:...}`` and ``${fsdpcfg_latest:...}``. They return absolute paths, so a saved or exported config
needs no resolver."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from omegaconf import OmegaConf

from fsdpcfg import paths

#: The last path component ``${fsdpcfg_latest:ROOT}`` returns while ROOT holds no complete checkpoint (never a
#: name the native loop writes): rule FC690 recognises it and says which run must come first.
NO_CHECKPOINT_YET = "no_complete_checkpoint_yet"
#: A subfolder holding the Hugging Face export inside a checkpoint folder (verl's layout), preferred when present.
HF_SUBFOLDER = "huggingface"


def latest_checkpoint(root: str) -> str:
    """``${fsdpcfg_latest:ROOT}``: the Hugging Face model folder of the newest complete ``global_step_N`` under
    ``ROOT`` (a ``trainer.default_local_dir``; relative to the current directory, as the run that wrote it).

    Complete is :func:`fsdpcfg.native.ckpt_layout.complete_checkpoints`'s test (manifest written last, every file
    it lists present), so a save in progress or killed is never picked. Returns the absolute
    ``ROOT/global_step_N`` (its ``huggingface/`` subfolder when that holds the ``config.json``), or
    ``ROOT/no_complete_checkpoint_yet`` when there is none: never raises at compose time, so ``fsdpcfg check``
    can say which run comes first (FC690) instead of failing to compose.
    """
    # torch-free (json and pathlib only): reads the folder layout, as the launcher does before torchrun
    from fsdpcfg.native.ckpt_layout import complete_checkpoints

    base = Path(root).expanduser().absolute()
    done = complete_checkpoints(base)
    if not done:
        return str(base / NO_CHECKPOINT_YET)
    hf = done[-1] / HF_SUBFOLDER
    return str(hf if (hf / "config.json").is_file() else done[-1])


def register() -> None:
    """Register the resolvers once per process (idempotent)."""
    table: dict[str, Callable[..., str]] = {
        "fsdpcfg_home": lambda rel="": str(paths.home_dir() / rel),
        "fsdpcfg_data": lambda rel="": str(paths.data_dir() / rel),
        "fsdpcfg_pkg": lambda rel="": str(paths.PACKAGE_DIR / rel),
        "fsdpcfg_latest": latest_checkpoint,
    }
    for name, fn in table.items():
        if not OmegaConf.has_resolver(name):
            OmegaConf.register_new_resolver(name, fn)
