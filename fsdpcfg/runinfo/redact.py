"""Keep secrets out of saved configs: a secret-named key (:func:`fsdpcfg.rules.secrets.is_secret_key`) is saved as
the ``${oc.env:NAME}`` reference it was written with, never as the value the reference resolved to, and that
value is masked wherever else it appears."""

from __future__ import annotations

import copy
from typing import Any

from fsdpcfg.rules.secrets import env_reference, is_secret_key
from fsdpcfg.verlref import flatten

#: what a secret that was not written as an environment reference is saved as.
REDACTED = "<redacted>"
#: secret values shorter than this are not searched for inside other values (too many false hits).
_MIN_SEARCH_LEN = 6


def _set(tree: dict[str, Any], key: str, value: Any) -> None:
    parts = key.split(".")
    node = tree
    for p in parts[:-1]:
        node = node[p]
    node[parts[-1]] = value


def redact(cfg: dict[str, Any], raw: dict[str, Any] | None = None) -> dict[str, Any]:
    """Return a copy of the resolved config ``cfg`` with every secret replaced.

    Args:
        cfg: the resolved config (nested dicts and lists).
        raw: the same config unresolved (``Composed.to_container(resolve=False)``); when it holds
            ``${oc.env:NAME}`` for a secret key, that reference is saved. Without it, a key under
            ``fsdpcfg.env`` is saved as ``${oc.env:<its name>}`` and any other secret as ``<redacted>``.
    """
    out = copy.deepcopy(cfg)
    flat = flatten(cfg)
    raw_flat = flatten(raw) if raw is not None else {}
    values: list[str] = []
    for key, value in flat.items():
        if not (is_secret_key(key) and isinstance(value, str) and value):
            continue
        if env_reference(value):  # already a reference (a config saved before)
            continue
        ref = raw_flat.get(key) if env_reference(raw_flat.get(key)) else None
        if ref is None and key.startswith("fsdpcfg.env."):
            ref = "${oc.env:" + key[len("fsdpcfg.env."):] + "}"
        _set(out, key, ref or REDACTED)
        values.append(value)
    values = sorted({v for v in values if len(v) >= _MIN_SEARCH_LEN}, key=len, reverse=True)
    if values:
        def scrub(x: Any) -> Any:
            if isinstance(x, str):
                for v in values:
                    x = x.replace(v, REDACTED)
            elif isinstance(x, list):
                x = [scrub(i) for i in x]
            return x

        for key, value in flatten(out).items():
            _set(out, key, scrub(value))
    return out


def contains_secret(text: str, cfg: dict[str, Any]) -> list[str]:
    """The secret-named keys of the resolved ``cfg`` whose value (of at least 6 characters) occurs in ``text``
    (a saved file's content): empty when ``text`` is clean."""
    return [k for k, v in flatten(cfg).items()
            if is_secret_key(k) and isinstance(v, str) and len(v) >= _MIN_SEARCH_LEN and not env_reference(v)
            and v in text]
