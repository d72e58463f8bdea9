"""The one weight-load loop: copy the engine's stream of ``(name, tensor)`` buckets into a replica's tensors.

Every replica (:class:`fsdpcfg.train.rollout.hf.HFRollout`, and the LoRA replica's base and adapter loads in
:mod:`fsdpcfg.train.lora.rollout`) differs only in how a streamed name maps to its tensors and what it does
after the last bucket; the copy, the checks and the freeing of each tensor as it is loaded live here.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence

import torch

from fsdpcfg.train.engine.fsdp import drain


def load_buckets(
    buckets: Iterable[list[tuple[str, torch.Tensor]]],
    targets: Callable[[str], Sequence[torch.Tensor] | None],
    *,
    expected: Collection[str],
    what: str = "weights",
    unknown: Callable[[str], str] | None = None,
    may_be_absent: Callable[[str, set[str]], bool] | None = None,
) -> set[str]:
    """Copy every ``(name, tensor)`` of ``buckets`` into each tensor ``targets(name)`` returns, cast to the
    target's dtype and device, under ``torch.no_grad``. Each streamed tensor is dropped as soon as it is copied
    (:func:`fsdpcfg.train.engine.fsdp.drain`), so the previous bucket is not kept alive while the engine gathers
    the next one.

    Args:
        buckets: the stream, each bucket a list of ``(name, full tensor)``; the buckets are emptied.
        targets: the replica tensors a name loads into (one, or several sharing a weight); ``None`` or empty for
            a name the replica does not have.
        expected: every name the replica needs; ``what`` names them in the errors (``"base weights"``).
        unknown: the error text for a name the replica does not have (default: ``"the replica has no ..."``).
        may_be_absent: ``(name, loaded)`` is true for an expected name that need not arrive (a tied copy).

    Returns:
        The names loaded.

    Raises:
        RuntimeError: a name the replica does not have, a shape that differs from the replica's, or an
            expected name that no bucket delivered.
    """
    loaded: set[str] = set()
    with torch.no_grad():
        for name, tensor in drain(buckets):
            found = targets(name)
            if not found:
                why = unknown(name) if unknown is not None else f"the replica has no tensor named {name!r}"
                raise RuntimeError(f"weight sync: {why}")
            for t in found:
                if t.shape != tensor.shape:
                    raise RuntimeError(
                        f"weight sync: {name} has shape {tuple(tensor.shape)}, the replica expects {tuple(t.shape)}"
                    )
                t.copy_(tensor.to(device=t.device, dtype=t.dtype))
            loaded.add(name)
            del tensor  # not kept alive while the engine gathers the next bucket (see drain)
    missing = sorted(k for k in expected if k not in loaded and not (may_be_absent and may_be_absent(k, loaded)))
    if missing:
        raise RuntimeError(f"weight sync: no {what} arrived for {missing[:5]} ({len(missing)} tensors)")
    return loaded
