"""Where fsdpcfg finds its config tree, its shipped data and its built offline assets.

The config tree (``conf/``) and the recipes (``recipes/``) live at the top of the repository; an installed
(non-editable) package carries copies under ``fsdpcfg/_tree``. Offline assets that are built rather than
shipped (the tiny model checkpoints) go under ``$FSDPCFG_HOME`` (default ``~/.cache/fsdpcfg``).
"""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
REPO_DIR = PACKAGE_DIR.parent


#: Config kinds and their tree, relative to ``conf/``: ``ppo`` is verl's ppo_trainer layout (RL: GRPO/PPO),
#: ``sft`` verl's sft_trainer_engine layout. A recipe says which it extends with ``fsdpcfg.kind``.
KINDS = {"ppo": ".", "sft": "sft"}


def conf_dir(kind: str = "ppo") -> Path:
    """Return the Hydra config directory of ``kind`` (the folder holding ``config.yaml`` and the groups).

    Raises:
        FileNotFoundError: the tree is missing (a broken install).
        KeyError: ``kind`` is not one of :data:`KINDS`.
    """
    rel = KINDS[kind]
    for candidate in (REPO_DIR / "conf", PACKAGE_DIR / "_tree" / "conf"):
        if (candidate / rel / "config.yaml").is_file():
            return (candidate / rel).resolve()
    raise FileNotFoundError(f"fsdpcfg config tree not found under {REPO_DIR / 'conf'} or {PACKAGE_DIR / '_tree'}")


def recipes_dir() -> Path:
    """Return the directory of recipe YAML files (the ``recipe`` config group, shared by every kind)."""
    return (conf_dir("ppo") / "recipe").resolve()


def data_dir() -> Path:
    """Return the package's shipped data directory (datasets, reference tables)."""
    return PACKAGE_DIR / "data"


def home_dir() -> Path:
    """Return ``$FSDPCFG_HOME`` (default ``~/.cache/fsdpcfg``), where built offline assets live."""
    return Path(os.environ.get("FSDPCFG_HOME") or Path.home() / ".cache" / "fsdpcfg").expanduser()
