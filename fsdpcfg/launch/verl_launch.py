"""Launch-time checks of launcher=verl against *this machine* (FC85x): CUDA GPUs, verl and a rollout engine.

These are not config rules: the same config is right on a GPU cluster and wrong on a laptop, and
``fsdpcfg check`` (pre-commit, on a laptop) must accept a cluster config. So they are registered in
:mod:`fsdpcfg.rules.registry` with ``stage="launch"`` (``fsdpcfg explain FC850`` knows them, ``fsdpcfg check``
skips them); :func:`fsdpcfg.launch.verl.launch_verl` runs them (:func:`launch_findings`) right before verl
would start Ray, and ``python -m fsdpcfg ... launcher=verl`` fails there with the finding.

IDs (stable, never reused):
    FC850  no CUDA GPU visible on this machine (verl 0.9.1 has no CPU device)
    FC851  fewer GPUs visible than ``trainer.n_gpus_per_node`` on a one-node run
    FC852  verl is not installed in this environment
    FC853  the rollout engine (``actor_rollout_ref.rollout.name``) is not installed

The machine is probed by :mod:`fsdpcfg.launch.machine` (never importing torch: ``CUDA_VISIBLE_DEVICES``,
``nvidia-smi -L``, ``/proc/driver/nvidia/gpus``; ``importlib.util.find_spec`` for the packages).
"""

from __future__ import annotations

import os
from typing import Any

from fsdpcfg.launch.machine import GpuInfo, detect_gpus, is_installed
from fsdpcfg.rules.context import get_dotted
from fsdpcfg.rules.finding import Finding
from fsdpcfg.rules.registry import rule

#: verl rollout name -> the Python package that must be importable for it.
ROLLOUT_PACKAGES = {"vllm": "vllm", "sglang": "sglang", "trtllm": "tensorrt_llm"}
_NATIVE = "launcher=native runs here (CPU, gloo, the hf rollout): drop launcher=verl, or use a machine with CUDA GPUs"


def _count(value: Any) -> int:
    """``value`` when it is a positive integer (``8``, ``"8"``), else 1 (``inf``, ``nan``, ``???``, a list: the
    schema's FC103 names it)."""
    try:
        n = int(value) if isinstance(value, (int, str)) and not isinstance(value, bool) else 0
    except ValueError:
        return 1
    return n if n > 0 else 1


def launch_findings(cfg: dict[str, Any], *, gpus: GpuInfo | None = None, installed: Any = None) -> list[Finding]:
    """Check that this machine can start verl on the resolved config ``cfg`` (nested dicts).

    Args:
        cfg: the resolved config (verl keys plus the ``fsdpcfg`` section).
        gpus: the GPUs to assume (default: :func:`detect_gpus` with ``fsdpcfg.env`` on top of the environment).
        installed: ``module name -> bool`` (default: ``importlib.util.find_spec``, which imports nothing).

    Returns the findings (FC850-FC853); empty when verl can start here. With
    ``ray_kwargs.ray_init.address`` set, the driver attaches to a running Ray cluster whose nodes hold the
    GPUs, so the GPU count of this machine is not checked.
    """
    installed = installed or is_installed
    out: list[Finding] = []
    kind = get_dotted(cfg, "fsdpcfg.kind", "ppo")
    own = get_dotted(cfg, "fsdpcfg.env", None)  # a section of anything else (`fsdpcfg.env=-1`) is the schema's FC103
    env = {**os.environ, **{str(k): str(v) for k, v in (own if isinstance(own, dict) else {}).items()}}
    address = get_dotted(cfg, "ray_kwargs.ray_init.address", None)
    # the schema reports a count that is not a positive integer (FC103); the machine check then counts 1
    nnodes = _count(get_dotted(cfg, "trainer.nnodes", 1))
    per_node = _count(get_dotted(cfg, "trainer.n_gpus_per_node", 1))
    device = str(get_dotted(cfg, "trainer.device", "cuda"))
    needs = (
        "verl 0.9.1 needs CUDA GPUs (it has no CPU device) and, for RL, a rollout engine such as vllm or "
        "sglang installed beside it"
    )
    if not installed("verl"):
        out.append(
            Finding(
                "FC852",
                "error",
                ["fsdpcfg.launcher"],
                f"launcher=verl, but verl is not installed in this environment; {needs}",
                f"pip install 'verl[verl-core]==0.9.1' plus a rollout engine "
                f"(verl's vllm/sglang extras) on the GPU machine, or: {_NATIVE}",
            )
        )
    if kind == "ppo":
        name = str(get_dotted(cfg, "actor_rollout_ref.rollout.name", ""))
        pkg = ROLLOUT_PACKAGES.get(name)
        # a rollout that is not a verl engine (hf) is a config error, reported by fsdpcfg check (FC801)
        if pkg is not None and not installed(pkg):
            out.append(
                Finding(
                    "FC853",
                    "error",
                    ["actor_rollout_ref.rollout.name"],
                    f"rollout `{name}` needs the `{pkg}` package, which is not installed here; {needs}",
                    f"install verl's `{name}` extra on the GPU machine (it pins its own CUDA torch), or: {_NATIVE}",
                )
            )
    if address and kind == "ppo":
        return out
    if device == "npu":
        return out  # Ascend: verl detects it itself; no CUDA check applies
    g = gpus if gpus is not None else detect_gpus(env)
    if g.count == 0:
        out.append(
            Finding(
                "FC850",
                "error",
                ["fsdpcfg.launcher", "trainer.device"],
                f"no CUDA GPU on this machine ({g.source}); {needs}. Started here, verl rewrites "
                "trainer.device to cuda and then waits for GPUs Ray does not have",
                f"{_NATIVE}; or run on a GPU node, or attach to a GPU Ray cluster with "
                "+ray_kwargs.ray_init.address=HOST:PORT",
            )
        )
    elif nnodes == 1 and g.count < per_node:
        out.append(
            Finding(
                "FC851",
                "error",
                ["trainer.n_gpus_per_node"],
                f"trainer.n_gpus_per_node={per_node}, but this machine shows {g.count} GPU(s) "
                f"({g.source}); Ray would wait for GPUs that do not exist",
                f"set trainer.n_gpus_per_node={g.count} (and re-check the batch sizes), or run where "
                f"{per_node} GPUs are visible",
            )
        )
    return out


