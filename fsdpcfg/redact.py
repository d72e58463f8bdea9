"""Keep secrets out of everything fsdpcfg writes or prints: one scrubber, :func:`scrub_text`, that every file
writer (:func:`write_private`) and the CLI's stdout/stderr (:func:`filter_streams`) go through.

What is a secret comes from :mod:`fsdpcfg.secrets` (by name and by value shape). The values to look for
are registered as configs are composed (:func:`register_config`, called for every
:class:`fsdpcfg.compose.Composed`) and from this process's environment (secret-named variables, registered on
first use). Each registered value is replaced by the reference it came from, ``${oc.env:NAME}`` (so a saved
config still works where the variable is set), or by ``<redacted>`` when it was written as a literal;
issued-token shapes (``hf_...``, ``sk-...``, ``ghp_...``, ``AKIA...``) and URL passwords are replaced by
``<redacted>`` wherever they appear, registered or not. Shell scripts name the variable instead
(:func:`shell_value`: ``"${NAME}"``), read when the script runs.
"""

from __future__ import annotations

import copy
import io
import json
import os
import re
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TextIO

from fsdpcfg.secrets import (
    TOKEN_SHAPES,
    URL_USERINFO,
    env_reference,
    is_secret_key,
    is_secret_name,
    secret_shapes,
)
from fsdpcfg.verlref import flatten

#: what a secret that was not written as an environment reference is saved as.
REDACTED = "<redacted>"
#: secret values shorter than this are not searched for inside other values (too many false hits).
_MIN_SEARCH_LEN = 6
#: every ``${oc.env:NAME}`` / ``${oc.env:NAME,default}`` inside a string.
_ENV_REF = re.compile(r"\$\{oc\.env:\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:,[^}]*)?\}")

#: secret value -> the environment variable it came from (``None``: written as a literal).
_KNOWN: dict[str, str | None] = {}
_env_seen: set[tuple[str, str]] = set()
#: the keys of ``_KNOWN``, longest first (a secret containing another is replaced whole); ``None``: to sort again.
_longest_first: list[str] | None = None


def register(value: Any, env_name: str | None = None) -> None:
    """Remember ``value`` (a string of at least 6 characters; shorter ones and non-strings are ignored) as a
    secret: :func:`scrub_text` replaces it by ``${oc.env:<env_name>}``, or ``<redacted>`` without a name."""
    global _longest_first
    if isinstance(value, str) and len(value) >= _MIN_SEARCH_LEN and (value not in _KNOWN or env_name):
        # as written into JSON (escaped quotes, backslashes) and single-quoted YAML (doubled quotes) too
        for form in {value, json.dumps(value)[1:-1], value.replace("'", "''")}:
            _KNOWN[form] = env_name
        _longest_first = None


def register_environment(environ: Mapping[str, str] | None = None) -> None:
    """Register the value of every secret-named variable of ``environ`` (default ``os.environ``:
    :func:`fsdpcfg.secrets.is_secret_name`) and every variable whose value has a token's shape."""
    env: Mapping[str, str] = os.environ if environ is None else environ
    for name, value in env.items():
        if (name, value) in _env_seen:
            continue
        _env_seen.add((name, value))
        if is_secret_name(name) or secret_shapes(value):
            register(value, name)


def register_config(raw: dict[str, Any], environ: Mapping[str, str] | None = None) -> None:
    """Register the secrets of the unresolved config ``raw``: the value of each ``${oc.env:NAME}`` that a
    secret-named key uses (or whose NAME is secret-named, or whose value has a token's shape), read from
    ``environ`` (default ``os.environ``); the literal value of each secret-named key; every token-shaped part of
    a literal. Nothing is resolved and nothing raises."""
    env: Mapping[str, str] = os.environ if environ is None else environ
    for key, value in flatten(raw).items():
        for v in value if isinstance(value, list) else [value]:
            if not isinstance(v, str) or not v:
                continue
            refs = _ENV_REF.findall(v)
            for name in refs:
                env_value = env.get(name)
                if env_value and (
                    is_secret_key(key)
                    or is_secret_name(name)
                    or secret_shapes(env_value, key)
                    or URL_USERINFO.search(v)
                ):
                    register(env_value, name)
            for part in secret_shapes(v, key):
                register(part)
            if not refs and "${" not in v and is_secret_key(key):
                register(v)


def _reference(name: str | None) -> str:
    return "${oc.env:" + name + "}" if name else REDACTED


def scrub_text(text: str) -> str:
    """Return ``text`` with every secret replaced: registered values by their ``${oc.env:NAME}`` reference (or
    ``<redacted>``), token shapes and URL passwords by ``<redacted>``. The one function every writer and printer
    of fsdpcfg goes through; idempotent."""
    if not isinstance(text, str) or not text:
        return text
    register_environment()
    return _scrub_registered(text)


def _scrub_registered(text: str) -> str:
    """:func:`scrub_text` without looking at the environment again (the caller just did)."""
    global _longest_first
    if not text:
        return text
    if _longest_first is None:
        _longest_first = sorted(_KNOWN, key=len, reverse=True)
    for value in _longest_first:
        if value in text:
            text = text.replace(value, _reference(_KNOWN[value]))
    text = TOKEN_SHAPES.sub(REDACTED, text)
    return URL_USERINFO.sub(
        lambda m: m.group(0) if m.group("pw").startswith(("$", "<")) else m.group("head") + REDACTED + m.group("at"),
        text,
    )


