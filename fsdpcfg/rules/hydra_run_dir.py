"""FC741: ``hydra.run.dir`` set for a run fsdpcfg starts itself.

fsdpcfg composes with Hydra's compose API and writes the run folder itself (``fsdpcfg.run_dir``); Hydra's app,
which would create ``hydra.run.dir`` and change into it, never runs. So ``hydra.run.dir=X`` was accepted and
ignored: the run went to ``fsdpcfg.run_dir`` while ``--cfg hydra`` showed ``outputs/<date>/<time>`` (issue 23
item 5). fsdpcfg's composition now sets ``hydra.run.dir=${fsdpcfg.run_dir}`` first
(:data:`fsdpcfg.compose._compose.RUN_DIR_OVERRIDE`), so ``--cfg hydra`` shows the folder the run uses, and this rule
refuses another value, naming the key that does move the run.
"""

from __future__ import annotations

from collections.abc import Iterator

from fsdpcfg.rules.context import Context
from fsdpcfg.rules.finding import Finding
from fsdpcfg.rules.registry import rule

KEY = "hydra.run.dir"
#: the value fsdpcfg's composition gives ``hydra.run.dir`` (fsdpcfg.compose._compose.RUN_DIR_OVERRIDE).
FOLLOWS = "${fsdpcfg.run_dir}"


@rule(
    "FC741",
    "hydra.run.dir set for a run fsdpcfg starts (its folder is fsdpcfg.run_dir)",
    keys=["fsdpcfg.run_dir"],
    example=["hydra.run.dir=/tmp/my_run"],
    kinds=("ppo", "sft"),
)
def hydra_run_dir(ctx: Context) -> Iterator[Finding]:
    """``hydra.run.dir`` other than ``${fsdpcfg.run_dir}`` in a composition (command line or recipe): an error,
    since nothing would write there; the fix moves ``fsdpcfg.run_dir`` instead. A verl config file read as it is
    keeps its own ``hydra`` node (verl's ``main_ppo`` is a Hydra app and honours it): not judged here.

    Source: fsdpcfg/launch/native.py (the run folder is ``fsdpcfg.run_dir``); Hydra's ``compose`` API
    (hydra/compose.py) creates no run dir, only ``@hydra.main`` does (hydra/_internal/utils.py ``run_and_report``).
    """
    from omegaconf import OmegaConf

    hydra_cfg = getattr(ctx.composed, "hydra_cfg", None)
    if hydra_cfg is None or getattr(ctx.composed, "origin", "compose") != "compose":
        return
    node = OmegaConf.to_container(hydra_cfg, resolve=False)
    run = node.get("run") if isinstance(node, dict) else None
    value = run.get("dir") if isinstance(run, dict) else None
    if value is None or value == FOLLOWS:
        return
    here = ctx.get("fsdpcfg.run_dir")
    given = [o for o in getattr(ctx.composed, "overrides", None) or [] if o.lstrip("+").startswith(f"{KEY}=")]
    src = ctx.composed.provenance.source_of(KEY)
    where = f"command line ({given[-1]})" if given else str(src) if src is not None else "a recipe's hydra node"
    yield Finding(
        "FC741",
        "error",
        [KEY, "fsdpcfg.run_dir"],
        f"{KEY} = {value}: fsdpcfg writes the run folder at fsdpcfg.run_dir ({here}) and nothing ever creates "
        "Hydra's run dir, so this setting would be ignored",
        f"set fsdpcfg.run_dir={value} instead ({KEY} follows it)",
        provenance={KEY: where},
    )
