"""Collect the weights a LoRA actor sends to its rollout, in the two forms verl sends them.

- :func:`iter_base_params`: every base parameter and persistent buffer under its Hugging Face name (no
  ``base_layer`` segment, no ``lora_`` parameter), one full tensor at a time: the first synchronisation, before
  the rollout holds any base weights.
- :func:`iter_adapter_params`: the weights of one named adapter under PEFT's adapter-file keys: every later
  synchronisation (the base is frozen, so only the adapter changes). ``layered=True`` gathers one layer block
  (one FSDP unit) at a time, blocks found by name prefix (``layers.`` -> ``...layers.0``), then the adapter
  weights outside the blocks one module at a time, so the peak memory is one block, never the whole model.

Every rank must call these together under FSDP (each yields the same names in the same order on every rank);
on a single process the module is a plain ``PeftModel``. Tensors are detached full copies in the master dtype.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
from torch import nn

from fsdpcfg.errors import ConfigError
from fsdpcfg.train.engine.fsdp import is_fsdp1, iter_full_params
from fsdpcfg.train.lora import names

Pair = tuple[str, torch.Tensor]


def _full(t: torch.Tensor) -> torch.Tensor:
    from torch.distributed.tensor import DTensor

    t = t.detach()
    return t.full_tensor() if isinstance(t, DTensor) else t.clone()


def iter_base_params(module: nn.Module) -> Iterator[Pair]:
    """Yield ``(hf_name, full_tensor)`` for every base parameter and persistent buffer of a PEFT model (plain,
    FSDP1-wrapped or FSDP2-sharded): ``model.layers.0.self_attn.q_proj.weight``, never ``base_layer`` or
    ``lora_`` names. Tied weights appear once."""
    for name, t in iter_full_params(module):
        hf = names.base_name(name)
        if hf is not None:
            yield hf, t


def _adapter_pairs(pairs, adapter_name: str, prefix: str = "") -> Iterator[Pair]:
    for name, p in pairs:
        key = names.adapter_key(f"{prefix}{name}", adapter_name)
        if key is not None:
            yield key, _full(p)


def _check_nonempty(n: int, adapter_name: str, settings_key: str, detail: str) -> None:
    if n == 0:
        raise ConfigError(
            f"collected no LoRA parameters of adapter {adapter_name!r} ({detail})",
            key=settings_key,
            fix="check the adapter name and target_modules; for a model whose blocks are not named "
            "`layers`, set fsdpcfg.lora_layer_prefixes (e.g. [transformer_blocks.])",
        )


def iter_adapter_params(
    module: nn.Module, adapter_name: str, *, layered: bool = False, layer_prefixes: tuple[str, ...] = ("layers.",)
) -> Iterator[Pair]:
    """Yield ``(adapter_key, full_tensor)`` for every weight of adapter ``adapter_name``.

    Keys are PEFT's adapter-file keys (``base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight``).

    Raises:
        ConfigError: nothing was collected (names the adapter and, when layered, the layer prefixes tried), or
            layered mode finds no block under ``layer_prefixes``.
    """
    if layered:
        yield from _iter_layered(module, adapter_name, tuple(layer_prefixes))
        return
    count = 0
    if is_fsdp1(module):
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

        with FSDP.summon_full_params(module, writeback=False, rank0_only=False, recurse=True):
            for pair in _adapter_pairs(module.named_parameters(), adapter_name):
                count += 1
                yield pair
    else:
        for pair in _adapter_pairs(module.named_parameters(), adapter_name):
            count += 1
            yield pair
    _check_nonempty(count, adapter_name, "actor_rollout_ref.model.target_modules", "full gather")


def find_layer_blocks(module: nn.Module, layer_prefixes: tuple[str, ...]) -> list[tuple[str, nn.Module]]:
    """The layer blocks of ``module``: ``(qualified name, module)`` for each module whose wrapper-free name ends
    with a prefix and an index (``...layers.3``), in model order. Under FSDP1 the FSDP wrapper of each block is
    returned (the unit to summon); nested matches inside a block are skipped.

    Raises:
        ConfigError: no module matches (names the prefixes tried and the numbered containers that exist).
    """
    pattern = names.layer_index_pattern(layer_prefixes)
    fsdp1 = is_fsdp1(module)
    if fsdp1:
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    blocks: list[tuple[str, nn.Module]] = []
    seen: set[str] = set()
    for qname, m in module.named_modules():
        clean = names.strip_wrappers(qname)
        if not pattern.search(clean) or clean in seen:
            continue
        if fsdp1 and not isinstance(m, FSDP):
            continue
        if any(clean.startswith(s + ".") for s in seen):
            continue
        seen.add(clean)
        blocks.append((qname, m))
    if not blocks:
        numbered = sorted(
            {
                names.strip_wrappers(q).rsplit(".", 1)[0].rsplit(".", 1)[-1] + "."
                for q, _ in module.named_modules()
                if q.rsplit(".", 1)[-1].isdigit()
            }
        )
        raise ConfigError(
            f"no layer block found: no module name ends with one of the layer prefixes tried "
            f"{list(layer_prefixes)} and an index; numbered containers in this model: "
            f"{numbered or 'none'}",
            key="fsdpcfg.lora_layer_prefixes",
            value=list(layer_prefixes),
            fix=f"set fsdpcfg.lora_layer_prefixes to the model's block container "
            f"(e.g. {numbered[:1] or ['transformer_blocks.']})",
        )
    return blocks


def _iter_layered(module: nn.Module, adapter_name: str, layer_prefixes: tuple[str, ...]) -> Iterator[Pair]:
    fsdp1 = is_fsdp1(module)
    blocks = find_layer_blocks(module, layer_prefixes)
    count = 0
    done: set[str] = set()
    for qname, block in blocks:
        with _summon(block, fsdp1):
            for pair in _adapter_pairs(block.named_parameters(), adapter_name, prefix=qname + "."):
                count += 1
                yield pair
        done.add(names.strip_wrappers(qname))
    # adapter weights outside the blocks (an adapted lm_head, say), one module (FSDP1: one unit) at a time
    for qname, m in module.named_modules():
        clean = names.strip_wrappers(qname)
        if any(clean == d or clean.startswith(d + ".") for d in done):
            continue
        if fsdp1:
            from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

            if qname == "" or not isinstance(m, FSDP):
                continue  # outside a unit, LoRA weights live in their own units (wrap policy); the root has none
            with _summon(m, True):
                # a unit's own parameters only: nested units are visited on their own
                own = [(n, p) for n, p in m.named_parameters() if n.split(".").count("_fsdp_wrapped_module") <= 1]
                got = list(_adapter_pairs(own, adapter_name, prefix=qname + "."))
        else:
            got = list(
                _adapter_pairs(m.named_parameters(recurse=False), adapter_name, prefix=(qname + ".") if qname else "")
            )
        for pair in got:
            count += 1
            yield pair
    _check_nonempty(
        count,
        adapter_name,
        "fsdpcfg.lora_layer_prefixes",
        f"layered gather over {len(blocks)} blocks; layer prefixes tried: {list(layer_prefixes)}",
    )


@contextlib.contextmanager
def _summon(unit: nn.Module, fsdp1: bool):
    """FSDP1: gather this unit's parameters (and its nested units') for the duration; otherwise nothing."""
    if not fsdp1:
        yield
        return
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

    with FSDP.summon_full_params(unit, writeback=False, rank0_only=False, recurse=True):
        yield


def iter_merged_params(module: nn.Module, adapter_name: str) -> Iterator[Pair]:
    """Yield ``(hf_name, full_tensor)`` of the merged model, ``W + (alpha / r) B A`` for every adapted linear
    weight and the base tensor elsewhere: a plain Hugging Face checkpoint that ``from_pretrained`` loads without
    PEFT. Collective: the adapter (small) is gathered first, then the base streams one tensor at a time.

    Raises:
        ConfigError: the adapter has no weights; NotImplementedError: an adapter that is not LoRA, or an adapted
            layer that is not a linear ``lora_A``/``lora_B`` pair (embedding LoRA, DoRA), cannot be merged here.
    """
    from peft import LoraConfig

    from fsdpcfg.train.lora.setup import peft_inner

    cfg = peft_inner(module).peft_config[adapter_name]
    if not isinstance(cfg, LoraConfig):
        raise NotImplementedError(f"adapter {adapter_name!r} is a {type(cfg).__name__}, not LoRA: cannot merge it")
    scale = float(cfg.lora_alpha) / float(cfg.r)
    adapter = dict(iter_adapter_params(module, adapter_name))
    by_module: dict[str, dict[str, torch.Tensor]] = {}
    for key, t in adapter.items():
        parts = key.split(".")
        i = next(j for j, p in enumerate(parts) if p.startswith("lora_"))
        if parts[i] not in ("lora_A", "lora_B") or parts[-1] != "weight":
            raise NotImplementedError(f"cannot merge adapter weight {key!r} into a Hugging Face checkpoint")
        mod = names.base_name(".".join(parts[:i]))
        assert mod is not None  # the path before lora_A/lora_B is the adapted module's, never an adapter name
        by_module.setdefault(mod, {})[parts[i]] = t
    for name, t in iter_base_params(module):
        ab = by_module.get(name[: -len(".weight")]) if name.endswith(".weight") else None
        if ab is not None:
            t = (t.float() + scale * (ab["lora_B"].float() @ ab["lora_A"].float())).to(t.dtype)
        yield name, t
