"""The FSDP device mesh a ``fsdp_size`` builds over ``world`` ranks: the one place its shape is derived (rule
FC301, the engine's :func:`fsdpcfg.train.engine.fsdp.build_mesh`, the memory estimate and the run audit)."""

from __future__ import annotations


def mesh_shape(fsdp_size: int, world: int) -> tuple[tuple[int, ...], tuple[str, ...]] | None:
    """The ``(shape, dim_names)`` of verl's ``create_device_mesh`` (verl/workers/engine/fsdp/utils.py).

    1-D ``((world,), ("fsdp",))`` when ``fsdp_size < 0`` or ``>= world`` (shard over all ranks); 2-D
    ``((world // fsdp_size, fsdp_size), ("ddp", "fsdp"))`` (shard within groups of ``fsdp_size`` ranks,
    replicate across them: HSDP) when ``fsdp_size`` divides ``world``; ``None`` when ``fsdp_size`` is 0 or does
    not divide ``world``: no mesh can be built (rule FC301 refuses the config).
    """
    if fsdp_size < 0 or fsdp_size >= world:
        return (world,), ("fsdp",)
    if fsdp_size == 0 or world % fsdp_size:
        return None
    return (world // fsdp_size, fsdp_size), ("ddp", "fsdp")


def shard_group_size(fsdp_size: int, world: int) -> int:
    """Ranks one parameter is sharded over (the mesh's last dimension); ``world`` for a size no mesh has."""
    got = mesh_shape(fsdp_size, world)
    return got[0][-1] if got is not None else world