# -- the rule table's entries (stage="launch"): one per ID, each reading this machine through launch_findings --

_BOTH = ("ppo", "sft")


def _only(ctx: Any, rule_id: str) -> list[Finding]:
    if get_dotted(ctx.cfg, "fsdpcfg.launcher", "native") != "verl":
        return []
    return [f for f in launch_findings(ctx.cfg) if f.rule == rule_id]


@rule(
    "FC850",
    "launcher=verl needs a CUDA GPU on the machine it starts on",
    keys=("fsdpcfg.launcher", "trainer.device"),
    kinds=_BOTH,
    stage="launch",
)
def no_gpu(ctx: Any) -> list[Finding]:
    """verl 0.9.1 has no CPU device: started without a CUDA GPU it rewrites ``trainer.device`` to cuda and Ray
    waits for GPUs that do not exist. Not checked when attaching to a Ray cluster
    (``ray_kwargs.ray_init.address``), whose nodes hold the GPUs. Source: verl/utils/device.py; reported
    case c25 (docs/design.md#reported-misconfigurations)."""
    return _only(ctx, "FC850")


@rule(
    "FC851",
    "a one-node verl run needs trainer.n_gpus_per_node GPUs visible",
    keys=("trainer.n_gpus_per_node",),
    kinds=_BOTH,
    stage="launch",
)
def too_few_gpus(ctx: Any) -> list[Finding]:
    """On one node Ray schedules ``trainer.n_gpus_per_node`` GPU workers; with fewer visible it waits forever.
    Source: verl/single_controller/ray/base.py resource pools."""
    return _only(ctx, "FC851")


@rule("FC852", "launcher=verl needs verl installed", keys=("fsdpcfg.launcher",), kinds=_BOTH, stage="launch")
def verl_missing(ctx: Any) -> list[Finding]:
    """``python -m verl.trainer.main_ppo`` fails to import without verl; said before anything starts.
    Source: the launch command (fsdpcfg/launch/verl.py)."""
    return _only(ctx, "FC852")


@rule(
    "FC853",
    "the rollout engine must be installed",
    keys=("actor_rollout_ref.rollout.name",),
    kinds=("ppo",),
    stage="launch",
)
def engine_missing(ctx: Any) -> list[Finding]:
    """verl imports the rollout engine (vllm, sglang, tensorrt_llm) in its rollout workers, after Ray and the
    models started. Source: verl/workers/rollout/ (one module per engine)."""
    return _only(ctx, "FC853")
