"""FC140: a ``~key`` deletion that leaves the run without a value it reads.

Hydra's ``~key`` removes a key from the composed tree. The rules read an absent key as verl's default
(:class:`fsdpcfg.rules.context.Context`), so such a config looked valid, but the run does not: the native
launcher, the plan and the saved ``config.yaml`` read the composed tree as it is (each default has one home,
the tree; nothing is filled in again at a call site), so ``~fsdpcfg`` or ``~trainer.default_local_dir``
passed ``check`` and then failed with a ``KeyError`` in ``--dry-run``. Source: issue 14 item 8.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from fsdpcfg.rules.finding import Finding
from fsdpcfg.rules.registry import rule
from fsdpcfg.rules.schema_rules import schema_report
from fsdpcfg.schema import keys as K

if TYPE_CHECKING:
    from fsdpcfg.rules.context import Context


@rule(
    "FC140",
    "a key or section the run reads is not deleted with ~key",
    keys=(),
    example=("+recipe=qwen_grpo", "~trainer.default_local_dir"),
)
def deleted_schema_key(ctx: Context) -> Iterator[Finding]:
    """A ``~key`` whose key (or section) fsdpcfg's schema models: the launcher, the plan and the trainer read
    it from the composed tree, so deleting it is refused here instead of failing in the run. Deleting a
    verl-only key stays allowed (verl fills in its own default). A required key deleted is FC104's."""
    required = {i.key for i in schema_report(ctx).issues if i.kind == "missing"}
    for key in getattr(ctx.composed, "deleted", None) or []:
        if key in required or K.classify(key) != "schema":
            continue
        yield ctx.finding(
            "FC140",
            [key],
            f"~{key} deletes a {'section' if key in K.schema_prefixes() else 'key'} "
            "that the run reads from the composed config (its default lives in the config tree, "
            "not at the call site), so the run would fail without it",
            f"set it to the value you want ({key}=VALUE; `fsdpcfg explain {key}` gives its meaning) "
            "instead of deleting it",
        )
