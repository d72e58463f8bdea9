"""Compose each choice of config groups once per process: the tree Hydra builds from the defaults list is kept,
and the dotted overrides (``data.train_batch_size=8``, ``+a.b=1``, ``~a.b``) are applied to a copy of it.

Hydra composes in two stages itself (``hydra/_internal/config_loader_impl.py``, ``_load_configuration_impl``):
the group overrides choose the defaults list and the files are merged into one tree, then the config overrides
are applied to that tree, in order, by ``ConfigLoaderImpl._apply_overrides_to_config``, and the override lists
and ``override_dirname`` are filled in. This module splits the overrides the same way, keeps the first stage's
tree (by the group overrides, the config files' sizes and times, verl's stored trees and the working folder) and
runs Hydra's own second stage on a copy, so a check, a run and each point of a sweep compose in a fraction of the
time (~0.17 CPU s a compose of the main recipe, ~0.03 s from a kept tree here) with the same result:
``tests/compose/test_tree_cache.py`` compares both ways on every recipe and on random override sets.

A split that could change the result is not made (the overrides are composed whole): a non-group override
written after a dotted one (their order matters), a package (``a@b=...``), a sweep.
"""

from __future__ import annotations

import os
import pickle
from collections import OrderedDict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, open_dict

#: how many first-stage trees are kept (a sweep of 64 group choices; each tree is ~1 MiB).
MAX_TREES = 64

#: first-stage trees, pickled (unpickling a tree is ~2.5x faster than ``copy.deepcopy`` of it)
#: or the exception Hydra raised composing them (a refused group choice is refused again without composing).
_trees: OrderedDict[tuple[Any, ...], bytes | BaseException] = OrderedDict()


def split(parsed: list[Any], group_names: Iterable[str]) -> tuple[list[Any], list[Any]] | None:
    """Split Hydra's parsed overrides into (first stage, second stage), as Hydra splits them.

    Hydra (``hydra/_internal/defaults_list.py``, ``Overrides.__init__``) reads an override as a config override,
    applied to the composed tree in the order given, when its value is a dict or its key is not a config group
    (``repo.group_exists``); every other override chooses the defaults list. The second stage holds the config
    overrides (``data.x=1``, ``+top_level=1``, ``~key``, ``group={a: 1}``) except those on ``hydra*`` keys and
    those with a package (``a@b=...``); the first stage everything else. ``group_names`` are the names Hydra
    finds as groups (the config folders' subfolders, ``recipe``, the stored ``verl_base``); a key with a ``/`` is
    a group too. Returns ``None`` when the split could change the result: a first-stage override that is not a
    group choice (a ``hydra.*`` key) written after a second-stage one (config overrides apply in order)."""
    groups = set(group_names)
    first: list[Any] = []
    second: list[Any] = []
    for o in parsed:
        key = o.key_or_group
        if o.is_sweep_override():
            return None
        is_group = key in groups or "/" in key
        config_override = isinstance(o.value(), dict) or not is_group
        if config_override and o.package is None and not key.startswith("hydra"):
            second.append(o)
            continue
        if second and config_override:
            return None
        first.append(o)
    return first, second


def _folder_stamp(folder: Path) -> tuple[tuple[str, int, int], ...]:
    out = []
    for dirpath, _dirs, files in os.walk(folder):
        for name in files:
            if name.endswith((".yaml", ".yml")):
                p = os.path.join(dirpath, name)
                try:
                    st = os.stat(p)
                except OSError:
                    continue
                out.append((p, st.st_mtime_ns, st.st_size))
    return tuple(sorted(out))


def key(kind: str, first: list[str], folders: Iterable[Path], stored: Iterable[str]) -> tuple[Any, ...]:
    """The identity of a first-stage tree: the ``kind``, the first-stage override lines, the size and time of
    every YAML file under ``folders`` (the config tree, the recipes, a user's recipe folders), verl's trees
    stored in Hydra's ConfigStore (``stored``) and the working folder (``hydra.runtime.cwd``)."""
    return (
        kind,
        tuple(first),
        tuple((str(f), _folder_stamp(f)) for f in folders),
        tuple(sorted(stored)),
        os.getcwd(),
    )


def get(k: tuple[Any, ...]) -> DictConfig | None:
    """A copy of the kept tree for ``k``; ``None`` when there is none.

    Raises:
        BaseException: the exception Hydra raised for ``k`` (kept by :func:`put_error`), raised again.
    """
    tree = _trees.get(k)
    if tree is None:
        return None
    _trees.move_to_end(k)
    if isinstance(tree, BaseException):
        raise tree.with_traceback(tree.__traceback__)
    out: DictConfig = pickle.loads(tree)
    return out


def put(k: tuple[Any, ...], tree: DictConfig) -> None:
    """Keep a copy of ``tree`` (before any second-stage override) under ``k``."""
    _trees[k] = pickle.dumps(tree)
    while len(_trees) > MAX_TREES:
        _trees.popitem(last=False)


def put_error(k: tuple[Any, ...], error: BaseException) -> None:
    """Keep the exception Hydra raised composing the first stage of ``k`` (with its traceback: where it was raised
    tells Hydra's errors from fsdpcfg's): :func:`get` raises it again."""
    _trees[k] = error
    while len(_trees) > MAX_TREES:
        _trees.popitem(last=False)


def clear() -> None:
    """Forget every kept tree."""
    _trees.clear()


def second_stage(cfg: DictConfig, second: list[Any], parsed_all: list[Any]) -> None:
    """Apply the ``second`` overrides to ``cfg`` with Hydra's own code, then fill in what Hydra fills in after
    its config overrides: ``hydra.overrides.task`` / ``hydra.overrides.hydra`` (every override of
    ``parsed_all``, in order) and ``hydra.job.override_dirname``.

    Raises:
        hydra.errors.ConfigCompositionException: as Hydra raises it for the same override.
    """
    from hydra._internal.config_loader_impl import ConfigLoaderImpl, get_overrides_dirname

    ConfigLoaderImpl._apply_overrides_to_config(second, cfg)
    task = [o for o in parsed_all if not o.is_hydra_override()]
    with open_dict(cfg.hydra):
        cfg.hydra.overrides.task = [o.input_line for o in task]
        cfg.hydra.overrides.hydra = [o.input_line for o in parsed_all if o.is_hydra_override()]
        conf = cfg.hydra.job.config.override_dirname
        cfg.hydra.job.override_dirname = get_overrides_dirname(
            overrides=task, kv_sep=conf.kv_sep, item_sep=conf.item_sep, exclude_keys=conf.exclude_keys
        )
