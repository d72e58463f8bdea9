"""The one guarded reader of users' YAML: bounded work for any input.

PyYAML and libyaml themselves are safe against code execution (``SafeLoader``), but not against work:
a 400-byte file of nested aliases ("billion laughs") expands to 10**9 nodes once OmegaConf or a walker
copies it, 100,000 nested brackets overflow every recursive consumer (PyYAML's composer, OmegaConf,
our walkers: ``RecursionError``), and a file of millions of keys makes every later stage slow. So every
path that reads a YAML file a user wrote (recipes, full config files, the files Hydra is about to load
for a recipe) first runs :func:`scan`: one pass over libyaml's *events* (iterative, no recursion, no
object built) that counts the bytes, the nesting depth, the nodes with every alias expanded, the
expanded scalar characters and the length of mapping keys (and refuses a duplicate key, as OmegaConf would
with a traceback), and stops at the first limit passed. Only
then is the text constructed (:func:`load`) or composed (:func:`compose_node`).

A file past a limit is a :class:`ConfigError` naming the file, the limit, the value found (or "more
than" the limit when the scan stopped early) and the fix; the CLI prints it without a traceback.
The limits (:data:`LIMITS`) are far above any real config: verl 0.9.1's whole ``ppo_trainer`` tree is
about 3,500 nodes (1,700 keys), 8 levels deep and 40 KB. The node limit also bounds the time of a check: Hydra,
OmegaConf and the schema take ~0.2 ms per key, so 10,000 keys (20,001 nodes, accepted) are checked in ~2 s
and 60,000 would take over a minute (refused).

Source of the rule: issue 14 item 6 (an alias bomb hung ``check``, the hook and the run; deep nesting gave
RecursionError tracebacks in ``check``, ``show``, ``diff``). Tests: ``tests/check/test_hostile_files.py``.
"""

from __future__ import annotations

import copy
import functools
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from fsdpcfg.errors import ConfigError


@dataclass(frozen=True)
class Limits:
    """Bounds on one YAML document (see the module docstring for why each exists).

    Attributes:
        max_bytes: file size in bytes.
        max_depth: nesting of mappings and sequences, aliases expanded.
        max_nodes: scalars, mappings and sequences (keys included), every alias expanded.
        max_scalar_chars: characters of all scalars, every alias expanded.
        max_key_chars: characters of one mapping key.
    """

    max_bytes: int = 16 * 2**20
    max_depth: int = 64
    max_nodes: int = 25_000
    max_scalar_chars: int = 64 * 2**20
    max_key_chars: int = 1024


#: The limits every guarded read uses.
LIMITS = Limits()


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when PyYAML has it
#: the most decimal digits ``int()`` reads and ``str()`` writes (Python's default 4,300: CVE-2020-10735)
_INT_DIGITS = sys.get_int_max_str_digits() if hasattr(sys, "get_int_max_str_digits") else 4300
#: a plain scalar YAML 1.1 reads as an integer (PyYAML's resolver, which OmegaConf keeps): decimal, binary, octal,
#: hexadecimal or sexagesimal, underscores allowed
_YAML_INT = re.compile(
    r"[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+"
)
#: the longest integer text that cannot exceed :data:`_INT_DIGITS` decimal digits (hexadecimal is the densest
#: notation: log10(16) < 1.21 digits a character)
_INT_SAFE_CHARS = int(_INT_DIGITS / 1.21)


def int_digits(text: str) -> int:
    """The decimal digits of the integer a plain YAML scalar ``text`` matching :data:`_YAML_INT` reads as (its
    magnitude's digits, found by comparing with powers of ten: no conversion to decimal text, which is what
    Python refuses past :data:`_INT_DIGITS`)."""
    body = text.replace("_", "").lstrip("+-")
    if body.startswith(("0b", "0x")):
        value = int(body[2:], 2 if body[1] == "b" else 16)
    elif ":" in body:  # sexagesimal: 1:30:00 is 5400
        value = 0
        for part in body.split(":"):
            value = value * 60 + int(part)
    elif len(body) > 1 and body.startswith("0"):
        value = int(body, 8)
    else:
        return len(body.lstrip("0")) or 1
    digits = int(value.bit_length() * 0.30103) + 1  # log10(2): at most one off either way
    while digits > 1 and value < 10 ** (digits - 1):
        digits -= 1
    while value >= 10**digits:
        digits += 1
    return digits


@functools.cache
def config_loader() -> type:
    """PyYAML's safe loader (libyaml's when PyYAML has it) with OmegaConf's implicit resolvers: a config file
    reads as Hydra, OmegaConf and so verl read it (``lr: 1e-6`` is a float, not the string YAML 1.1 makes of it;
    a date stays a string). Built on first use (OmegaConf is imported then). Source:
    ``omegaconf._utils.get_yaml_loader``."""
    from omegaconf._utils import get_yaml_loader

    class ConfigLoader(_LOADER):  # type: ignore[misc,valid-type]
        pass

    ConfigLoader.yaml_implicit_resolvers = {k: list(v) for k, v in get_yaml_loader().yaml_implicit_resolvers.items()}
    return ConfigLoader


