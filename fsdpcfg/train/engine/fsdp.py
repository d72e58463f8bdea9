"""Shard a Hugging Face model with FSDP2 (``fully_shard``) or FSDP1 (``FullyShardedDataParallel``) and stream its
full weights back out in Hugging Face checkpoint names.

Mixed precision follows verl 0.9.1 (``verl/workers/engine/fsdp/transformer_impl.py``): parameters are kept in
``fsdp_config.model_dtype``; compute runs in ``fsdp_config.dtype`` unless ``fsdp_config.mixed_precision``
(``param_dtype``/``reduce_dtype``/``buffer_dtype``) overrides it; gradients are reduced in fp32 by default.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeGuard

import torch
import torch.distributed as dist
from torch import nn

from fsdpcfg.errors import ConfigError
from fsdpcfg.train.model import to_dtype

if TYPE_CHECKING:
    from torch.distributed.fsdp import FullyShardedDataParallel

    from fsdpcfg.schema.actor import FSDPConfig
    from fsdpcfg.schema.sft import SftEngine

_FSDP1_PREFIXES = ("_fsdp_wrapped_module.", "_checkpoint_wrapped_module.", "_orig_mod.")


@dataclass
class Precision:
    """Dtypes of one sharded model: ``param`` (compute), ``reduce`` (gradient reduction), ``buffer``."""

    param: torch.dtype
    reduce: torch.dtype
    buffer: torch.dtype

    @classmethod
    def from_fsdp_config(cls, fsdp_cfg: FSDPConfig | SftEngine) -> Precision:
        """The dtypes of one ``fsdp_config`` section (SFT: ``engine``): :func:`fsdpcfg.schema.actor.fsdp_dtypes`
        (``mixed_precision`` when set, else ``dtype`` with fp32 reduce and buffers); the schema validated every
        name."""
        from fsdpcfg.schema.actor import fsdp_dtypes

        param, reduce, buffer = fsdp_dtypes(fsdp_cfg.model_dump())
        return cls(param=to_dtype(param), reduce=to_dtype(reduce), buffer=to_dtype(buffer))


def decoder_layer_classes(
    model: nn.Module,
    names: str | list[str] | None = None,
    key: str = "actor_rollout_ref.actor.fsdp_config.wrap_policy.transformer_layer_cls_to_wrap",
) -> set[type]:
    """The module classes to shard one by one, found by class name in ``model``.

    Args:
        names: ``wrap_policy.transformer_layer_cls_to_wrap`` (a name or a list); ``None``: the model's
            ``_no_split_modules`` (its decoder layers). As verl's ``get_fsdp_wrap_policy``, a
            ``_no_split_modules`` name the model does not contain is skipped when another one resolves;
            a name the user configured must resolve (rule FC405 checks it before launch from the files).
        key: the config key reported in errors.

    Raises:
        ConfigError: a configured name is not a class of the model, or nothing resolves; the message lists
            the module classes the model has.
    """
    configured = names is not None
    if isinstance(names, str):
        wanted = [names]
    elif names is not None:
        wanted = list(names)
    else:
        wanted = list(getattr(model, "_no_split_modules", None) or [])
    present = {type(m).__name__: type(m) for m in model.modules()}
    missing = [n for n in wanted if n not in present]
    classes = {present[n] for n in wanted if n in present}
    if (configured and missing) or not classes:
        what = (
            f"{key} = {wanted}: {', '.join(missing)} not found"
            if configured
            else f"cannot find the decoder layers of {type(model).__name__} (_no_split_modules={wanted})"
        )
        raise ConfigError(
            f"{what}; the model's module classes are: {', '.join(sorted(present))}",
            key=key,
            value=names,
            fix=f"set {key} to the decoder layer class (one of the classes above), or "
            "null for the model's _no_split_modules",
        )
    return classes


def build_mesh(device: torch.device, fsdp_size: int):
    """The FSDP device mesh, as verl's ``create_device_mesh`` (verl/workers/engine/fsdp/utils.py): 1-D
    ``("fsdp",)`` over all ranks when ``fsdp_size < 0`` or ``>= world``; else 2-D ``("ddp", "fsdp")`` of shape
    ``(world // fsdp_size, fsdp_size)``: shard within groups of ``fsdp_size`` ranks, replicate across them (HSDP).

    The shape is :func:`fsdpcfg.estimate.mesh.mesh_shape`'s; rule FC301 refuses a size no mesh has (checked before
    launch, and on a config run directly), and the loop refuses a world other than the config's.

    Raises:
        ValueError: ``fsdp_size`` is 0 or does not divide the world size (a config FC301 did not see).
    """
    from torch.distributed.device_mesh import init_device_mesh

    from fsdpcfg.estimate.mesh import mesh_shape

    world = dist.get_world_size()
    got = mesh_shape(fsdp_size, world)
    if got is None:
        raise ValueError(f"fsdp_size {fsdp_size} builds no mesh over {world} ranks (rule FC301)")
    return init_device_mesh(device.type, got[0], mesh_dim_names=got[1])


def fsdp1_wrap_policy(layers: set[type], min_num_params: int = 0, *, lora: bool = False):
    """The FSDP1 ``auto_wrap_policy``, as verl's ``get_fsdp_wrap_policy`` (verl/utils/fsdp_utils.py).

    ``min_num_params > 0``: torch's ``size_based_auto_wrap_policy`` (a module whose parameters not already in a
    nested unit number at least ``min_num_params`` elements becomes a unit; ``ModuleList``/``ModuleDict`` never
    do) replaces the layer-class policy. Else ``transformer_auto_wrap_policy`` over ``layers``. With ``lora``
    each trainable leaf with a ``weight`` (the adapters) gets a unit of its own too (an FSDP1 flat parameter has
    one ``requires_grad``), only when ``min_num_params == 0``: verl leaves the LoRA policy out beside the size
    policy, whose nested units can all-gather in diverging orders (an NCCL deadlock).

    Args:
        layers: the decoder layer classes (:func:`decoder_layer_classes`); not read when ``min_num_params > 0``.
        min_num_params: ``wrap_policy.min_num_params``, in parameters (elements).
        lora: trainable adapters on a frozen base.
    """
    import functools

    from torch.distributed.fsdp.wrap import (
        _or_policy,
        lambda_auto_wrap_policy,
        size_based_auto_wrap_policy,
        transformer_auto_wrap_policy,
    )

    if min_num_params > 0:
        policies = [functools.partial(size_based_auto_wrap_policy, min_num_params=min_num_params)]
    else:
        policies = [functools.partial(transformer_auto_wrap_policy, transformer_layer_cls=layers)]
        if lora:

            def _trainable_leaf(m: nn.Module) -> bool:
                w = getattr(m, "weight", None)
                return not list(m.children()) and isinstance(w, torch.Tensor) and w.requires_grad

            policies.append(functools.partial(lambda_auto_wrap_policy, lambda_fn=_trainable_leaf))
    return policies[0] if len(policies) == 1 else functools.partial(_or_policy, policies=policies)


def fsdp1_units(model: nn.Module, policy) -> dict[str, list[nn.Parameter]]:
    """The units ``FullyShardedDataParallel(model, auto_wrap_policy=policy)`` makes: module name (``""``: the
    root) -> the parameters that unit flattens (those of no nested unit), innermost units first.

    Found by the recursion FSDP1 itself runs for a callable policy (``torch.distributed.fsdp.wrap._recursive_wrap``)
    with a wrapper that records each module instead of wrapping it: ``model`` is left as it was.
    """
    from torch.distributed.fsdp.wrap import _recursive_wrap

    picked: list[nn.Module] = []

    def record(module: nn.Module, **_: object) -> nn.Module:
        picked.append(module)
        return module

    _recursive_wrap(
        model,
        auto_wrap_policy=policy,
        wrapper_cls=record,
        ignored_modules=set(),
        ignored_params=set(),
        only_wrap_children=True,
    )
    names = {m: n for n, m in model.named_modules()}
    claimed: set[nn.Parameter] = set()
    units: dict[str, list[nn.Parameter]] = {}
    for unit in [*picked, model]:  # post-order: a nested unit before the units around it
        own = [q for q in unit.parameters() if q not in claimed]
        claimed.update(own)
        units[names[unit]] = own
    return units


def check_fsdp1_units(
    model: nn.Module,
    policy,
    min_num_params: int,
    key: str = "actor_rollout_ref.actor.fsdp_config.wrap_policy.min_num_params",
) -> None:
    """Refuse FSDP1 size-based units that hold trainable and frozen parameters together (LoRA adapters beside
    the frozen base): an FSDP1 flat parameter has one ``requires_grad``, and torch refuses the mix without
    ``use_orig_params`` (which the native engine does not set). Which units mix depends on the module tree and
    on ``min_num_params`` (a threshold small enough that each adapter's units hold adapters only runs).

    Raises:
        ConfigError: a unit :func:`fsdp1_units` finds mixed; the message names the first few.
    """
    mixed = [n or "<root>" for n, ps in fsdp1_units(model, policy).items() if len({q.requires_grad for q in ps}) == 2]
    if mixed:
        raise ConfigError(
            f"{key} = {min_num_params}: FSDP1 size-based wrapping puts LoRA adapters and frozen weights in one unit "
            f"({', '.join(mixed[:3])}{' ...' if len(mixed) > 3 else ''}); a flat parameter has one requires_grad, "
            "and verl adds the per-adapter units only when min_num_params is 0",
            key=key,
            value=min_num_params,
            fix=f"set {key}=0 (decoder layers plus one unit per adapter), or launcher=verl with "
            "fsdp_config.use_orig_params=true",
        )


def shard_model(
    model: nn.Module,
    strategy: str,
    precision: Precision,
    *,
    device: torch.device,
    reshard_after_forward: bool = True,
    wrap_classes: str | list[str] | None = None,
    fsdp_size: int = -1,
    offload_policy: bool = False,
    min_num_params: int = 0,
    forward_prefetch: bool = False,
    wrap_key: str = "actor_rollout_ref.actor.fsdp_config.wrap_policy",
) -> nn.Module:
    """Shard ``model`` (it must already be on ``device`` or the CPU, in its master dtype), as verl's
    ``FSDPEngine._build_fsdp_module`` does.

    ``fsdp2``: ``fully_shard`` on every decoder layer, then on the root, over :func:`build_mesh` (a 2-D mesh
    gives HSDP: replicate over ``ddp``, shard over ``fsdp``); ``offload_policy`` -> ``CPUOffloadPolicy`` (CUDA
    only); ``min_num_params`` is ignored, as verl's ``apply_fsdp2`` ignores it (rule FC706 warns). ``fsdp``:
    ``FullyShardedDataParallel`` with :func:`fsdp1_wrap_policy`, ``device_id=device`` (FSDP1 needs it explicitly
    on the CPU) and verl's ``get_sharding_strategy``:
    ``FULL_SHARD``/``SHARD_GRAD_OP`` on a 1-D mesh, ``HYBRID_SHARD``/``_HYBRID_SHARD_ZERO2`` on a 2-D one
    (the second of each pair when not resharding after forward).

    Args:
        wrap_classes: ``wrap_policy.transformer_layer_cls_to_wrap`` (``None``: ``_no_split_modules``).
        fsdp_size: ``fsdp_config.fsdp_size`` (-1: shard over all ranks).
        offload_policy: ``fsdp_config.offload_policy`` (FSDP2 ``CPUOffloadPolicy``).
        min_num_params: ``wrap_policy.min_num_params``, a number of parameters (elements); > 0: FSDP1 wraps by
            size instead of by layer class (``wrap_classes`` is then not read, as in verl; with LoRA,
            :func:`check_fsdp1_units` raises ConfigError for a unit mixing adapters and frozen weights); FSDP2
            ignores it.
        wrap_key: where ``wrap_policy`` is in the config (``engine.wrap_policy`` for SFT), named in errors.
        forward_prefetch: ``fsdp_config.forward_prefetch``: issue the next unit's all-gather before the current
            unit's forward compute (FSDP1's ``forward_prefetch``; FSDP2: each decoder-layer unit prefetches the
            next one, ``set_modules_to_forward_prefetch``, depth 1 as in verl's ``apply_fsdp2``). It changes the
            overlap, not a number.

    Returns:
        The sharded module (FSDP2: ``model`` itself, now an ``FSDPModule``; FSDP1: the wrapper).

    Raises:
        ConfigError: wrap classes that do not resolve.
        ValueError: a strategy other than fsdp/fsdp2, an ``fsdp_size`` that builds no mesh, ``offload_policy``
            without an accelerator or under FSDP1: a config the schema and the rules refuse (FC803, FC301,
            FC704) cannot reach here.
    """
    by_size = strategy == "fsdp" and min_num_params > 0  # verl's FSDP1 size policy replaces the class one
    layers = (
        set() if by_size else decoder_layer_classes(model, wrap_classes, f"{wrap_key}.transformer_layer_cls_to_wrap")
    )
    if offload_policy and (device.type == "cpu" or strategy != "fsdp2"):  # rule FC704 refuses it (both trees)
        raise ValueError(f"offload_policy needs strategy fsdp2 on an accelerator, got {strategy} on {device.type}")
    mesh = build_mesh(device, fsdp_size)
    if strategy == "fsdp2":
        from torch.distributed.fsdp import CPUOffloadPolicy, MixedPrecisionPolicy, OffloadPolicy, fully_shard

        mp = MixedPrecisionPolicy(param_dtype=precision.param, reduce_dtype=precision.reduce, cast_forward_inputs=True)
        kw = dict(
            mesh=mesh,
            mp_policy=mp,
            reshard_after_forward=reshard_after_forward,
            offload_policy=CPUOffloadPolicy(pin_memory=True) if offload_policy else OffloadPolicy(),
        )
        units = [m for m in list(model.modules()) if type(m) in layers]
        for module in units:
            fully_shard(module, **kw)
        fully_shard(model, **kw)
        if forward_prefetch:
            for unit, nxt in zip(units, units[1:], strict=False):
                unit.set_modules_to_forward_prefetch([nxt])  # type: ignore[operator]  # an FSDPModule now
        return model
    if strategy == "fsdp":
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        from torch.distributed.fsdp import MixedPrecision, ShardingStrategy

        lora = len({p.requires_grad for p in model.parameters()}) == 2  # trainable adapters on a frozen base
        policy = fsdp1_wrap_policy(layers, min_num_params, lora=lora)
        if lora and by_size:
            check_fsdp1_units(model, policy, min_num_params, f"{wrap_key}.min_num_params")
        mp1 = MixedPrecision(param_dtype=precision.param, reduce_dtype=precision.reduce, buffer_dtype=precision.buffer)
        if mesh.ndim == 1:
            sharding = ShardingStrategy.FULL_SHARD if reshard_after_forward else ShardingStrategy.SHARD_GRAD_OP
        elif mesh.shape[1] == 1:  # FSDP1 turns this into NO_SHARD without the cross-replica all-reduce
            raise ValueError("strategy fsdp over one-rank shard groups never all-reduces gradients (rule FC364)")
        else:
            sharding = ShardingStrategy.HYBRID_SHARD if reshard_after_forward else ShardingStrategy._HYBRID_SHARD_ZERO2
        return FSDP(
            model,
            auto_wrap_policy=policy,
            mixed_precision=mp1,
            sharding_strategy=sharding,
            device_id=device,
            device_mesh=mesh,
            sync_module_states=False,
            forward_prefetch=forward_prefetch,
            use_orig_params=False,
        )
    raise ValueError(f"strategy {strategy!r} is not an FSDP engine (the schema's literal; rule FC803 under native)")


def shard_from_config(
    model: nn.Module, strategy: str, fsdp_cfg: FSDPConfig, section: str, *, device: torch.device
) -> nn.Module:
    """:func:`shard_model` with the settings of ``<section>.fsdp_config`` (``section`` is
    ``actor_rollout_ref.actor`` or ``actor_rollout_ref.ref``): mixed precision, ``reshard_after_forward``,
    ``wrap_policy.transformer_layer_cls_to_wrap``, ``wrap_policy.min_num_params``, ``fsdp_size``,
    ``offload_policy``, ``forward_prefetch``. ``param_offload``/``optimizer_offload`` are not read: the native
    loop does not implement them (fsdpcfg/native/support.py; rule FC802 refuses them before launch).

    Raises:
        ConfigError: everything :func:`shard_model` refuses.
    """
    wrap = fsdp_cfg.wrap_policy
    return shard_model(
        model,
        strategy,
        Precision.from_fsdp_config(fsdp_cfg),
        device=device,
        reshard_after_forward=fsdp_cfg.reshard_after_forward,
        wrap_classes=wrap.transformer_layer_cls_to_wrap,
        fsdp_size=fsdp_cfg.fsdp_size,
        offload_policy=fsdp_cfg.offload_policy,
        min_num_params=wrap.min_num_params,
        forward_prefetch=fsdp_cfg.forward_prefetch,
        wrap_key=f"{section}.fsdp_config.wrap_policy",
    )


def is_fsdp1(module: nn.Module) -> TypeGuard[FullyShardedDataParallel]:
    """True for a ``FullyShardedDataParallel`` wrapper."""
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

    return isinstance(module, FSDP)


def clean_name(name: str) -> str:
    """Strip FSDP1/compile wrapper prefixes: ``_fsdp_wrapped_module.model.layers.0...`` -> ``model.layers.0...``."""
    for p in _FSDP1_PREFIXES:
        name = name.replace(p, "")
    return name


def gather_full(t: torch.Tensor, chunk_megabytes: float = 4.0) -> torch.Tensor:
    """Return the full (unsharded) value of ``t`` as a new tensor of ``t.shape``, all ranks calling together.

    An FSDP2 parameter (a DTensor sharded on dim 0 of a 1-D mesh, evenly) is gathered straight into one
    preallocated output, ``chunk_megabytes`` of rows at a time, so the peak extra memory is the full tensor plus
    one chunk. ``DTensor.full_tensor()`` (the fallback for other layouts) needs about twice the full tensor on
    gloo, which gathers into a temporary buffer and copies out. A plain tensor is cloned.
    """
    from torch.distributed.tensor import DTensor

    if not isinstance(t, DTensor):
        return t.clone()
    mesh, placements = t.device_mesh, t.placements
    world = mesh.size()
    if mesh.ndim != 1 or len(placements) != 1 or not placements[0].is_shard(0) or t.shape[0] % world:
        return t.full_tensor()
    local = t.to_local()
    rows = t.shape[0] // world
    if tuple(local.shape) != (rows, *t.shape[1:]):
        return t.full_tensor()
    local = local.contiguous()
    out = torch.empty(t.shape, dtype=local.dtype, device=local.device)
    row_bytes = max(1, local[:1].numel() * local.element_size())
    step = max(1, int(chunk_megabytes * 2**20) // (row_bytes * world))
    group = mesh.get_group()
    for r in range(0, rows, step):
        e = min(rows, r + step)
        dist.all_gather([out[i * rows + r : i * rows + e] for i in range(world)], local[r:e], group=group)
    return out


def iter_full_params(module: nn.Module) -> Iterator[tuple[str, torch.Tensor]]:
    """Yield ``(hf_name, full_tensor)`` for every parameter and persistent buffer, one at a time.

    Every rank must call this together (each FSDP2 DTensor is gathered once, as it is reached, by
    :func:`gather_full`; FSDP1 gathers everything under ``summon_full_params(writeback=False)``, the
    configuration that works on the CPU). Tied parameters appear once, under their first name. Tensors are
    detached copies on the parameters' device, in the master dtype.
    """
    if is_fsdp1(module):
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

        with FSDP.summon_full_params(module, writeback=False, rank0_only=False, recurse=True):
            for name, p in module.named_parameters():
                yield clean_name(name), p.detach().clone()
        for name, b in _persistent_buffers(module):
            yield clean_name(name), b.detach().clone()
        return
    for name, p in module.named_parameters():
        yield clean_name(name), gather_full(p.detach())
    for name, b in _persistent_buffers(module):
        yield clean_name(name), gather_full(b.detach())


def _persistent_buffers(module: nn.Module) -> Iterator[tuple[str, torch.Tensor]]:
    for mod_name, mod in module.named_modules():
        skip: set[str] = getattr(mod, "_non_persistent_buffers_set", set())
        for bname, b in mod.named_buffers(recurse=False):
            if bname not in skip and b is not None:
                yield (f"{mod_name}.{bname}" if mod_name else bname), b


def bucketed(
    pairs: Iterator[tuple[str, torch.Tensor]], bucket_megabytes: float
) -> Iterator[list[tuple[str, torch.Tensor]]]:
    """Group a stream of ``(name, tensor)`` pairs into lists of at most ``bucket_megabytes`` MiB each (a single
    tensor larger than the limit forms a bucket of its own)."""
    limit = bucket_megabytes * 2**20
    bucket: list[tuple[str, torch.Tensor]] = []
    size = 0
    for name, t in pairs:
        nbytes = t.numel() * t.element_size()
        if bucket and size + nbytes > limit:
            yield bucket
            bucket, size = [], 0
        bucket.append((name, t))
        size += nbytes
    if bucket:
        yield bucket


def drain(buckets: Iterable[list[tuple[str, torch.Tensor]]]) -> Iterator[tuple[str, torch.Tensor]]:
    """Yield the ``(name, tensor)`` pairs of each bucket, taking each out of its bucket as it goes.

    The consumer's side of :func:`bucketed`: a loaded tensor is freed as soon as the consumer drops it, instead
    of the whole previous bucket staying alive (through a loop variable) while the engine gathers the next one.
    The consumer should ``del`` its loop variable after loading, since the next bucket is gathered before the
    variable is rebound.
    """
    for bucket in buckets:
        bucket.reverse()
        while bucket:
            yield bucket.pop()
        del bucket


def gradient_sync(module: nn.Module, enabled: bool):
    """Context manager: skip the gradient reduce-scatter (accumulate locally) when ``enabled`` is false."""
    import contextlib

    if enabled:
        return contextlib.nullcontext()
    if is_fsdp1(module):
        return module.no_sync()

    @contextlib.contextmanager
    def _no_sync():
        module.set_requires_gradient_sync(False)
        try:
            yield
        finally:
            module.set_requires_gradient_sync(True)

    return _no_sync()


def clip_grad_norm(module: nn.Module, max_norm: float) -> float:
    """Clip the global gradient norm to ``max_norm`` and return the norm before clipping (all ranks agree)."""
    from torch.distributed.tensor import DTensor

    if is_fsdp1(module):
        norm = module.clip_grad_norm_(max_norm)
    else:
        norm = torch.nn.utils.clip_grad_norm_([p for p in module.parameters() if p.grad is not None], max_norm)
    if isinstance(norm, DTensor):
        norm = norm.full_tensor()
    return float(norm)
