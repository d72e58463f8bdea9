"""The schema's answers to an unknown key's error during composition (:class:`fsdpcfg.compose.KeyAdvice`).

Composition comes before the schema, so it does not import the key universe (:mod:`fsdpcfg.schema.keys`); its
callers hand it :data:`KEY_ADVICE`, which imports the schema only when an override names a key the tree does not
have (a compose that succeeds loads no Pydantic model).
"""

from __future__ import annotations

from typing import Any


class SchemaKeyAdvice:
    """:class:`fsdpcfg.compose.KeyAdvice` from :mod:`fsdpcfg.schema.keys`."""

    @property
    def no_such_key(self) -> str:
        """:data:`fsdpcfg.schema.keys.NO_SUCH_KEY`."""
        from fsdpcfg.schema.keys import NO_SUCH_KEY

        return NO_SUCH_KEY

    def known(self, key: str) -> bool:
        """True when :func:`fsdpcfg.schema.keys.classify` calls ``key`` a ``schema``, ``verl`` or ``free`` key."""
        from fsdpcfg.schema.keys import classify

        return classify(key) in ("schema", "verl", "free")

    def propose(
        self, key: str, value: Any, pool: tuple[str, ...] | None, config: str | None = None, kind: str = "ppo"
    ) -> str | None:
        """:func:`fsdpcfg.schema.keys.propose`; a ``None`` value fits any key
        (:data:`fsdpcfg.schema.keys.UNKNOWN_VALUE`)."""
        from fsdpcfg.schema import keys as K

        return K.propose(key, K.UNKNOWN_VALUE if value is None else value, pool, config, kind)

    def section_replaced(self, key: str, value: Any, kind: str = "ppo") -> tuple[str, str] | None:
        """:func:`fsdpcfg.schema.keys.section_replaced`."""
        from fsdpcfg.schema.keys import section_replaced

        return section_replaced(key, value, kind)


#: what every caller of :func:`fsdpcfg.compose.compose` hands it.
KEY_ADVICE = SchemaKeyAdvice()
