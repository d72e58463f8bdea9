"""The start-up audit: what the native loop actually built, compared with what the config asked for.

    asked = expected_audit(cfg)        # from the resolved config alone (no torch)
    built = collect_audit(trainer)     # from the live objects of fsdpcfg.train.loop.Trainer (rank-local)
    mismatches = compare_audit(asked, built)

:func:`audit_startup` runs all three on every rank right after the trainer is built (every rank sees the same
settings, so every rank stops together), rank 0 writes ``<run_dir>/startup_audit.json``, and a mismatch
raises :class:`ConfigError` before the first training step. Audited: FSDP version, device mesh (shape and
dimension names), world size, device, parameter (master) dtype, compute and reduce dtypes, the patches
applied, the rollout backend and whether a reference model was built.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fsdpcfg.errors import ConfigError
from fsdpcfg.native import backends

#: file in the run folder written by rank 0 at start-up.
AUDIT_FILE = "startup_audit.json"

_DTYPE_NAMES = {
    "fp32": "float32",
    "float32": "float32",
    "float": "float32",
    "bf16": "bfloat16",
    "bfloat16": "bfloat16",
    "fp16": "float16",
    "float16": "float16",
    "half": "float16",
}


def _dtype(name: Any) -> str:
    s = str(name).lower().replace("torch.", "")
    return _DTYPE_NAMES.get(s, s)


def expected_audit(cfg: dict[str, Any]) -> dict[str, Any]:
    """What a GRPO config (resolved, verl key names) asks the native loop to build.

    Raises:
        ConfigError: what :func:`fsdpcfg.plan.make_plan` raises for a config it cannot plan.
    """
    from fsdpcfg import keypath
    from fsdpcfg.patches import REGISTRY
    from fsdpcfg.plan import make_plan

    plan = make_plan(cfg)
    fsdp = cfg["actor_rollout_ref"]["actor"]["fsdp_config"]
    fsdp_size = int(fsdp["fsdp_size"])
    world = plan.world_size
    from fsdpcfg.estimate.mesh import mesh_shape

    shape, dims = mesh_shape(fsdp_size, world) or ((world,), ("fsdp",))  # make_plan ran FC301 first
    mesh = {"shape": list(shape), "dim_names": list(dims)}
    from fsdpcfg.schema.actor import fsdp_dtypes  # the schema is heavy: `check` imports runinfo first

    compute, reduce, _ = fsdp_dtypes(fsdp)
    return {
        "fsdp_version": 2 if plan.strategy == "fsdp2" else 1,
        "mesh": mesh,
        "world_size": world,
        "device": plan.device,
        "param_dtype": _dtype(fsdp["model_dtype"]),
        "compute_dtype": _dtype(compute),
        "reduce_dtype": _dtype(reduce),
        "patches": REGISTRY.selected(lambda key: keypath.get(cfg, key, None)),
        "rollout_backend": cfg["actor_rollout_ref"]["rollout"]["name"],
        "reference_model": plan.use_reference,
    }


#: rollout adapter classes of the native loop and the ``rollout.name`` each one is.
ROLLOUT_BACKENDS = {cls: b.name for b in backends.ROLLOUTS for cls in b.classes}


def collect_audit(trainer: Any) -> dict[str, Any]:
    """What ``trainer`` (a :class:`fsdpcfg.train.loop.Trainer`) built, read from the live objects of this rank."""
    import torch.distributed as dist
    from torch.distributed.fsdp import FSDPModule
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

    actor = trainer.actor
    version = 2 if isinstance(actor, FSDPModule) else 1 if isinstance(actor, FSDP) else 0
    param = next(actor.parameters())
    mesh_obj = getattr(param, "device_mesh", None) if version == 2 else getattr(actor, "_device_mesh", None)
    mesh = (
        {"shape": list(mesh_obj.shape), "dim_names": list(mesh_obj.mesh_dim_names or [])}
        if mesh_obj is not None
        else None
    )
    if version == 2:
        mp = actor._get_fsdp_state()._mp_policy  # the policy fully_shard stored (no public getter in torch 2.13)
        compute, reduce = mp.param_dtype or param.dtype, mp.reduce_dtype or mp.param_dtype or param.dtype
    elif version == 1:
        mp = actor.mixed_precision
        compute, reduce = mp.param_dtype or param.dtype, mp.reduce_dtype or param.dtype
    else:
        compute = reduce = param.dtype
    # FSDP1 flattens parameters; the flat parameter keeps the original dtype
    return {
        "fsdp_version": version,
        "mesh": mesh,
        "world_size": dist.get_world_size(),
        "device": trainer.device.type,
        "param_dtype": _dtype(param.dtype),
        "compute_dtype": _dtype(compute),
        "reduce_dtype": _dtype(reduce),
        "patches": list(trainer.patches),
        "rollout_backend": ROLLOUT_BACKENDS.get(type(trainer.rollout).__name__, type(trainer.rollout).__name__),
        "reference_model": trainer.ref is not None,
    }


def compare_audit(asked: dict[str, Any], built: dict[str, Any]) -> list[str]:
    """One line per setting whose built value differs from the asked one (``key: asked X, built Y``)."""
    return [f"{k}: asked {asked[k]!r}, built {built.get(k)!r}" for k in asked if built.get(k) != asked[k]]


def check_audit_file(run_dir: str | Path) -> list[str]:
    """Read ``<run_dir>/startup_audit.json`` and return its mismatches (recomputed from ``asked``/``built``).

    Raises:
        ConfigError: the file is missing or unreadable (the loop did not get as far as start-up).
    """
    path = Path(run_dir) / AUDIT_FILE
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise ConfigError(
            f"no readable start-up audit at {path} ({type(e).__name__})",
            fix="the run stopped before its start-up finished; read its log",
        ) from None
    return compare_audit(data["asked"], data["built"])


def audit_startup(trainer: Any, resolved: dict[str, Any]) -> None:
    """Compare what ``trainer`` built with what its resolved config ``resolved`` (nested dicts, as read from
    ``config.yaml``) asked; rank 0 writes ``startup_audit.json``.

    Raises:
        ConfigError: at least one setting differs (every mismatch listed), on every rank.
    """
    from fsdpcfg.runinfo.faults import write_file_in

    asked, built = expected_audit(resolved), collect_audit(trainer)
    mismatches = compare_audit(asked, built)
    if trainer.rank == 0:
        write_file_in(
            trainer.cfg.fsdpcfg.run_dir,
            AUDIT_FILE,
            json.dumps({"ok": not mismatches, "asked": asked, "built": built, "mismatches": mismatches}, indent=2)
            + "\n",
            "fsdpcfg.run_dir",
        )
    if mismatches:
        raise ConfigError(
            "the run built something other than the config asked for: " + "; ".join(mismatches),
            fix=f"see {AUDIT_FILE} in the run folder; report it if the config is valid",
        )
