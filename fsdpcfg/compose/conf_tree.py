"""The config tree's groups and their options: what ``conf/`` (``conf/sft`` for SFT) and the recipe folders offer.

Read by composition (:mod:`fsdpcfg.compose._compose`) and by the config-file classification
(:mod:`fsdpcfg.compose.config_file`), which tells a recipe by the groups and recipes its defaults list names.
"""

from __future__ import annotations

import functools
from pathlib import Path

from fsdpcfg import paths, yamlio
from fsdpcfg.compose import verl_base


def groups(kind: str = "ppo") -> tuple[str, ...]:
    """Return the config groups of the ``kind`` tree, in the order its root ``config.yaml`` lists them."""
    root = paths.conf_dir(kind) / "config.yaml"
    st = root.stat()
    return _groups_of(root, st.st_mtime_ns, st.st_size)


def group_folders(kind: str = "ppo") -> tuple[str, ...]:
    """Return the names Hydra finds as config groups in the ``kind`` tree's folder: its subfolders (``engine``,
    ``recipe``, ..., also those no defaults list names, such as the RL tree's ``sft``), sorted."""
    conf = paths.conf_dir(kind)
    return _folders_of(conf, conf.stat().st_mtime_ns)


@functools.lru_cache(maxsize=8)
def _folders_of(conf: Path, _mtime_ns: int) -> tuple[str, ...]:
    return tuple(sorted(p.name for p in conf.iterdir() if p.is_dir()))


@functools.lru_cache(maxsize=8)
def _groups_of(root: Path, _mtime_ns: int, _size: int) -> tuple[str, ...]:
    data = yamlio.load_file(root) or {}
    out = []
    for entry in data.get("defaults", []):
        if isinstance(entry, dict):
            for k in entry:
                name = str(k).replace("override ", "").strip().lstrip("/").split("@")[0]
                if name not in ("_self_", verl_base.GROUP):
                    out.append(name)
    return tuple(out)


#: Config groups of the RL (ppo) tree, in the order the root config's defaults list names them.
GROUPS = groups("ppo")


def available_options(group: str, kind: str = "ppo", extra_dirs: list[Path] | None = None) -> list[str]:
    """Return the option names of a config group of the ``kind`` tree (``recipe`` included: with the recipes of
    ``extra_dirs``, a user's recipe folders), sorted."""
    if group != "recipe":
        return sorted(p.stem for p in (paths.conf_dir(kind) / group).glob("*.yaml"))
    names = {p.stem for d in [paths.recipes_dir(), *(extra_dirs or [])] for p in Path(d).glob("*.y*ml")}
    return sorted(n for n in names if n)
