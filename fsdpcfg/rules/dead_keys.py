"""FC721: a key verl 0.9.1 defines but nothing in 0.9.1 reads (the dead-key table,
``fsdpcfg/data/dead_keys.yaml``, beside the legacy-key table of FC701).

verl keeps some keys in its YAML and config dataclasses after the code that read them moved on: the value is
accepted, validated, dumped into the run's config, and changes nothing. ``actor_rollout_ref.actor.grad_clip=0.5``
copied from an older script leaves the gradient clip at ``optim.clip_grad``'s 1.0. The table names each key,
what is read instead, and how it was proved (a whole-word search of every module of the verl 0.9.1 wheel).
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from fsdpcfg import paths
from fsdpcfg.rules._common import src
from fsdpcfg.rules.context import Context
from fsdpcfg.rules.finding import Finding
from fsdpcfg.rules.registry import rule
from fsdpcfg.verlref import VERL_VERSION

#: provenance kinds that are the user's own writing (command line, a config file, a recipe, a run script);
#: fsdpcfg's root config and group options (``default``, ``group``) and verl's own defaults are not.
USER_KINDS = ("override", "file", "recipe")


@lru_cache(maxsize=1)
def dead_keys() -> dict[str, dict[str, Any]]:
    """``{dotted key: {"instead": key or None, "proof": text, "native": what reads it natively (optional)}}`` from
    ``fsdpcfg/data/dead_keys.yaml``."""
    import yaml

    data = yaml.safe_load((paths.data_dir() / "dead_keys.yaml").read_text(encoding="utf-8"))
    return dict(data["keys"])


def _user_set(ctx: Context, key: str) -> bool:
    if not ctx.is_set(key):
        return False
    s = ctx.composed.provenance.source_of(key)
    return s is not None and s.kind in USER_KINDS


@rule(
    "FC721",
    "a key verl 0.9.1 defines but never reads",
    severity="warning",
    keys=sorted(dead_keys()),
    example=["actor_rollout_ref.actor.grad_clip=0.5"],
)
def unread_verl_key(ctx: Context) -> Iterable[Finding]:
    """A key of the dead-key table set by the user (command line, config file, recipe or run script): verl
    0.9.1 accepts it and nothing reads it, so the setting has no effect. A warning that names the key that is
    read instead. A value equal to verl's own default is not reported: nothing was meant to change, and a full
    config (a run folder's ``config.yaml``, a verl dump, ``fsdpcfg export``'s file) writes every key.

    Source: fsdpcfg/data/dead_keys.yaml (each entry's ``proof``: the whole-word search of the verl 0.9.1 wheel
    and the code that reads the replacement, e.g. verl/workers/engine/fsdp/transformer_impl.py
    ``optimizer_step`` clips with ``optimizer_config.clip_grad``).
    """
    defaults = ctx.verl_defaults()
    for key, entry in dead_keys().items():
        if not _user_set(ctx, key) or (entry.get("native") and ctx.launcher == "native"):
            continue  # (``native``: the native loop reads the key, so it is not dead there)
        value, instead = ctx.get(key), entry.get("instead")
        if value == defaults.get(key):
            continue
        now = ctx.get(instead) if instead else None
        read = (
            f"verl reads {instead} instead" + (f" (now {now} {src(ctx, instead)})" if now is not None else "")
            if instead
            else "nothing takes its place"
        )
        plus = "" if instead is None or instead in defaults else "+"  # a dataclass field absent from verl's YAML
        yield ctx.finding(
            "FC721",
            [key, instead] if instead else [key],
            f"{key} = {value} {src(ctx, key)}: verl {VERL_VERSION} defines this key but no code reads it, so it "
            f"changes nothing; {read}",
            f"set {plus}{instead}={value} and remove {key}" if instead else f"remove {key}",
            severity="warning",
        )
