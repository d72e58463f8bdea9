"""Sweeps: expand with Hydra's override grammar, check every point before the first starts, launch the points
with Hydra's launcher plugins (basic: one after another; joblib: several at once locally; submitit: Slurm),
summarise.

Public API::

    run_sweep(overrides, only_valid=False, dry_run=False) -> int   # the whole of ``python -m fsdpcfg -m``
    expand(overrides) -> Expansion                                  # points, Hydra's own overrides, duplicates
    preflight(points) -> list[PointCheck]                           # compose + check + plan each point

Modules: :mod:`.expand`, :mod:`.preflight`, :mod:`._hydra` (the launcher plugin), :mod:`.task` (what each job
runs), :mod:`.summary`, :mod:`.runner`.
"""

from fsdpcfg.sweep.expand import Expansion, expand
from fsdpcfg.sweep.preflight import PointCheck, preflight
from fsdpcfg.sweep.runner import run_sweep

__all__ = ["Expansion", "PointCheck", "expand", "preflight", "run_sweep"]
