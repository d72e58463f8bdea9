"""``ulysses``: DeepSpeed-Ulysses sequence parallelism (``actor_rollout_ref.actor.ulysses_sequence_parallel_size``).

verl slices each packed micro-batch along the sequence over ``ulysses_sequence_parallel_size`` ranks and
replaces the attention forward with an all-to-all over heads (``verl/models/transformers/monkey_patch.py``
``apply_monkey_patch``); it needs remove-padding (``FSDPEngine.__init__``). fsdpcfg validates the layout
(rules FC302 world divisibility, FC303 remove-padding, FC304 head counts) and passes it to verl: the native
launcher has no sequence parallelism (rule FC802 before launch, ConfigError in the engine).
"""

from __future__ import annotations

from typing import Any

from fsdpcfg.patches.registry import Patch


def _on(size: Any) -> bool:
    try:
        return int(size) > 1
    except (TypeError, ValueError):
        return False


PATCH = Patch(
    name="ulysses",
    title="Ulysses sequence parallelism over the ranks of ulysses_sequence_parallel_size (verl only)",
    targets=("attention.forward", "model.forward:sequence_slice"),
    config_key="actor_rollout_ref.actor.ulysses_sequence_parallel_size",
    is_on=_on,
    model_types=None,
    launchers=("verl",),
    requires=("remove_padding",),
    requires_checked_by="FC303",
    source="verl/models/transformers/monkey_patch.py (apply_monkey_patch); "
    "verl/workers/engine/fsdp/transformer_impl.py (needs use_remove_padding)",
)
