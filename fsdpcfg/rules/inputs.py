"""FC13x: what ``fsdpcfg check`` was given: files that are not a fsdpcfg or verl config are skipped, never failed.

A repository's pre-commit run hands the hook every YAML and shell file its ``files:`` pattern matches; a GitHub
workflow, a docker-compose file, a Kubernetes manifest or a build script must not fail the commit. These
findings are made by :mod:`fsdpcfg.check.sources` for an input, before any config exists, through
:func:`not_a_config`; the rule entries carry their ID, title and source for ``fsdpcfg explain`` and the
reference page. Source: issue 12 item 5 (pre-commit hooks failed on unrelated files).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from fsdpcfg.rules.finding import Finding
from fsdpcfg.rules.registry import rule

if TYPE_CHECKING:
    from fsdpcfg.rules.context import Context


@rule(
    "FC130", "a YAML input is a fsdpcfg or verl config (other YAML is skipped)", severity="info", kinds=("ppo", "sft")
)
def unrelated_yaml(ctx: Context) -> Iterator[Finding]:
    """A YAML file with none of verl's or fsdpcfg's top-level sections (``actor_rollout_ref``, ``data``,
    ``trainer``, ``model``, ``fsdpcfg``, ``defaults`` ...; :func:`fsdpcfg.compose.config_file.classify`), one
    whose only known sections are generic names (a Kubernetes ConfigMap's ``data:``) beside keys verl does not
    have, a file of several YAML documents, or a top-level list, is not a config: ``check`` skips it with this info
    in every mode (exit 0). Made per input by :func:`fsdpcfg.check.sources.check_yaml_file` through
    :func:`not_a_config`, before any config exists; over a composed config (which is a config) it finds
    nothing. Source: issue 12 item 5."""
    return iter(())


@rule(
    "FC131",
    "a shell script given by a hook runs verl (other scripts are skipped)",
    severity="info",
    kinds=("ppo", "sft"),
)
def unrelated_script(ctx: Context) -> Iterator[Finding]:
    """With ``--skip-unrelated`` (what the ``fsdpcfg-check-scripts`` pre-commit hook passes), a shell script
    that runs no verl trainer is skipped with this info; without the flag it stays a usage error (exit 2), as
    a script named on the command line is meant to be one. Made per input by :mod:`fsdpcfg.cli.check` through
    :func:`not_a_config`; over a composed config it finds nothing. Source: issue 12 item 5."""
    return iter(())


def not_a_config(rule_id: str, path: str, why: str) -> Finding:
    """The info for an input that is skipped: ``FC130`` (YAML) or ``FC131`` (a shell script).

    Raises:
        ValueError: ``rule_id`` is not one of the two.
    """
    if rule_id == "FC130":
        return Finding(
            "FC130",
            "info",
            [],
            f"{path}: skipped, not a fsdpcfg or verl config: {why}",
            "nothing to do; narrow the hook's `files:` pattern to skip it without a message",
            location=(path, None),
        )
    if rule_id == "FC131":
        return Finding(
            "FC131",
            "info",
            [],
            f"{path}: skipped, not a verl run script: {why}",
            "nothing to do; narrow the hook's `files:` pattern to skip it without a message",
            location=(path, None),
        )
    raise ValueError(f"not an input rule: {rule_id}")
