"""FC730: the names that become folders (``runs/<project>/<experiment>``, ``checkpoints/<project>/<experiment>``)
must each be one path component.

``trainer.project_name`` and ``trainer.experiment_name`` are interpolated into ``fsdpcfg.run_dir`` and
``trainer.default_local_dir`` (conf/config.yaml, conf/sft/config.yaml, as verl's ppo_trainer.yaml does for its
checkpoints); ``..`` or a ``/`` there moves the run folder and the checkpoint folder (which checkpoint pruning
deletes from) outside their roots. The writers check it again (:func:`fsdpcfg.paths.within`).
"""

from __future__ import annotations

from collections.abc import Iterable

from fsdpcfg.paths import component_problem
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
