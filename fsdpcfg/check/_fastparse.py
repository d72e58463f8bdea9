"""Parse each interpolation string once per process: OmegaConf parses ``${...}`` values with its ANTLR grammar
every time it resolves them (``omegaconf.grammar_parser.parse``, ~0.3 ms each, about 200 in a composed run
config), and a check and a run resolve the same strings several times.

:func:`install` wraps that function in a memo keyed by (string, rule, lexer mode). A parse tree is only read by
OmegaConf's visitor (``omegaconf.grammar_visitor``), never changed, and each tree's tokens keep their own input
stream, so a kept tree resolves exactly as a new one (``tests/check/test_fastparse.py`` resolves every shipped
recipe both ways). A string that does not parse raises each time, as before (errors are not kept).
"""

from __future__ import annotations

import functools
from typing import Any

#: how many parse trees are kept (distinct interpolation strings; a run config has ~200).
MAX_TREES = 4096

_installed = False


def install() -> bool:
    """Make OmegaConf reuse the parse tree of an interpolation string it parsed before; idempotent. Returns
    whether it is active."""
    global _installed
    if _installed:
        return True
    import omegaconf._utils as ou
    import omegaconf.base as ob
    import omegaconf.grammar_parser as gp

    original = gp.parse

    @functools.lru_cache(maxsize=MAX_TREES)
    def parse(value: str, parser_rule: str = "configValue", lexer_mode: str = "DEFAULT_MODE") -> Any:
        return original(value, parser_rule, lexer_mode)

    parse.__wrapped__ = original
    for mod in (ob, ou):
        if getattr(mod, "parse", None) is original:
            mod.parse = parse  # type: ignore[attr-defined]
    _installed = True
    return True


def uninstall() -> None:
    """Put OmegaConf's own parser back (tests compare both)."""
    global _installed
    import omegaconf._utils as ou
    import omegaconf.base as ob

    for mod in (ob, ou):
        wrapped = getattr(getattr(mod, "parse", None), "__wrapped__", None)
        if wrapped is not None:
            mod.parse = wrapped  # type: ignore[attr-defined]
    _installed = False