def _error(label: str, what: str, found: str, limit: int, fix: str) -> ConfigError:
    """``FILE: WHAT is FOUND, over the limit of LIMIT``: the file is refused before anything loads it."""
    return ConfigError(
        f"{label}: {what} is {found}, over the limit of {limit:,} (fsdpcfg.yamlio.LIMITS); the file was not loaded",
        fix=fix,
    )


def _line(ev: Any) -> int:
    """The 1-based line an event starts on (libyaml always sets the mark; 0 when a parser does not)."""
    mark = getattr(ev, "start_mark", None)
    return mark.line + 1 if mark is not None else 0


def _not_yaml(label: str, e: yaml.YAMLError) -> ConfigError:
    mark = getattr(e, "problem_mark", None)
    where = f"{label}:{mark.line + 1}" if mark is not None else label
    problem = getattr(e, "problem", None) or (str(e).strip().splitlines() or [type(e).__name__])[0]
    return ConfigError(f"{where}: not valid YAML: {problem}", fix="fix the YAML syntax")


def scan(text: str, label: str = "<yaml>", limits: Limits = LIMITS) -> None:
    """Walk the YAML events of ``text`` once and refuse a document past ``limits``.

    Work is bounded by ``len(text)`` (itself bounded by ``max_bytes``): the pass builds no objects and
    stops at the first limit passed. Aliases count as the anchored node's whole expansion, so a billion
    laughs file is refused after a few hundred events.

    Raises:
        ConfigError: a limit is passed (names ``label``, the limit and the value), or the text is not YAML
            (with the line).
    """
    size = len(text.encode("utf-8", "surrogatepass")) if len(text) * 4 > limits.max_bytes else len(text)
    if size > limits.max_bytes:
        raise _error(
            label,
            "its size",
            f"{size:,} bytes",
            limits.max_bytes,
            "a config is a few kilobytes: check that this is the file you meant",
        )
    # per open collection: [nodes below, deepest expanded depth below, scalar chars below, anchor, kind]
    stack: list[list[Any]] = []
    anchors: dict[str, tuple[int, int, int]] = {}  # anchor -> (nodes, depth, chars), aliases expanded
    in_key: list[bool] = []  # per open mapping: is the next node a key?
    keys: list[dict[str, int]] = []  # per open mapping: its scalar keys so far -> line
    total = [0, 0]  # nodes, chars

    def add(n: int, d: int, c: int, counted: bool = False) -> None:
        """Account for a node of ``n`` nodes, ``d`` levels and ``c`` characters under the open collection."""
        if not counted:
            total[0] += n
            total[1] += c
        if stack:
            stack[-1][0] += n
            stack[-1][1] = max(stack[-1][1], d)
            stack[-1][2] += c
        if total[0] > limits.max_nodes:
            raise _error(
                label,
                "its node count with every alias (*name) expanded",
                f"at least {total[0]:,}",
                limits.max_nodes,
                "remove the repeated aliases (*name) or split the file; a config has a few thousand keys at most",
            )
        if len(stack) + d > limits.max_depth:
            raise _error(
                label,
                "its nesting depth (aliases expanded)",
                f"at least {len(stack) + d}",
                limits.max_depth,
                "flatten the nesting; verl's own config is 8 levels deep",
            )
        if total[1] > limits.max_scalar_chars:
            raise _error(
                label,
                "its text with every alias expanded",
                f"at least {total[1]:,} characters",
                limits.max_scalar_chars,
                "remove the repeated aliases (*name)",
            )

    def key_position() -> bool:
        if stack and stack[-1][4] == "map":
            is_key = in_key[-1]
            in_key[-1] = not is_key
            return is_key
        return False

    try:
        for ev in yaml.parse(text, Loader=_LOADER):
            if isinstance(ev, yaml.ScalarEvent):
                if key_position():
                    if len(ev.value) > limits.max_key_chars:
                        raise _error(
                            label,
                            f"the mapping key at line {_line(ev)}",
                            f"{len(ev.value):,} characters long",
                            limits.max_key_chars,
                            "use a short key name",
                        )
                    seen = keys[-1]
                    if ev.value in seen:  # OmegaConf (so Hydra) refuses it with a yaml traceback
                        raise ConfigError(
                            f"{label}:{_line(ev)}: duplicate key `{ev.value}` (first at line {seen[ev.value]})",
                            fix="keep one of them",
                        )
                    seen[ev.value] = _line(ev)
                if not ev.style and len(ev.value) > _INT_SAFE_CHARS and _YAML_INT.fullmatch(ev.value):
                    digits = int_digits(ev.value)
                    if digits > _INT_DIGITS:  # int() or a later str() raises ValueError: a traceback
                        raise ConfigError(
                            f"{label}:{_line(ev)}: an integer of {digits:,} digits, more than Python converts "
                            f"({_INT_DIGITS:,}: sys.get_int_max_str_digits()); no key takes such a number",
                            fix="write the number you meant (or quote it to make it a string)",
                        )
                if ev.anchor:
                    anchors[ev.anchor] = (1, 0, len(ev.value))
                add(1, 0, len(ev.value))
            elif isinstance(ev, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                key_position()
                kind = "map" if isinstance(ev, yaml.MappingStartEvent) else "seq"
                total[0] += 1
                add(0, 1, 0, counted=True)  # the depth check, before the collection is open
                stack.append([0, 0, 0, ev.anchor, kind])
                if kind == "map":
                    in_key.append(True)
                    keys.append({})
            elif isinstance(ev, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                n, d, c, anchor, kind = stack.pop()
                if kind == "map":
                    in_key.pop()
                    keys.pop()
                if anchor:
                    anchors[anchor] = (n + 1, d + 1, c)
                add(n + 1, d + 1, c, counted=True)
            elif isinstance(ev, yaml.AliasEvent):
                key_position()
                add(*anchors.get(ev.anchor or "", (1, 0, 0)))
    except yaml.YAMLError as e:
        raise _not_yaml(label, e) from None


def load(text: str, label: str = "<yaml>") -> Any:
    """Scan ``text`` (:func:`scan`), then return it as Python objects (``yaml.safe_load`` with OmegaConf's
    implicit resolvers, :func:`config_loader`; libyaml's parser when present).

    Raises:
        ConfigError: a limit is passed, or the text is not valid YAML (with the line).
    """
    return copy.deepcopy(_load_once(text, label))


@functools.lru_cache(maxsize=32)
def _load_once(text: str, label: str) -> Any:
    """:func:`load` without the copy, kept per text: one check reads a recipe file up to ten times (its
    chain, its kind, its engine choice, the compose), and a 10,000-key file costs 0.14 CPU s a parse.
    Keyed by the text itself, not the file's mtime, so a file rewritten within one timestamp tick is read
    anew; an error is not kept (``lru_cache`` stores only returns)."""
    scan(text, label)
    try:
        return yaml.load(text, Loader=config_loader())
    except yaml.YAMLError as e:
        raise _not_yaml(label, e) from None


#: the byte-order mark some editors write at the start of a UTF-8 file; YAML skips it, Hydra's header reader does not
BOM = "\ufeff"


def read_text(path: Path | str) -> str:
    """Return the UTF-8 text of a user's YAML file without a leading byte-order mark (:data:`BOM`: PyYAML skips
    it, but Hydra's ``# @package`` header reader would not see a header behind it), refusing a file past
    ``LIMITS.max_bytes`` before reading it.

    Raises:
        ConfigError: too large, not UTF-8 (with the byte offset), or unreadable.
    """
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > LIMITS.max_bytes:
            raise _error(
                str(path),
                "its size",
                f"{size:,} bytes",
                LIMITS.max_bytes,
                "a config is a few kilobytes: check that this is the file you meant",
            )
        return path.read_bytes().decode("utf-8").removeprefix(BOM)
    except UnicodeDecodeError as e:
        raise ConfigError(f"{path}: not UTF-8 text (byte {e.start})", fix="give a YAML file") from None
    except OSError as e:
        raise ConfigError(
            f"{path}: cannot be read: {e.strerror or e}", fix="check the path and its permissions"
        ) from None


def load_file(path: Path | str) -> Any:
    """:func:`read_text` then :func:`load`, labelled with the path.

    Raises:
        ConfigError: as :func:`read_text` and :func:`load`.
    """
    return load(read_text(path), str(path))


def compose_node(text: str, label: str = "<yaml>") -> Any:
    """Scan ``text``, then return its node tree (``yaml.compose``; line numbers for provenance).

    Raises:
        ConfigError: as :func:`load`.
    """
    scan(text, label)
    try:
        return yaml.compose(text, Loader=_LOADER)
    except yaml.YAMLError as e:
        raise _not_yaml(label, e) from None


_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml's emitter when PyYAML has it


def dump(data: Any, **options: Any) -> str:
    """``yaml.safe_dump(data, sort_keys=False, **options)`` with libyaml's emitter (the same text as PyYAML's
    pure-Python one, ~10x faster for a run config): the one writer of config YAML (``config.yaml`` of a run
    folder, ``overrides.yaml``, ``--cfg job``)."""
    options.setdefault("sort_keys", False)
    return yaml.dump(data, Dumper=_DUMPER, **options)
