"""``fsdpcfg doctor``: will this model train and roll out? Stages in increasing order of cost, each a module.

Public API::

    run_doctor(overrides, variants=..., ...) -> Report    # fsdpcfg.doctor.runner
    Report, StageResult, STAGES, render_table, render_json # fsdpcfg.doctor.report
    Failure, boundary names (MODEL, STATE, TRANSFER, ROLLOUT, CONFIG)   # fsdpcfg.doctor.boundaries
    run_matrix(...), write_compatibility(...)              # fsdpcfg.doctor.matrix (docs/compatibility.md)

Stage modules: :mod:`.stage_check` (0), :mod:`.stage_load` (1), :mod:`.stage_patches` (2, with :mod:`.compare`),
:mod:`.stage_sft` (3), :mod:`.stage_grpo` (4), :mod:`.stage_match` (5); 3-5 run in :mod:`.worker` under torchrun,
on configs :mod:`.smoke` derives from the user's. Importing this package imports neither torch nor transformers.
"""

from fsdpcfg.doctor.boundaries import CONFIG, MODEL, ROLLOUT, STATE, TRANSFER, Failure
from fsdpcfg.doctor.report import STAGES, Report, StageResult, render_json, render_table
from fsdpcfg.doctor.runner import run_doctor
from fsdpcfg.doctor.smoke import Variant

__all__ = [
    "CONFIG",
    "MODEL",
    "ROLLOUT",
    "STAGES",
    "STATE",
    "TRANSFER",
    "Failure",
    "Report",
    "StageResult",
    "Variant",
    "render_json",
    "render_table",
    "run_doctor",
]
