"""Stage 2a, validate: Pydantic models of the config, split by domain, in verl 0.9.1's key names.

Public API:
    :class:`RunConfig` (root.py) and the section models; :func:`validate_tree` (never raises; issues for the
    checker) and :func:`parse_run_config` (raises :class:`fsdpcfg.errors.ConfigError`); :mod:`keys` (the key
    universe and the native launcher's table); :func:`model_path_status` and :func:`require_model_path`
    (offline model-path inspection for check, and the error at launch).

Nothing here imports torch, transformers, verl or ``external_lib``.
"""

from fsdpcfg.schema.model import ModelPathStatus, model_path_status, require_model_path
from fsdpcfg.schema.root import RunConfig
from fsdpcfg.schema.validate import SchemaIssue, SchemaReport, parse_run_config, validate_tree

__all__ = [
    "ModelPathStatus",
    "RunConfig",
    "SchemaIssue",
    "SchemaReport",
    "model_path_status",
    "parse_run_config",
    "require_model_path",
    "validate_tree",
]
