"""FC69x: runs that start from another run's checkpoint (the SFT -> RL chain, ``${fsdpcfg_latest:ROOT}``).

FC690  the model path names the newest checkpoint of a run that has not written one yet
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from fsdpcfg.compose.resolvers import NO_CHECKPOINT_YET
from fsdpcfg.rules.finding import Finding
from fsdpcfg.rules.registry import rule

if TYPE_CHECKING:
    from fsdpcfg.rules.context import Context

#: The model-path keys of each config kind that ``${fsdpcfg_latest:...}`` may fill.
MODEL_PATH_KEYS = {
    "ppo": (
        "actor_rollout_ref.model.path",
        "actor_rollout_ref.model.tokenizer_path",
        "critic.model.path",
        "critic.model.tokenizer_path",
    ),
    "sft": ("model.path", "model.tokenizer_path"),
}


def pending_checkpoint_root(value: object) -> Path | None:
    """The checkpoint root (``trainer.default_local_dir`` of the earlier run) when ``value`` is what
    ``${fsdpcfg_latest:ROOT}`` returns while ROOT holds no complete checkpoint, else ``None``."""
    if isinstance(value, str) and Path(value).name == NO_CHECKPOINT_YET:
        return Path(value).parent
    return None


def first_command(root: Path) -> str:
    """The command that writes checkpoints under ``root``: ``python -m fsdpcfg +recipe=NAME`` when a shipped
    recipe is named like the folder (``checkpoints/<project>/<experiment>`` with experiment = recipe name)."""
    from fsdpcfg import paths

    recipe = paths.PACKAGE_DIR.parent / "recipes" / f"{root.name}.yaml"
    if recipe.is_file():
        return f"python -m fsdpcfg +recipe={root.name}"
    return f"the run whose trainer.default_local_dir is {root}"


@rule(
    "FC690",
    "the model path is the newest checkpoint of a run that has not written one yet",
    severity="warning",
    keys=MODEL_PATH_KEYS["ppo"],
    kinds=("ppo", "sft"),
    example=[
        "+recipe=arith_grpo_sft",
        "actor_rollout_ref.model.path=${fsdpcfg_latest:/nonexistent/checkpoints/fsdpcfg/arith_sft}",
    ],
)
def checkpoint_not_written_yet(ctx: Context) -> Iterator[Finding]:
    """``${fsdpcfg_latest:ROOT}`` (fsdpcfg/compose/resolvers.py) names the newest complete ``global_step_N``
    under ROOT, the way a verl user points ``actor_rollout_ref.model.path`` at an SFT run's checkpoint before
    RL. Before that run has saved one there is nothing to load: ``fsdpcfg check`` says which run comes first (a
    warning: the chain is right, only its order matters) and ``python -m fsdpcfg`` refuses to start
    (:func:`refuse_pending_checkpoint`), instead of failing in ``from_pretrained`` on every rank.

    Source: the SFT -> GRPO chain of verl's examples (``examples/sft`` then ``examples/grpo_trainer`` with
    ``actor_rollout_ref.model.path`` set to the SFT checkpoint); issue 15 item 8.
    """
    for key in MODEL_PATH_KEYS.get(ctx.composed.kind, ()):
        root = pending_checkpoint_root(ctx.get(key))
        if root is None:
            continue
        yield ctx.finding(
            "FC690",
            [key],
            f"{key} = ${{fsdpcfg_latest:{root}}} but {root} holds no complete "
            "global_step_N checkpoint yet (a folder with MANIFEST.json)",
            f"run {first_command(root)} first; then this config starts from its last checkpoint",
            severity="warning",
        )


def refuse_pending_checkpoint(cfg: dict, kind: str) -> None:
    """Refuse to launch a run whose model path is a ``${fsdpcfg_latest:ROOT}`` with no checkpoint yet (FC690).

    Raises:
        fsdpcfg.errors.ConfigError: naming the key, the folder and the command to run first.
    """
    from fsdpcfg.errors import ConfigError
    from fsdpcfg.rules.context import get_dotted

    for key in MODEL_PATH_KEYS.get(kind, ()):
        value = get_dotted(cfg, key, None)
        root = pending_checkpoint_root(value)
        if root is not None:
            raise ConfigError(
                f"[FC690] {root} holds no complete global_step_N checkpoint yet, so there is no model to start from",
                key=key,
                value=value,
                fix=f"run {first_command(root)} first (it saves there), then run this again",
            )
