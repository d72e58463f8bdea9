"""Where each value of a composed config came from: ``file:line``, a group option, or the command line.

Hydra does not record provenance, so it is replayed: the sources Hydra merged (root config, the chosen
group options in defaults order, the recipe, the command-line overrides) are read again with their YAML
line numbers, and each leaf key is attributed to the last source that set it or one of its parents.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import yaml


@dataclass(frozen=True)
class Source:
    """One place a value came from.

    Attributes:
        kind: ``"verl"`` (verl's own default, the tree's first layer: :mod:`fsdpcfg.compose.verl_base`),
            ``"default"`` (root config), ``"group"`` (a group option), ``"recipe"``, ``"file"``,
            ``"override"`` (command line) or ``"schema"`` (a default filled in by the schema).
        where: ``path:line`` for files, the override text for the command line.
        option: ``group=option`` for group options and recipes, else ``None``.
        shipped: the file is one of fsdpcfg's own tree (``conf/``, the shipped recipes), not the user's: a
            finding is never located there (:func:`fsdpcfg.cli.check.location`).
    """

    kind: str
    where: str
    option: str | None = None
    shipped: bool = False

    def location(self) -> tuple[str, int] | None:
        """``(file, line)`` where the value was written (1-based line; the file as shown, relative to the
        repository or the current folder when inside them), or ``None`` for the command line, a schema default
        or a source without a line."""
        if self.kind not in ("default", "group", "recipe", "file"):
            return None
        path, sep, line = self.where.rpartition(":")
        return (path, int(line)) if sep and path and line.isdigit() else None

    def __str__(self) -> str:
        if self.kind == "override":
            return f"command line `{self.where}`"
        if self.kind == "schema":
            return f"default ({self.where})"
        if self.kind == "verl":
            return self.where
        if self.option:
            return f"{self.option} ({self.where})"
        return self.where


def yaml_leaf_lines(path: Path) -> dict[str, int]:
    """Map each dotted key set by the YAML file at ``path`` to its 1-based line (lists are leaves).

    The top-level ``defaults`` list (Hydra's) is skipped.

    Raises:
        ConfigError: invalid YAML, or a file past a limit of :data:`fsdpcfg.yamlio.LIMITS`.
    """
    try:
        st = Path(path).stat()
    except OSError:
        return dict(_leaf_lines(Path(path), -1, -1))  # raises the reader's error
    return dict(_leaf_lines(Path(path), st.st_mtime_ns, st.st_size))


@functools.lru_cache(maxsize=256)
def _leaf_lines(path: Path, _mtime_ns: int, _size: int) -> dict[str, int]:
    """:func:`yaml_leaf_lines` of one version of a file (its time and size): each file is read once."""
    from fsdpcfg import yamlio

    node = yamlio.compose_node(yamlio.read_text(path), str(path))  # bounded work (fsdpcfg.yamlio)
    out: dict[str, int] = {}
    if node is None or not isinstance(node, yaml.MappingNode):
        return out
    for key, line in _walk(node, ""):
        if key == "defaults" or key.startswith("defaults."):
            continue
        out[key] = line
    return out


def _walk(node: yaml.MappingNode, prefix: str) -> Iterator[tuple[str, int]]:
    for k, v in node.value:
        name = f"{prefix}{k.value}"
        if isinstance(v, yaml.MappingNode) and v.value:
            yield name, k.start_mark.line + 1
            yield from _walk(v, name + ".")
        else:
            yield name, k.start_mark.line + 1


class Provenance:
    """Records, for each dotted key, the last :class:`Source` that set it (or one of its parents)."""

    def __init__(self) -> None:
        self._set: dict[str, Source] = {}

    def add_file(self, path: Path, kind: str, option: str | None = None, display_root: Path | None = None) -> None:
        """Attribute every key the YAML file sets to it (later calls win over earlier ones)."""
        shown = _display(path, display_root)
        shipped = is_shipped(path)
        for key, line in yaml_leaf_lines(path).items():
            self._set[key] = Source(kind, f"{shown}:{line}", option, shipped)

    def add_override(self, key: str, text: str) -> None:
        """Attribute ``key`` (and everything under it) to the command-line override ``text``."""
        for k in [k for k in self._set if k == key or k.startswith(key + ".")]:
            del self._set[k]
        self._set[key] = Source("override", text)

    def record(self, key: str, source: Source) -> None:
        """Attribute ``key`` (and everything under it) to ``source`` (for inputs other than Hydra's, such as
        the overrides read from a run script)."""
        for k in [k for k in self._set if k == key or k.startswith(key + ".")]:
            del self._set[k]
        self._set[key] = source

    def add_verl_defaults(self, raw: dict[str, object], version: str) -> None:
        """Attribute each key of ``raw`` ({dotted key: verl's value as written}) to verl's own default
        (``verl 0.9.1 default``, with the ``${...}`` it copies when it is an interpolation); call it first, so
        that the files and overrides recorded after it win."""
        plain = Source("verl", f"verl {version} default")
        for key, v in raw.items():
            self._set[key] = (
                Source("verl", f"verl {version} default {v}") if isinstance(v, str) and "${" in v else plain
            )

    def add_schema_default(self, key: str, note: str = "schema default, verl 0.9.1's") -> None:
        """Attribute ``key`` to a default that the schema filled in (the key was absent or deleted)."""
        self._set[key] = Source("schema", note)

    def source_of(self, key: str) -> Source | None:
        """Return the source of ``key``: its own entry, else the nearest parent's, else ``None``."""
        k = key
        while True:
            if k in self._set:
                return self._set[k]
            if "." not in k:
                return None
            k = k.rsplit(".", 1)[0]

    def as_dict(self) -> dict[str, str]:
        """Return ``{dotted key: str(source)}`` for every recorded key."""
        return {k: str(v) for k, v in self._set.items()}


def is_shipped(path: Path) -> bool:
    """True when ``path`` is a file of fsdpcfg's own config tree (``conf/``, the shipped recipes)."""
    from fsdpcfg import paths

    p = Path(path).resolve()
    return any(p.is_relative_to(d) for d in (paths.conf_dir("ppo"), paths.recipes_dir()))


def _display(path: Path, root: Path | None) -> str:
    p = Path(path).resolve()
    for base in [root, Path.cwd()]:
        if base is not None:
            try:
                return str(p.relative_to(base.resolve()))
            except ValueError:
                pass
    return str(p)
