"""What a rank of a native run leaves behind when the run fails, read by the launcher without torch: the seconds
a collective may wait (:func:`collective_timeout`) and the stacks of the ranks torchrun had to stop
(:func:`stopped_ranks`). Source: issue 22 item 4 (a stopped rank hung the job for torch's 30-minute default, and
verl's timeout key was refused by the native launcher).
"""

from __future__ import annotations

from pathlib import Path

#: the key whose seconds bound every collective of a native run (verl's; an SFT config has no such key and gets
#: its default); :func:`collective_timeout` reads it.
TIMEOUT_KEY = "actor_rollout_ref.nccl_timeout"
#: ``<run_dir>/stack-rank<R>.log``: the Python stack of every thread of rank R when torchrun stopped it (SIGTERM),
#: kept only when it was stopped; :func:`stopped_ranks` names those ranks.
STACK_FILE = "stack-rank{rank}.log"


def collective_timeout(resolved: dict) -> int:
    """Seconds a collective of this run waits for the other ranks (``resolved``: the run's config as nested dicts):
    :data:`TIMEOUT_KEY`, else verl's default of it (600)."""
    from fsdpcfg import keypath, verlref

    value = keypath.get(resolved, TIMEOUT_KEY, None)
    return int(value) if isinstance(value, int) and value > 0 else int(verlref.defaults()[TIMEOUT_KEY])


def stopped_ranks(run_dir: Path) -> list[str]:
    """The ranks torchrun had to stop (SIGTERM) after another one failed, each with its stack file and where it
    stood (the innermost frame of its main thread): the ranks that stopped answering when a collective timed out
    (:data:`STACK_FILE`, written by the ranks' SIGTERM handler, :mod:`fsdpcfg.train.entry`)."""
    out = []
    for f in sorted(run_dir.glob(STACK_FILE.format(rank="*"))):
        text = f.read_text(errors="replace")
        if not text.strip():
            continue
        rank = f.stem.rsplit("rank", 1)[-1]
        main = text.split("Current thread", 1)[-1].splitlines()
        frame = next((line.strip() for line in main[1:] if line.strip().startswith("File ")), "")
        out.append(f"rank {rank} at {frame} (every thread: {f})" if frame else f"rank {rank} ({f})")
    return out
