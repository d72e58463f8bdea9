"""Stage 2b, rules: small pure functions with stable IDs over the resolved config and the model's files.

A rule returns :class:`Finding` objects; :mod:`fsdpcfg.check` runs them all.
"""

from fsdpcfg.rules.finding import Finding, Severity

__all__ = ["Finding", "Severity"]
