"""FC730: the names that become folders (``runs/<project>/<experiment>``, ``checkpoints/<project>/<experiment>``)
must each be one path component. FC731 (at launch): the run folder is new, empty or fsdpcfg's own.

``trainer.project_name`` and ``trainer.experiment_name`` are interpolated into ``fsdpcfg.run_dir`` and
``trainer.default_local_dir`` (conf/config.yaml, conf/sft/config.yaml, as verl's ppo_trainer.yaml does for its
checkpoints); ``..`` or a ``/`` there moves the run folder and the checkpoint folder (which checkpoint pruning
deletes from) outside their roots. The writers check it again (:func:`fsdpcfg.paths.within`).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from fsdpcfg.paths import FOLDER_RULE, component_problem, folder_not_owned, foreign_entries
from fsdpcfg.rules.context import Context
from fsdpcfg.rules.finding import Finding
from fsdpcfg.rules.registry import rule

#: the config keys whose values become one folder name each.
NAME_KEYS = ("trainer.project_name", "trainer.experiment_name")


@rule(
    "FC730",
    "trainer.project_name / trainer.experiment_name is not one folder name",
    keys=NAME_KEYS,
    example=["trainer.experiment_name=../../x"],
    kinds=("ppo", "sft"),
)
def run_name_is_one_component(ctx: Context) -> Iterable[Finding]:
    """A project or experiment name is one path component: not empty, not ``.``/``..``, no ``/`` or NUL, no
    leading ``-``, at most 255 bytes. Otherwise the run folder and the checkpoint folder land outside
    ``runs/`` and ``checkpoints/`` and overwrite what is there.

    Source: issue 14 item 5 (``trainer.project_name=..`` and ``trainer.experiment_name=../../x`` wrote the
    run folder outside its root and overwrote a user's ``config.yaml``, even with ``--dry-run``; checkpoint
    pruning, ``trainer.max_actor_ckpt_to_keep``, followed the same path).
    """
    for key in NAME_KEYS:
        if not ctx.is_set(key):
            continue
        value = ctx.get(key)
        problem = component_problem(value) if isinstance(value, str) else None  # other types: the schema's FC103
        if problem is None:
            continue
        yield ctx.finding(
            "FC730",
            [key],
            f"{key}={value!r} {problem}: it is a folder name in fsdpcfg.run_dir and "
            "trainer.default_local_dir (runs/<project>/<experiment>), so the run would write outside "
            "its own folders",
            f"use one plain name, e.g. {key}=my_run (letters, digits, '_', '-', '.'); to put the run "
            "elsewhere set fsdpcfg.run_dir and trainer.default_local_dir to the folders you want",
        )


@rule(
    FOLDER_RULE,
    "the run folder holds files fsdpcfg did not write",
    keys=("fsdpcfg.run_dir",),
    kinds=("ppo", "sft"),
    stage="launch",
)
def run_folder_is_ours(ctx: Context) -> Iterable[Finding]:
    """A run writes its files (``config.yaml``, ``run_info.json``, ``overrides.yaml``, ``metrics.jsonl``,
    ``tensorboard/``, ...) only into a run folder that is new, empty, or fsdpcfg's own (it holds the
    ``.fsdpcfg-folder`` mark fsdpcfg leaves in a folder it took, or is the run folder of an earlier fsdpcfg). A
    folder holding anything else (``fsdpcfg.run_dir=.`` or an empty value in a project folder, a user's folder
    with its own ``config.yaml``) is refused before anything is written, and a dry run writes its files into a
    temporary folder instead, with this finding as a warning. A sweep's folder (``hydra.sweep.dir``) and each
    job's folder are held to the same. Checked where the run starts (the folder's contents are the machine's,
    not the config's), by :func:`fsdpcfg.paths.claim_folder`, which every writer of the run folder goes through.

    Source: issue 22 item 3 (``fsdpcfg.run_dir=.``: ``--dry-run`` overwrote the user's own config.yaml).
    """
    value = ctx.get("fsdpcfg.run_dir")
    if not isinstance(value, str):
        return  # the schema's FC103
    folder = Path(value).expanduser()
    foreign = foreign_entries(folder)
    if foreign:
        err = folder_not_owned(folder, "fsdpcfg.run_dir", foreign)
        yield ctx.finding(
            FOLDER_RULE, ["fsdpcfg.run_dir"], err.message.removeprefix(f"[{FOLDER_RULE}] "), err.fix or ""
        )
