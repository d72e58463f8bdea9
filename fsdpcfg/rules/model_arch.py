"""FC416: the model's config.json names exactly one architecture (read as JSON by
:mod:`fsdpcfg.model_files`, never executed)."""

from __future__ import annotations

from collections.abc import Iterable

from fsdpcfg.rules._common import A
from fsdpcfg.rules.context import Context
from fsdpcfg.rules.finding import Finding
from fsdpcfg.rules.registry import rule

P = f"{A}.model.path"


@rule("FC416", "the model's config.json lists exactly one architecture", keys=[P])
def one_architecture(ctx: Context) -> Iterable[Finding]:
    """verl picks the model class from ``config.json``'s ``architectures`` and asserts it holds exactly one name;
    a checkpoint whose config lists none (a bare ``PretrainedConfig``) or several fails when the workers load
    the model.

    Source: verl/workers/config/model.py ``HFModelConfig.__post_init__`` ("Expect only one architecture").
    """
    m = ctx.model
    if m is None or m.status != "ok" or not isinstance(m.config, dict):
        return
    arch = m.config.get("architectures")
    if not (isinstance(arch, list) and len(arch) == 1):
        yield ctx.finding(
            "FC416",
            [P],
            f"{m.folder}/config.json has architectures = {arch!r}; verl expects exactly one (HFModelConfig asserts it)",
            'set "architectures": ["<ModelClass>ForCausalLM"] in config.json (the class the checkpoint was saved from)',
        )
