"""FC110: a group option chosen on the command line, contradicted by a key override on the same command line."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import yaml

from fsdpcfg import paths, verlref
from fsdpcfg.rules.context import Context, get_dotted
from fsdpcfg.rules.finding import Finding
from fsdpcfg.rules.registry import rule


def _option_values(kind: str, group: str, option: str) -> dict[str, Any]:
    """``{dotted key: value}`` that the option file ``conf/<group>/<option>.yaml`` sets (``{}`` if unreadable)."""
    f = paths.conf_dir(kind) / group / f"{option}.yaml"
    try:
        data = yaml.safe_load(f.read_text()) or {}
    except (OSError, yaml.YAMLError):
        return {}
    data.pop("defaults", None)
    return verlref.flatten(data) if isinstance(data, dict) else {}


def _command_line(ctx: Context) -> tuple[dict[str, str], list[str]]:
    groups: dict[str, str] = {}
    keys: list[str] = []
    from fsdpcfg.compose import groups as tree_groups

    names = set(tree_groups(ctx.composed.kind))
    for o in ctx.composed.overrides:
        if "=" not in o or o.startswith("~"):
            continue
        k, v = o.split("=", 1)
        k = k.lstrip("+")
        if k in names:
            groups[k] = v
        elif "." in k:
            keys.append(k)
    return groups, keys


@rule(
    "FC110",
    "a group option chosen on the command line is overridden there by a key",
    severity="warning",
    example=["engine=fsdp2", "actor_rollout_ref.actor.strategy=fsdp"],
    kinds=("ppo", "sft"),
)
def group_contradicted(ctx: Context) -> Iterable[Finding]:
    """``engine=fsdp2 actor_rollout_ref.actor.strategy=fsdp`` asks for FSDP2 and silently gets FSDP1: the key
    override wins over the group option (Hydra applies key overrides last), so the chosen option does nothing
    for that key. Source: the reported problem of flags that silently do nothing; Hydra's override order.
    """
    if getattr(ctx.composed, "origin", "compose") != "compose":
        return
    groups, keys = _command_line(ctx)
    for group, option in groups.items():
        for key, wanted in _option_values(ctx.composed.kind, group, option).items():
            if key not in keys or isinstance(wanted, str) and "${" in wanted:
                continue
            got = get_dotted(ctx.cfg, key, None)
            if got != wanted:
                yield ctx.finding(
                    "FC110",
                    [key],
                    f"`{group}={option}` sets {key}={wanted}, but {key}={got} on the "
                    f"same command line overrides it, so the {group} option does not take effect "
                    "for this key",
                    f"drop one of the two: keep `{group}={option}`, or choose the {group} option that sets {key}={got}",
                    severity="warning",
                )
