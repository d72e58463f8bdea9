"""Expand sweep overrides into points with Hydra's own override grammar and BasicSweeper's rules.

``key=a,b`` and ``key=choice(a,b)`` list values, ``key=range(1,4)`` counts (end excluded), ``group=glob(*)``
picks group options by pattern (``glob(fsdp*,exclude=fsdp)``), and the last key varies fastest, exactly as
``hydra.core.override_parser`` and ``hydra._internal.core_plugins.basic_sweeper.BasicSweeper.split_arguments``
do. Overrides of ``hydra``'s own config (``hydra/launcher=joblib``, ``hydra.launcher.n_jobs=2``,
``hydra.sweep.dir=...``) are split off: they configure the launch, not the points. Points that repeat an
earlier point's overrides (``n=4,4``) are removed, the first one kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fsdpcfg import paths
from fsdpcfg.errors import UsageError


@dataclass
class Expansion:
    """The points of a sweep.

    Attributes:
        points: one override list per distinct point, in Hydra's order.
        hydra_overrides: the overrides of Hydra's own config (launcher, sweep folder), given to every job.
        duplicates: ``(dropped point's overrides, index of the point it repeats)``, in expansion order.
        kind: the config tree every point is composed in (``ppo`` or ``sft``).
    """

    points: list[list[str]]
    hydra_overrides: list[str] = field(default_factory=list)
    duplicates: list[tuple[list[str], int]] = field(default_factory=list)
    kind: str = "ppo"


def is_hydra_override(text: str) -> bool:
    """True for an override of Hydra's own config: ``hydra.x=..``, ``hydra/group=..`` (also with ``+``/``~``)."""
    key = text.lstrip("+~").split("=", 1)[0]
    return key == "hydra" or key.startswith(("hydra.", "hydra/"))


def config_loader(kind: str = "ppo"):
    """A Hydra config loader over the ``kind`` tree (for ``glob()`` over group options and for the launch)."""
    from hydra._internal.config_loader_impl import ConfigLoaderImpl
    from hydra._internal.utils import create_config_search_path

    return ConfigLoaderImpl(config_search_path=create_config_search_path(f"file://{paths.conf_dir(kind)}"))


def _parse(overrides: list[str], kind: str):
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException, OverrideParseException

    try:
        return OverridesParser.create(config_loader=config_loader(kind)).parse_overrides(overrides=overrides)
    except (OverrideParseException, HydraException) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise UsageError(
            f"cannot parse the override: {first}",
            fix="write overrides as key=value, key=a,b, key=range(1,4), group=glob(pattern)",
        ) from None


def _recipe_kinds(points: list[list[str]]) -> set[str]:
    from fsdpcfg.compose import recipe_kind

    kinds = set()
    for point in points:
        recipes = [o.split("=", 1)[1] for o in point if o.lstrip("+").startswith("recipe=")]
        kinds.add(recipe_kind(recipes[-1]) if recipes else "ppo")
    return kinds


def expand(overrides: list[str]) -> Expansion:
    """Split ``overrides`` into Hydra's and the points' and expand the points (see the module docstring).

    Raises:
        UsageError: an override that does not parse, a sweep type BasicSweeper does not run (intervals), a
            ``+recipe=FILE.yaml`` path (sweeps select recipes by name), or points in different config trees
            (an RL and an SFT recipe).
        ComposeError: a ``pkg://`` entry in ``hydra.searchpath`` (:func:`fsdpcfg.compose.refuse_package_search_path`).
    """
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.errors import HydraException

    hydra_ovr = [o for o in overrides if is_hydra_override(o)]
    task = [o for o in overrides if not is_hydra_override(o)]
    from fsdpcfg.compose import refuse_package_search_path

    for parsed in _parse(hydra_ovr, "ppo"):  # Hydra's sweeper would import a pkg:// package before any check
        refuse_package_search_path(parsed)
    for o in task:
        if o.lstrip("+").startswith("recipe=") and o.endswith((".yaml", ".yml")):
            raise UsageError(
                f"`{o}`: a sweep selects recipes by name",
                fix="copy the file into recipes/ and use +recipe=NAME, or run it without -m",
            )
    plain = [o for o in task if "glob(" not in o]
    kind = sorted(_recipe_kinds([plain]))[0]
    try:
        batches = BasicSweeper.split_arguments(_parse(task, kind), max_batch_size=None)
    except HydraException as e:
        raise UsageError(
            f"cannot expand the sweep: {str(e).strip().splitlines()[0]}",
            fix="use value lists (a,b), choice(), range() or glob(); intervals need an optimizing sweeper",
        ) from None
    points: list[list[str]] = []
    seen: dict[tuple[str, ...], int] = {}
    dups: list[tuple[list[str], int]] = []
    for point in batches[0]:
        canon = tuple(sorted(point))
        if canon in seen:
            dups.append((list(point), seen[canon]))
            continue
        seen[canon] = len(points)
        points.append(list(point))
    kinds = _recipe_kinds(points)
    if len(kinds) > 1:
        raise UsageError(
            f"the sweep mixes config trees ({', '.join(sorted(kinds))}): RL and SFT recipes compose different configs",
            fix="sweep RL recipes and SFT recipes separately",
        )
    return Expansion(points=points, hydra_overrides=hydra_ovr, duplicates=dups, kind=kinds.pop() if kinds else kind)
