"""Shard a Hugging Face model with FSDP2 (``fully_shard``) or FSDP1 (``FullyShardedDataParallel``) and stream its
full weights back out in Hugging Face checkpoint names.

Mixed precision follows verl 0.9.1 (``verl/workers/engine/fsdp/transformer_impl.py``): parameters are kept in
``fsdp_config.model_dtype``; compute runs in ``fsdp_config.dtype`` unless ``fsdp_config.mixed_precision``
(``param_dtype``/``reduce_dtype``/``buffer_dtype``) overrides it; gradients are reduced in fp32 by default.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import torch
import torch.distributed as dist
from torch import nn

from fsdpcfg.errors import ConfigError
from fsdpcfg.train.model import to_dtype

_FSDP1_PREFIXES = ("_fsdp_wrapped_module.", "_checkpoint_wrapped_module.", "_orig_mod.")


@dataclass
class Precision:
    """Dtypes of one sharded model: ``param`` (compute), ``reduce`` (gradient reduction), ``buffer``."""

    param: torch.dtype
    reduce: torch.dtype
    buffer: torch.dtype

    @classmethod
    def from_fsdp_config(cls, fsdp_cfg: dict, section: str) -> "Precision":
        """Read ``<section>.fsdp_config``: ``mixed_precision`` when set, else ``dtype`` for compute, fp32 reduce.

        Raises:
            ConfigError: an unknown dtype name.
        """
        mp = fsdp_cfg["mixed_precision"]
        if mp:
            unknown = set(mp) - {"param_dtype", "reduce_dtype", "buffer_dtype"}
            if unknown:
                raise ConfigError(f"unknown entries {sorted(unknown)}; allowed: param_dtype, reduce_dtype, buffer_dtype",
                                  key=f"{section}.fsdp_config.mixed_precision")
            return cls(param=to_dtype(mp.get("param_dtype", "bf16"), f"{section}.fsdp_config.mixed_precision"),
                       reduce=to_dtype(mp.get("reduce_dtype", "fp32"), f"{section}.fsdp_config.mixed_precision"),
                       buffer=to_dtype(mp.get("buffer_dtype", "fp32"), f"{section}.fsdp_config.mixed_precision"))
        return cls(param=to_dtype(fsdp_cfg["dtype"], f"{section}.fsdp_config.dtype"), reduce=torch.float32,
                   buffer=torch.float32)


def decoder_layer_classes(model: nn.Module) -> set[type]:
    """The module classes to shard one by one: the model's ``_no_split_modules`` (its decoder layers).

    Raises:
        ConfigError: the model declares none, or none of them occurs in it.
    """
    names = set(getattr(model, "_no_split_modules", None) or [])
    classes = {type(m) for m in model.modules() if type(m).__name__ in names}
    if not classes:
        raise ConfigError(f"cannot find the decoder layers of {type(model).__name__} (_no_split_modules={sorted(names)})",
                          key="actor_rollout_ref.actor.strategy",
                          fix="this model cannot be auto-wrapped by the native launcher; try launcher=verl")
    return classes


def shard_model(model: nn.Module, strategy: str, precision: Precision, *, device: torch.device,
                reshard_after_forward: bool = True) -> nn.Module:
    """Shard ``model`` over all ranks (it must already be on ``device`` or the CPU, in its master dtype).

    ``fsdp2``: ``fully_shard`` on every decoder layer, then on the root, over a 1-D mesh of all ranks.
    ``fsdp``: ``FullyShardedDataParallel`` with a transformer-layer auto-wrap policy, ``device_id=device``
    (FSDP1 needs it explicitly on the CPU) and ``FULL_SHARD`` (``SHARD_GRAD_OP`` when not resharding).

    Returns:
        The sharded module (FSDP2: ``model`` itself, now an ``FSDPModule``; FSDP1: the wrapper).

    Raises:
        ConfigError: an unknown strategy.
    """
    layers = decoder_layer_classes(model)
    if strategy == "fsdp2":
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

        mesh = init_device_mesh(device.type, (dist.get_world_size(),))
        mp = MixedPrecisionPolicy(param_dtype=precision.param, reduce_dtype=precision.reduce, cast_forward_inputs=True)
        for module in list(model.modules()):
            if type(module) in layers:
                fully_shard(module, mesh=mesh, mp_policy=mp, reshard_after_forward=reshard_after_forward)
        fully_shard(model, mesh=mesh, mp_policy=mp, reshard_after_forward=reshard_after_forward)
        return model
    if strategy == "fsdp":
        import functools

        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
        from torch.distributed.fsdp import MixedPrecision, ShardingStrategy
        from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy

        policy = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls=layers)
        mp = MixedPrecision(param_dtype=precision.param, reduce_dtype=precision.reduce, buffer_dtype=precision.buffer)
        sharding = ShardingStrategy.FULL_SHARD if reshard_after_forward else ShardingStrategy.SHARD_GRAD_OP
        return FSDP(model, auto_wrap_policy=policy, mixed_precision=mp, sharding_strategy=sharding,
                    device_id=device, sync_module_states=False, use_orig_params=False)
    raise ConfigError(f"unknown strategy {strategy!r}; allowed: fsdp, fsdp2", key="actor_rollout_ref.actor.strategy",
                      value=strategy, fix="set actor_rollout_ref.actor.strategy=fsdp2 (or fsdp)")


def is_fsdp1(module: nn.Module) -> bool:
    """True for a ``FullyShardedDataParallel`` wrapper."""
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

    return isinstance(module, FSDP)


def clean_name(name: str) -> str:
    """Strip FSDP1/compile wrapper prefixes: ``_fsdp_wrapped_module.model.layers.0...`` -> ``model.layers.0...``."""
    for p in _FSDP1_PREFIXES:
        name = name.replace(p, "")
    return name


def iter_full_params(module: nn.Module) -> Iterator[tuple[str, torch.Tensor]]:
    """Yield ``(hf_name, full_tensor)`` for every parameter and persistent buffer, one at a time.

    Every rank must call this together (each FSDP2 DTensor is all-gathered with ``full_tensor()`` once, as it
    is reached; FSDP1 gathers everything under ``summon_full_params(writeback=False)``, the configuration that
    works on the CPU). Tied parameters appear once, under their first name. Tensors are detached copies on the
    parameters' device, in the master dtype.
    """
    from torch.distributed.tensor import DTensor

    if is_fsdp1(module):
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

        with FSDP.summon_full_params(module, writeback=False, rank0_only=False, recurse=True):
            for name, p in module.named_parameters():
                yield clean_name(name), p.detach().clone()
        for name, b in _persistent_buffers(module):
            yield clean_name(name), b.detach().clone()
        return
    for name, p in module.named_parameters():
        t = p.detach()
        yield clean_name(name), (t.full_tensor() if isinstance(t, DTensor) else t.clone())
    for name, b in _persistent_buffers(module):
        t = b.detach()
        yield clean_name(name), (t.full_tensor() if isinstance(t, DTensor) else t.clone())


def _persistent_buffers(module: nn.Module) -> Iterator[tuple[str, torch.Tensor]]:
    for mod_name, mod in module.named_modules():
        skip = getattr(mod, "_non_persistent_buffers_set", set())
        for bname, b in mod.named_buffers(recurse=False):
            if bname not in skip and b is not None:
                yield (f"{mod_name}.{bname}" if mod_name else bname), b


def bucketed(pairs: Iterator[tuple[str, torch.Tensor]], bucket_megabytes: float
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
