"""FC408: the training data files, read only for their presence (never opened by ``fsdpcfg check``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from fsdpcfg.rules.context import Context
from fsdpcfg.rules.finding import Finding
from fsdpcfg.rules.registry import rule

KEY = "data.train_files"


def missing_files(value: Any) -> list[str]:
    """Return the entries of ``data.train_files`` (a path or a list of paths) that are not files here.
    Remote URIs (``hdfs://``, ``s3://``, ...) are not checked."""
    files = value if isinstance(value, (list, tuple)) else [value]
    out = []
    for f in files:
        if not isinstance(f, str) or not f or "://" in f:
            continue
        if not Path(f).expanduser().is_file():
            out.append(f)
    return out


@rule("FC408", "training data files exist on this machine", severity="info", keys=[KEY],
      example=["data.train_files=/no/such/train.parquet"], kinds=("ppo", "sft"))
def train_files_present(ctx: Context) -> Iterable[Finding]:
    """A data file that does not exist here cannot be checked; on a laptop checking a cluster config that is
    normal (info), and ``python -m fsdpcfg`` refuses to launch without it, before torchrun starts.

    Source: verl/utils/dataset/rl_dataset.py and sft_dataset (read at worker start-up, minutes in);
    ../shared/cases/README.md "Offline inspection".
    """
    missing = missing_files(ctx.get(KEY))
    if missing:
        yield ctx.finding("FC408", [KEY], f"{KEY}: {', '.join(missing)} does not exist on this machine, so the data "
                          "was not checked; a native run here stops before starting",
                          "fix the path, or check where the data is", severity="info")
