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


def conf_dir() -> Path:
    """Return the Hydra config directory (the one holding ``config.yaml`` and the group folders)."""
    for candidate in (REPO_DIR / "conf", PACKAGE_DIR / "_tree" / "conf"):
        if (candidate / "config.yaml").is_file():
            return candidate
    raise FileNotFoundError(f"fsdpcfg config tree not found under {REPO_DIR / 'conf'} or {PACKAGE_DIR / '_tree'}")


def recipes_dir() -> Path:
    """Return the directory of recipe YAML files (the ``recipe`` config group)."""
    return conf_dir() / "recipe"


def data_dir() -> Path:
    """Return the package's shipped data directory (datasets, reference tables)."""
    return PACKAGE_DIR / "data"


def home_dir() -> Path:
    """Return ``$FSDPCFG_HOME`` (default ``~/.cache/fsdpcfg``), where built offline assets live."""
    return Path(os.environ.get("FSDPCFG_HOME") or Path.home() / ".cache" / "fsdpcfg").expanduser()