def scrub(obj: Any) -> Any:
    """:func:`scrub_text` applied to every string (keys and values) of nested dicts and lists; a copy."""
    register_environment()
    return _scrub_tree(obj)


def _scrub_tree(obj: Any) -> Any:
    if isinstance(obj, str):
        return _scrub_registered(obj)
    if isinstance(obj, dict):
        return {_scrub_tree(k): _scrub_tree(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_scrub_tree(v) for v in obj)
    return obj


def secret_reference(value: Any) -> str | None:
    """The environment variable a registered secret ``value`` came from; ``None`` for anything else."""
    register_environment()
    return _KNOWN.get(value) if isinstance(value, str) else None


def shell_value(name: str, value: str) -> str:
    """``value`` as a shell word for the variable ``name`` in a script or printed command line: a secret
    becomes ``"${VAR}"`` (the variable it came from, read when the script runs; its own ``name`` with a
    clear failure when it was a literal), anything else is shell-quoted."""
    import shlex

    register_environment()
    if value in _KNOWN or secret_shapes(value, name) or (is_secret_name(name) and value):
        ref = _KNOWN.get(value)
        return f'"${{{ref}}}"' if ref else f'"${{{name}:?set {name} in the environment}}"'
    return shlex.quote(scrub_text(value))


def _set(tree: dict[str, Any], key: str, value: Any) -> None:
    from fsdpcfg import keypath

    keypath.set(tree, key, value)


def redact(cfg: dict[str, Any], raw: dict[str, Any] | None = None) -> dict[str, Any]:
    """Return a copy of the resolved config ``cfg`` with every secret replaced.

    A secret-named key is saved as the ``${oc.env:NAME}`` reference ``raw`` (the same config unresolved,
    ``Composed.to_container(resolve=False)``) gives it; without one, a key under ``fsdpcfg.env`` is saved as
    ``${oc.env:<its name>}`` and any other as ``<redacted>``. Then every string goes through :func:`scrub`.
    """
    if raw is not None:
        register_config(raw)
    out = copy.deepcopy(cfg)
    flat = flatten(cfg)
    raw_flat = flatten(raw) if raw is not None else {}
    for key, value in flat.items():
        if not (is_secret_key(key) and isinstance(value, str) and value):
            continue
        if env_reference(value):  # already a reference (a config saved before)
            continue
        ref = raw_flat.get(key) if env_reference(raw_flat.get(key)) else None
        if ref is None and key.startswith("fsdpcfg.env."):
            ref = "${oc.env:" + key[len("fsdpcfg.env.") :] + "}"
        _set(out, key, ref or REDACTED)
        register(value, env_reference(ref) if ref else None)
    return scrub(out)


def contains_secret(text: str, cfg: dict[str, Any]) -> list[str]:
    """The secret-named keys of the resolved ``cfg`` whose value (of at least 6 characters) occurs in ``text``
    (a saved file's content): empty when ``text`` is clean."""
    return [
        k
        for k, v in flatten(cfg).items()
        if is_secret_key(k) and isinstance(v, str) and len(v) >= _MIN_SEARCH_LEN and not env_reference(v) and v in text
    ]


def write_private(path: str | Path, text: str, *, mode: int | None = None) -> Path:
    """Write ``text`` through :func:`scrub_text` to ``path`` with the one atomic writer
    (:func:`fsdpcfg.paths.atomic_write_text`: temporary file, fsync, rename, fsync of the folder): readers never
    see half a file, and no secret is written. ``mode`` sets the permission bits (``0o755`` for a script).
    Returns ``path``.

    Raises:
        OSError: the folder does not exist or cannot be written (nothing is left behind).
    """
    from fsdpcfg.paths import atomic_write_text

    return atomic_write_text(path, scrub_text(text), mode=mode)


class _ScrubbingStream(io.TextIOBase):
    """A text stream that passes everything written through :func:`scrub_text` to ``inner``."""

    def __init__(self, inner: TextIO) -> None:
        self.inner = inner

    def write(self, s: str) -> int:
        self.inner.write(scrub_text(s))
        return len(s)

    def flush(self) -> None:
        self.inner.flush()

    def fileno(self) -> int:
        return self.inner.fileno()

    def isatty(self) -> bool:
        return self.inner.isatty()

    def __getattr__(self, name: str) -> Any:  # encoding, buffer, errors, ... of the wrapped stream
        return getattr(self.inner, name)


def filter_streams() -> Callable[[], None]:
    """Send ``sys.stdout`` and ``sys.stderr`` through :func:`scrub_text` (tracebacks included); return a
    function that puts the previous streams back. Output of child processes (torchrun) does not pass here:
    they are given configs that hold references only."""
    saved = sys.stdout, sys.stderr
    if not isinstance(sys.stdout, _ScrubbingStream):
        sys.stdout = _ScrubbingStream(sys.stdout)
    if not isinstance(sys.stderr, _ScrubbingStream):
        sys.stderr = _ScrubbingStream(sys.stderr)

    def restore() -> None:
        sys.stdout, sys.stderr = saved

    return restore
