"""Metric sinks that ``trainer.logger`` selects in the native loop, each through its own library, with verl's
meaning (``verl/utils/tracking.py`` ``Tracking``):

- ``console``: the progress bar and one line per step (:class:`fsdpcfg.train.metrics.MetricsLogger` itself);
- ``tensorboard``: ``torch.utils.tensorboard`` events in ``$TENSORBOARD_DIR``, else ``<run_dir>/tensorboard``;
- ``file``: verl's JSON Lines layout (``{"step": N, "data": {metric: value}}`` per line) at
  ``$VERL_FILE_LOGGER_PATH``, else ``$VERL_FILE_LOGGER_ROOT/<project_name>/<experiment_name>.jsonl``, else
  ``<run_dir>/<experiment_name>.jsonl``: inside the run folder, where verl's default (``./<project_name>/``) put a
  folder named after the project into the working folder, and the default project ``fsdpcfg`` then shadowed the
  package for the next ``python -m fsdpcfg`` there (issue 23 item 5);
- ``wandb``: ``wandb.init(project=trainer.project_name, name=trainer.experiment_name)``; ``WANDB_MODE=offline``
  and every other ``WANDB_*`` variable are wandb's own; the run id is kept in ``<run_dir>/wandb_run_id`` so a
  resumed run continues the same run (``resume="allow"``);
- ``mlflow``: ``$MLFLOW_TRACKING_URI``, else a local file store ``<run_dir>/mlruns``; experiment
  ``trainer.project_name``, run ``trainer.experiment_name``, resumed by the id in ``<run_dir>/mlflow_run_id``;
  metric names sanitised as verl does (``@`` -> ``_at_``).

Every path a sink writes inside the run folder is built with :func:`fsdpcfg.paths.owned`: a ``tensorboard``,
``wandb`` or ``mlruns`` link leading out of the run folder is refused, never written through.

Besides these, ``<run_dir>/metrics.jsonl`` is always written: it is the run's own record, read by the closing
summary, sweeps and resume. A sink the native loop does not have (``swanlab``, ``clearml`` ...) is refused by
check (FC804), naming ``launcher=verl``.
"""

from __future__ import annotations

import json
import math
import os
import re
import uuid
from pathlib import Path
from typing import Any, Protocol

from fsdpcfg.errors import ConfigError
from fsdpcfg.paths import owned
from fsdpcfg.redact import scrub_text, write_private
from fsdpcfg.schema.trainer import NATIVE_SINKS  # the declaration check reads (FC804)

#: the key that chose the run folder the sinks write into (named in a refusal: fsdpcfg.paths.owned).
RUN_DIR_KEY = "fsdpcfg.run_dir"


class Sink(Protocol):
    """One metric destination: ``log`` each step's finite float metrics, ``close`` at the end."""

    def log(self, step: int, metrics: dict[str, float]) -> None: ...

    def close(self) -> None: ...


class TensorBoardSink:
    """TensorBoard scalars under ``$TENSORBOARD_DIR`` or ``<run_dir>/tensorboard``."""

    def __init__(self, run_dir: Path) -> None:
        from torch.utils.tensorboard import SummaryWriter

        own = os.environ.get("TENSORBOARD_DIR")  # the user's own folder; else one inside the run folder
        self.dir = Path(own) if own else owned(run_dir, "tensorboard", key=RUN_DIR_KEY)
        self.writer = SummaryWriter(log_dir=str(self.dir))

    def log(self, step: int, metrics: dict[str, float]) -> None:
        for k, v in metrics.items():
            self.writer.add_scalar(k, v, step)
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()


class FileSink:
    """verl's ``file`` logger layout: one ``{"step": N, "data": {...}}`` line per step, appended."""

    def __init__(self, run_dir: Path, project: str, experiment: str) -> None:
        path, root = os.environ.get("VERL_FILE_LOGGER_PATH"), os.environ.get("VERL_FILE_LOGGER_ROOT")
        if path:
            self.path = Path(path)
        elif root:
            self.path = Path(root).expanduser() / project / f"{experiment}.jsonl"
        else:
            self.path = owned(run_dir, f"{experiment}.jsonl", key=RUN_DIR_KEY)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.fh = open(self.path, "a", buffering=1)

    def log(self, step: int, metrics: dict[str, float]) -> None:
        self.fh.write(scrub_text(json.dumps({"step": step, "data": metrics})) + "\n")

    def close(self) -> None:
        self.fh.close()


def _stored_id(path: Path) -> str | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return text or None


