"""The task function Hydra's launcher runs for each sweep point (in this process, a joblib worker or a Slurm job).

It recomposes the point with :func:`fsdpcfg.compose.compose` (for provenance), makes sure Hydra composed the
same config the preflight checked, points the run folder at the job's folder and the checkpoints at
``<trainer.default_local_dir>/<sweep folder name>/<job number>``, writes the run-folder metadata and starts the
point's torchrun (or verl). Everything the point prints goes to ``<job folder>/train.log``. It raises nothing but
an interruption: the outcome (``ok``/``failed``, exit code, final reward, wall time, error) is returned and saved
as ``<job folder>/result.json``, so one failing point does not stop the others; a signal (Ctrl-C, SIGTERM)
saves ``interrupted`` and raises :class:`fsdpcfg.errors.Interrupted`, which stops the sweep.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

from fsdpcfg.errors import ConfigError, Interrupted

RESULT_FILE = "result.json"
LOG_FILE = "train.log"


@contextlib.contextmanager
def output_to(path: Path) -> Iterator[None]:
    """Send this process's stdout and stderr (file descriptors 1 and 2, so child processes too) to ``path``."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(path, "ab", buffering=0) as fh:
        os.dup2(fh.fileno(), 1)
        os.dup2(fh.fileno(), 2)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


def final_metrics(run_dir: Path) -> dict[str, Any]:
    """``{"steps": last logged step, "final_reward": the last training step's critic/rewards/mean, "val_reward":
    the last validation's reward}`` from ``metrics.jsonl``
    (:func:`fsdpcfg.runinfo.summary.read_metrics`; ``None`` values when nothing was logged). The validation
    reward is the first ``val-core/<data_source>/reward/mean@N`` metric by name (verl's name; one data source in
    the recipes)."""
    from fsdpcfg.runinfo.summary import read_metrics

    rows = read_metrics(run_dir / "metrics.jsonl")
    train = [r for r in rows if "critic/rewards/mean" in r]
    val_keys = sorted({k for r in rows for k in r if k.startswith("val-core/") and "/reward/mean@" in k})
    val = [r for r in rows if val_keys and val_keys[0] in r]
    return {
        "steps": rows[-1]["step"] if rows else None,
        "final_reward": train[-1]["critic/rewards/mean"] if train else None,
        "val_reward": val[-1][val_keys[0]] if val else None,
    }


def point_config(cfg: dict[str, Any], run_dir: Path, job: int, ckpt_group: str) -> tuple[dict, Any]:
    """Point a native point's resolved ``cfg`` at its job folder ``run_dir`` and its checkpoint folder
    ``<trainer.default_local_dir>/<ckpt_group>/<job>`` (absolute); return it with its plan
    (:func:`fsdpcfg.plan.plan_run`, by the config's run kind).

    Raises:
        ConfigError: the plan cannot be made.
    """
    from fsdpcfg.plan import plan_run

    cfg["fsdpcfg"]["run_dir"] = str(Path(run_dir).absolute())
    ckpt = Path(cfg["trainer"]["default_local_dir"]).expanduser().absolute() / ckpt_group / str(job)
    cfg["trainer"]["default_local_dir"] = str(ckpt)
    return cfg, plan_run(cfg)


def _run(job_cfg: Any, expected: dict[str, Any], run_dir: Path, job: int, ckpt_group: str) -> dict[str, Any]:
    from omegaconf import OmegaConf

    from fsdpcfg.check.key_advice import KEY_ADVICE
    from fsdpcfg.compose import compose
    from fsdpcfg.runinfo import check_audit_file, redact, run_config, write_run_info
    from fsdpcfg.sweep.preflight import config_digest

    composed = compose(list(expected["overrides"]), keys=KEY_ADVICE)
    cfg = run_config(composed)
    # Hydra's job config is a DictConfig: both give str-keyed dicts
    hydra_cfg = redact(
        cast("dict[str, Any]", OmegaConf.to_container(job_cfg, resolve=True)),
        cast("dict[str, Any]", OmegaConf.to_container(job_cfg, resolve=False)),
    )
    if config_digest(hydra_cfg) != expected["digest"] or config_digest(cfg) != expected["digest"]:
        raise ConfigError(
            "the config Hydra composed for this job differs from the one the preflight checked",
            fix="report this to the fsdpcfg maintainers (fsdpcfg.compose and Hydra disagree)",
        )
    if cfg["fsdpcfg"]["launcher"] != "native":
        from fsdpcfg.launch.folders import hold_folders
        from fsdpcfg.launch.verl import launch_verl

        with hold_folders(cfg, print, folders=[("hydra.sweep.dir", run_dir)]):  # verl keeps its own checkpoints
            write_run_info(run_dir, composed, extra={"sweep": expected["sweep"]})
            return {"rc": launch_verl(composed, dry_run=False, echo=print)}
    from fsdpcfg.launch.native import launch_native
    from fsdpcfg.launch.preflight import preflight

    cfg, plan = point_config(cfg, run_dir, job, ckpt_group)
    cfg = preflight(cfg, plan, echo=print)
    rc = launch_native(cfg, plan=plan, echo=print, composed=composed, run_info={"sweep": expected["sweep"]})
    out: dict[str, Any] = {"rc": rc, "checkpoints": cfg["trainer"]["default_local_dir"], **final_metrics(run_dir)}
    if rc == 0 and composed.kind == "ppo":
        mismatches = check_audit_file(run_dir)
        if mismatches:
            raise ConfigError("start-up audit: " + "; ".join(mismatches))
    return out


