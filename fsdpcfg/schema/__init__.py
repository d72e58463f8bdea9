"""Stage 2a, validate: Pydantic models of the config, split by domain, in verl 0.9.1's key names.

Public API:
    :class:`RunConfig` (root.py) and the section models; :func:`validate_tree` (never raises; issues for the
    checker), :func:`parse_run_config` / :func:`parse_sft_config` / :func:`parse_config` (the typed model the
    native trainers read; raise :class:`fsdpcfg.errors.ConfigError`); :func:`attr_path`; :mod:`keys` (the key
    universe and the native launcher's table); :func:`model_path_status` and :func:`require_model_path`
    (offline model-path inspection for check, and the error at launch).

Nothing here imports torch, transformers, verl or ``external_lib``.
"""

from fsdpcfg.schema._base import attr_path
from fsdpcfg.schema.model import ModelPathStatus, model_path_status, require_model_path
from fsdpcfg.schema.root import RunConfig
from fsdpcfg.schema.validate import (
    SchemaIssue,
    SchemaReport,
    parse_config,
    parse_run_config,
    parse_sft_config,
    validate_tree,
)

__all__ = [
    "attr_path",
    "ModelPathStatus",
    "RunConfig",
    "SchemaIssue",
    "SchemaReport",
    "model_path_status",
    "parse_config",
    "parse_run_config",
    "parse_sft_config",
    "require_model_path",
    "validate_tree",
]