class WandbSink:
    """A wandb run (``WANDB_MODE=offline`` works without a network); the id survives a resume."""

    def __init__(self, run_dir: Path, project: str, experiment: str, config: dict[str, Any]) -> None:
        import wandb

        id_file = owned(run_dir, "wandb_run_id", key=RUN_DIR_KEY)
        owned(run_dir, "wandb", key=RUN_DIR_KEY)  # wandb writes <dir>/wandb/: never through a link out
        run_id = _stored_id(id_file) or uuid.uuid4().hex[:8]  # wandb's own ids are 8 of [a-z0-9] too
        try:
            self.run = wandb.init(
                project=project,
                name=experiment,
                id=run_id,
                resume="allow",
                dir=str(run_dir),
                config=config,
                reinit="finish_previous",
            )
        except Exception as e:  # no login, no network: wandb's own error, told as a config problem
            raise ConfigError(
                f"wandb could not start a run: {str(e).strip().splitlines()[0]}",
                key="trainer.logger",
                value="wandb",
                fix="run `wandb login`, set WANDB_API_KEY, or WANDB_MODE=offline "
                "(sync later with `wandb sync`), or drop wandb from trainer.logger",
            ) from None
        write_private(id_file, self.run.id + "\n")
        self.id = self.run.id

    def log(self, step: int, metrics: dict[str, float]) -> None:
        self.run.log(metrics, step=step)

    def close(self) -> None:
        self.run.finish()


_MLFLOW_BAD = re.compile(r"[^/\w.\- :]")


def mlflow_key(name: str) -> str:
    """A metric name MLflow accepts, mapped as verl's MLflow adapter maps it (``@`` -> ``_at_``, ``//`` -> ``/``,
    other characters MLflow refuses -> ``_``)."""
    return _MLFLOW_BAD.sub("_", re.sub(r"/+", "/", name.replace("@", "_at_")))


class MlflowSink:
    """An MLflow run in ``$MLFLOW_TRACKING_URI`` or the local file store ``<run_dir>/mlruns``."""

    def __init__(self, run_dir: Path, project: str, experiment: str, config: dict[str, Any]) -> None:
        uri = os.environ.get("MLFLOW_TRACKING_URI")
        if not uri:
            uri = owned(run_dir, "mlruns", key=RUN_DIR_KEY).absolute().as_uri()
            os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3 keeps the file store opt-in
        import mlflow

        self.mlflow = mlflow
        mlflow.set_tracking_uri(uri)
        id_file = owned(run_dir, "mlflow_run_id", key=RUN_DIR_KEY)
        run_id = _stored_id(id_file)
        if run_id:
            run = mlflow.start_run(run_id=run_id)
        else:
            exp = mlflow.set_experiment(project)
            run = mlflow.start_run(experiment_id=exp.experiment_id, run_name=experiment)
            flat = _flatten(config)
            mlflow.log_params({k[:250]: str(v)[:500] for k, v in flat.items()})
        self.id = run.info.run_id  # the run start_run made active (active_run() is typed Optional)
        write_private(id_file, self.id + "\n")
        self.uri = uri

    def log(self, step: int, metrics: dict[str, float]) -> None:
        self.mlflow.log_metrics({mlflow_key(k): v for k, v in metrics.items()}, step=step)

    def close(self) -> None:
        self.mlflow.end_run()


def _flatten(d: Any) -> dict[str, Any]:
    from fsdpcfg import keypath

    return keypath.flatten(d)


def open_sinks(loggers: list[str], run_dir: Path, project: str, experiment: str, config: dict[str, Any]) -> list[Sink]:
    """The sinks of ``trainer.logger`` other than ``console``, in the order given.

    Raises:
        ValueError: a logger the native loop does not have (check refuses it first: FC804).
    """
    sinks: list[Sink] = []
    for name in loggers:
        if name == "console":
            continue
        if name == "tensorboard":
            sinks.append(TensorBoardSink(run_dir))
        elif name == "file":
            sinks.append(FileSink(run_dir, project, experiment))
        elif name == "wandb":
            sinks.append(WandbSink(run_dir, project, experiment, config))
        elif name == "mlflow":
            sinks.append(MlflowSink(run_dir, project, experiment, config))
        else:
            raise ValueError(f"trainer.logger {name!r}: not a sink of the native loop ({', '.join(NATIVE_SINKS)})")
    return sinks


def finite(metrics: dict[str, Any]) -> dict[str, float]:
    """The metrics a tracker can plot: numbers (bools excluded) that are finite, as floats."""
    return {
        k: float(v)
        for k, v in metrics.items()
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(float(v))
    }