def run_point(job_cfg: Any, *, expected: dict[str, dict[str, Any]], ckpt_group: str) -> dict[str, Any]:
    """Hydra task function of one sweep point; returns (and saves) its outcome, never raises. A job folder that
    holds files fsdpcfg did not write (:func:`fsdpcfg.paths.claim_folder`) gets nothing: the outcome says why.

    Args:
        job_cfg: the job's config as Hydra composed it (without the ``hydra`` node).
        expected: ``" ".join(overrides)`` -> ``{"index", "overrides", "digest", "sweep"}`` of every checked point.
        ckpt_group: the sweep's folder name, the checkpoint sub-folder shared by its points.
    """
    from hydra.core.hydra_config import HydraConfig

    from fsdpcfg.compose import resolvers
    from fsdpcfg.paths import claim_folder, owned
    from fsdpcfg.sweep.summary import SWEEP_DIR_KEY

    resolvers.register()  # a fresh worker process has not registered fsdpcfg's ${fsdpcfg_home:...} yet
    hc = HydraConfig.get()
    overrides = list(hc.overrides.task)
    run_dir = Path(hc.runtime.output_dir).absolute()
    job = int(hc.job.num)
    info = expected.get(" ".join(overrides))
    started = time.time()
    result: dict[str, Any] = {
        "point": info["index"] if info else None,
        "job": job,
        "overrides": overrides,
        "status": "failed",
        "rc": None,
        "final_reward": None,
        "val_reward": None,
        "steps": None,
        "wall_s": None,
        "run_dir": str(run_dir),
        "error": None,
        "started": started,
    }
    stop: Interrupted | None = None
    try:  # the job folder Hydra made (it holds Hydra's .hydra/): fsdpcfg's, or nothing is written into it
        claim_folder(run_dir, SWEEP_DIR_KEY)
    except (ConfigError, OSError) as e:
        result.update(error=str(e), ended=time.time())
        result["wall_s"] = round(result["ended"] - started, 2)
        return result
    try:
        if info is None:
            raise ConfigError(f"job overrides {overrides} are not a checked point of this sweep")
        with output_to(owned(run_dir, LOG_FILE, key=SWEEP_DIR_KEY)):
            try:
                result.update(_run(job_cfg, info, run_dir, job, ckpt_group))
            except Exception:
                traceback.print_exc()  # into train.log
                raise
        result["status"] = "ok" if result["rc"] == 0 else "failed"
        if result["rc"] not in (0, None):
            result["error"] = f"exit code {result['rc']} (see {run_dir / LOG_FILE})"
    except ConfigError as e:
        result["error"] = str(e)
    except (Interrupted, KeyboardInterrupt) as e:  # the user stopped the sweep: saved, then passed on
        stop = e if isinstance(e, Interrupted) else Interrupted(signal.SIGINT)
        result["status"] = "interrupted"
        result["error"] = str(stop)
    except Exception as e:  # a crash of one point must not stop the sweep
        result["error"] = f"{type(e).__name__}: {e} (traceback in {run_dir / LOG_FILE})"
    result["ended"] = time.time()
    result["wall_s"] = round(result["ended"] - started, 2)
    from fsdpcfg.redact import write_private

    write_private(owned(run_dir, RESULT_FILE, key=SWEEP_DIR_KEY), json.dumps(result, indent=2, default=str) + "\n")
    if stop is not None:
        raise stop
    return result
