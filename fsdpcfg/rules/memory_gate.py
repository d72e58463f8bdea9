"""FC450: the per-rank memory estimate fits the device.

:func:`fsdpcfg.estimate.memory.estimate_memory` was shown in ``check``'s derived numbers only, so a run whose own
estimate was 10,000 GiB on a 12 GiB device passed ``check`` and ``--dry-run`` and failed with an out-of-memory
error after start-up (issue 14 item 7). The estimate now gates: past ``fsdpcfg.memory_margin`` over the device
memory it is an error; from :data:`WARN_FRACTION` of the device up a warning.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from fsdpcfg.rules.finding import Finding
from fsdpcfg.rules.registry import rule

if TYPE_CHECKING:
    from fsdpcfg.rules.context import Context

#: a peak from this fraction of the device memory up is a warning (allocator fragmentation and the buffers the
#: estimate leaves out take the rest).
WARN_FRACTION = 0.9
_KEYS = ("fsdpcfg.memory_margin", "fsdpcfg.device_memory_gb", "trainer.n_gpus_per_node")


def _gib(n: float) -> str:
    return f"{n / 2**30:,.2f} GiB"


@rule(
    "FC450",
    "the per-rank memory estimate fits the device memory",
    keys=_KEYS,
    example=("+recipe=qwen_grpo", "fsdpcfg.device_memory_gb=0.01"),
)
def memory_fits(ctx: Context) -> Iterator[Finding]:
    """The peak of :func:`fsdpcfg.estimate.memory.estimate_memory` (per rank, all phases) against the memory one
    rank may use (``fsdpcfg.device_memory_gb``, else the detected GPU, else on the CPU the RAM divided by the
    ranks per node). Past ``(1 + fsdpcfg.memory_margin) x device`` it is an error (``memory_margin=null``:
    a warning); from 90% of the device up a warning. No finding when the model's config.json or the device
    memory is unknown here. Source: issue 14 item 7; verl/PyTorch fail such runs with ``CUDA out of memory``
    minutes after start-up."""
    from fsdpcfg.estimate.memory import estimate_memory
    from fsdpcfg.estimate.param_count import UnsupportedArchitecture

    try:
        est = estimate_memory(ctx.cfg, suggest=False)
    except (ValueError, KeyError, TypeError, ArithmeticError, UnsupportedArchitecture):
        return  # no config.json here, an architecture without a formula, or values the schema reports
    dev = est.device_bytes
    if not dev:
        return
    peak = est.peak_bytes
    margin = ctx.get("fsdpcfg.memory_margin")
    limit = None if margin is None else dev * (1 + float(margin))
    if peak < WARN_FRACTION * dev:
        return
    over = limit is not None and peak > limit
    ratio = f"{peak / dev:.0%}" if peak / dev < 1e6 else f"{peak / dev:.1e} times"
    msg = (
        f"the memory estimate is {_gib(peak)} per rank at its peak (phase {est.peak_phase}), {ratio} of the "
        f"{_gib(dev)} one rank may use ({est.device_source})"
    )
    if over and limit is not None:
        msg += f"; past the margin of fsdpcfg.memory_margin={margin} ({_gib(limit)})"
    elif peak > dev:
        msg += "; over the device but within fsdpcfg.memory_margin" if limit else "; fsdpcfg.memory_margin=null"
    else:
        msg += f"; near the device's capacity (warned from {WARN_FRACTION:.0%})"
    helps = []
    try:
        helps = [s for s, _ in estimate_memory(ctx.cfg).suggestions[:3]]
    except (ValueError, KeyError, TypeError, ArithmeticError, UnsupportedArchitecture):
        pass
    fix = (
        f"lower the peak ({'; '.join(helps)}), " if helps else "lower the batch, lengths or model size, "
    ) + "use more ranks or larger devices, or correct fsdpcfg.device_memory_gb"
    if over:
        fix += "; to run anyway, raise fsdpcfg.memory_margin (null: warn only)"
    yield ctx.finding(
        "FC450",
        list(_KEYS),
        msg,
        fix,
        severity="error" if over else "warning",
        derivation=f"peak {peak:,} B vs device {dev:,} B x (1 + margin {margin})",
    )
