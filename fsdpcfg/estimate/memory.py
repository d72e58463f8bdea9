"""Per-rank peak memory of a GRPO/PPO run, estimated from the resolved config and the model's ``config.json``
(pure Python: ``fsdpcfg check`` shows it without importing torch).

    from fsdpcfg.estimate.memory import estimate_memory
    est = estimate_memory(cfg)          # cfg: the resolved config (nested dicts, verl key names)
    print(est.describe())               # components, phases, the device's capacity, what would help most

Components (bytes per rank; P parameters, S the FSDP shard group size: ``fsdp_size`` when it is between 1 and
the world size, else the world size):

- actor parameters ``P x model_dtype / S``; gradients ``P x model_dtype / S`` (during the update only, the loop
  frees them with ``zero_grad(set_to_none=True)``); AdamW state ``2 x P x model_dtype / S`` (two states);
- the FSDP working set: the root unit (embedding, final norm, untied LM head) gathered in the compute dtype from
  forward to the end of backward plus its unsharded gradient, and two decoder layers (the one computing, the one
  prefetched) with one layer's unsharded gradients;
- activations of one micro-batch of ``micro x (prompt + response)`` tokens: per layer the tensors saved for
  backward (:attr:`fsdpcfg.estimate.param_count.ParamCounts.activation_widths`); with gradient checkpointing only
  each layer's input plus one layer recomputed;
- the logits peak: ``tokens x vocab`` in the compute dtype, its fp32 copy, the fp32 log-softmax, and in backward
  their fp32 gradients (the native engine scores only the ``response + 1`` last positions; verl scores every
  token);
- the reference model ``P x ref model_dtype / S`` and its working set during its forward;
- the rollout: ``hf`` keeps an unsharded replica (``P x rollout.dtype``) and a KV cache of its sequences
  (``sequences x (prompt + response) x kv elements per token``); ``vllm``/``sglang`` reserve
  ``gpu_memory_utilization x device memory`` while generating, whose KV-cache capacity is compared with
  ``n x (prompt + response)`` tokens per prompt;
- the native weight sync: one bucket (``fsdpcfg.update_weights_bucket_megabytes``) plus the largest tensor.

The peak is the largest phase total (build, rollout, weight sync, log-prob, update). Offload settings remove
their part from the phases verl offloads it in. On the CPU every rank's memory is host memory: the total over
the ranks of one node is compared with the machine's RAM. Approximations: attention is memory-efficient (no
``seq x seq`` score matrix), sequences are padded to their maximum lengths, allocator and library overheads
(communication buffers, tokenizer, CUDA context) are not counted.
"""

from __future__ import annotations

import copy
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fsdpcfg.estimate.param_count import ParamCounts, UnsupportedArchitecture, count_parameters
from fsdpcfg.native import backends


def _engine_rollout(name: Any) -> bool:
    """True unless ``name`` is a registered rollout backend that runs inside the training process
    (:attr:`fsdpcfg.native.backends.RolloutBackend.engine`): an engine reserves a share of the device."""
    backend = backends.ROLLOUTS.get(name)
    return backend is None or backend.engine


GIB = 2**30
MIB = 2**20
_BYTES = {
    "fp32": 4,
    "float32": 4,
    "float": 4,
    "bf16": 2,
    "bfloat16": 2,
    "fp16": 2,
    "float16": 2,
    "half": 2,
    "fp64": 8,
    "float64": 8,
}
#: usable memory of common accelerators (GiB, as the CUDA runtime reports their total), by a lower-case
#: substring of the name ``nvidia-smi`` shows; the first match wins, so longer names come first.
KNOWN_GPUS: tuple[tuple[str, float], ...] = (
    ("h200", 139.8),
    ("b200", 178.4),
    ("h100 nvl", 93.1),
    ("h100", 79.1),
    ("h800", 79.1),
    ("a100-sxm4-80gb", 79.2),
    ("a100 80gb", 79.2),
    ("a100-pcie-80gb", 79.2),
    ("a100", 39.4),
    ("a800", 79.2),
    ("l40s", 44.5),
    ("l40", 44.5),
    ("a6000", 47.5),
    ("a10g", 22.0),
    ("a10", 22.0),
    ("l4", 22.0),
    ("rtx 4090", 23.6),
    ("rtx 3090", 23.7),
    ("v100-sxm2-32gb", 31.7),
    ("v100 32gb", 31.7),
    ("v100", 15.8),
    ("t4", 14.6),
    ("mi300x", 191.5),
)


def _bytes(name: Any, default: int = 4) -> int:
    return _BYTES.get(str(name).lower(), default) if name is not None else default


def _get(cfg: dict, key: str, if_null: Any = None) -> Any:
    """The value of dotted ``key`` in ``cfg``; ``if_null`` where it is null (what a null value means for the
    estimate, e.g. an unset micro-batch size counts as 1). A key ``cfg`` lacks reads as its default in the
    default tree (:mod:`fsdpcfg.compose.defaults`, the one home of defaults): a verl config file has no
    ``fsdpcfg`` section."""
    from fsdpcfg import keypath

    node = keypath.get(cfg, key, _ABSENT)
    if node is _ABSENT:
        from fsdpcfg.compose import defaults

        node = defaults.tree().get(key)
    return if_null if node is None else node


_ABSENT = object()


@dataclass
class MemoryEstimate:
    """The estimate for one rank.

    Attributes:
        params: the parameter counts the estimate uses.
        components: ``{name: bytes}`` of every component (see the module docstring).
        phases: ``{phase: bytes}``: what is alive at once in each phase; ``peak_bytes`` is their maximum.
        device_bytes: the memory one rank may use (declared, detected, or ``None`` when unknown);
            device_source says where it came from. On the CPU: the machine's RAM divided by the ranks per node.
        kv: KV-cache capacity against demand (tokens), or ``None`` when the rollout has no fixed pool.
        suggestions: ``[(setting, bytes saved at the peak)]``, most saving first.
        notes: assumptions that matter for this config.
    """

    params: ParamCounts
    components: dict[str, int]
    phases: dict[str, int]
    device_bytes: int | None = None
    device_source: str = ""
    kv: dict[str, int] | None = None
    suggestions: list[tuple[str, int]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def peak_bytes(self) -> int:
        """The per-rank peak, bytes."""
        return max(self.phases.values())

    @property
    def peak_phase(self) -> str:
        """The phase that sets the peak."""
        return max(self.phases, key=lambda phase: self.phases[phase])

    def describe(self) -> str:
        """Lines for the DERIVED NUMBERS section of ``fsdpcfg check`` (GiB, per rank)."""
        p = self.params
        lines = [
            f"memory (per rank, estimate): peak {_g(self.peak_bytes)} in phase {self.peak_phase}"
            + (
                f" of {_g(self.device_bytes)} ({self.device_source}): {self.peak_bytes / self.device_bytes:.0%}"
                if self.device_bytes
                else " (device memory unknown: set fsdpcfg.device_memory_gb)"
            )
        ]
        lines.append(
            f"  parameters: {p.total / 1e6:,.1f}M ({p.model_type}, from config.json; embedding "
            f"{p.embedding / 1e6:,.1f}M{', tied' if not p.lm_head else ''}, {len(p.layers)} layers)"
        )
        lines.append("  components: " + ", ".join(f"{k} {_g(v)}" for k, v in self.components.items() if v))
        lines.append("  phases: " + ", ".join(f"{k} {_g(v)}" for k, v in self.phases.items()))
        if self.kv:
            fits = self.kv["capacity_tokens"] >= self.kv["demand_tokens"]
            lines.append(
                f"  kv cache: room for {self.kv['capacity_tokens']:,} tokens per rollout replica, "
                f"{self.kv['demand_tokens']:,} wanted ({self.kv['sequences']} sequences x "
                f"{self.kv['seq_len']} tokens){'' if fits else ': generation runs in waves'}"
            )
        if self.device_bytes and self.peak_bytes > self.device_bytes:
            lines.append(f"  does not fit: {_g(self.peak_bytes - self.device_bytes)} over")
        for s, saved in self.suggestions[:3]:
            lines.append(f"  would help: {s} (-{_g(saved)})")
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


def _g(n: int | float | None) -> str:
    if n is None:
        return "?"
    return f"{n / GIB:.2f} GiB" if n >= GIB / 10 else f"{n / MIB:.1f} MiB"


def read_model_config(cfg: dict) -> dict | None:
    """``config.json`` of ``actor_rollout_ref.model.path`` (a local folder or a cached hub id) with
    ``model.override_config`` applied, or ``None`` when it cannot be read here."""
    from fsdpcfg.model_files import inspect_model

    path = _get(cfg, "actor_rollout_ref.model.path")
    info = inspect_model(path, _get(cfg, "actor_rollout_ref.model.tokenizer_path"))
    config = info.config if info is not None else None  # None: model.path not set
    if config is None and isinstance(path, str) and path.count("/") == 1:  # a hub id: the copy shipped with fsdpcfg
        shipped = Path(__file__).resolve().parents[1] / "data" / "model_configs"
        for d in (path.replace("/", "__"), path.replace("/", "__") + "__resaved"):
            try:
                config = json.loads((shipped / d / "config.json").read_text())
                break
            except (OSError, ValueError):
                continue
    if not isinstance(config, dict):
        return None
    return {**config, **(_get(cfg, "actor_rollout_ref.model.override_config") or {})}


def device_memory(cfg: dict) -> tuple[int | None, str]:
    """Memory one rank may use, bytes, and where the number came from: ``fsdpcfg.device_memory_gb`` when set;
    on the CPU the RAM (``/proc/meminfo``) divided by ``trainer.n_gpus_per_node``; on CUDA the first GPU of this
    machine looked up in :data:`KNOWN_GPUS` (read from ``/proc/driver/nvidia``, no CUDA call); else unknown."""
    declared = _get(cfg, "fsdpcfg.device_memory_gb")
    if declared:
        return int(float(declared) * GIB), "fsdpcfg.device_memory_gb"
    if _get(cfg, "trainer.device") == "cpu":
        try:
            kib = next(
                int(line.split()[1])
                for line in Path("/proc/meminfo").read_text().splitlines()
                if line.startswith("MemTotal:")
            )
        except (OSError, StopIteration, ValueError):
            return None, "RAM unknown"
        nproc = int(_get(cfg, "trainer.n_gpus_per_node"))
        return kib * 1024 // nproc, f"this machine's {kib * 1024 / GIB:.1f} GiB RAM / {nproc} ranks"
    name = gpu_name()
    for sub, gib in KNOWN_GPUS:
        if name and sub in name.lower():
            return int(gib * GIB), f"{name} on this machine"
    return None, (f"{name}: not in the table" if name else "no GPU detected")


def gpu_name() -> str | None:
    """Model name of this machine's first NVIDIA GPU from ``/proc/driver/nvidia/gpus/*/information``."""
    root = Path("/proc/driver/nvidia/gpus")
    try:
        for d in sorted(root.iterdir()):
            for line in (d / "information").read_text().splitlines():
                if line.startswith("Model:"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        return None
    return None


def _shard(fsdp_size: int, world: int) -> int:
    from fsdpcfg.estimate.mesh import shard_group_size

    return shard_group_size(fsdp_size, world)


def estimate_memory(cfg: dict, model_config: dict | None = None, *, suggest: bool = True) -> MemoryEstimate:
    """Estimate the per-rank peak memory of the run ``cfg`` describes (see the module docstring).

    Args:
        cfg: the resolved config (nested dicts, verl key names plus ``fsdpcfg``).
        model_config: the parsed ``config.json``; read from ``actor_rollout_ref.model.path`` when ``None``.
        suggest: also rank the settings that would lower the peak most.

    Raises:
        ValueError: ``config.json`` cannot be read here, or its architecture has no parameter formula
            (:class:`fsdpcfg.estimate.param_count.UnsupportedArchitecture`).
    """
    mc = model_config if model_config is not None else read_model_config(cfg)
    if mc is None:
        raise ValueError(f"config.json of {_get(cfg, 'actor_rollout_ref.model.path')!r} cannot be read here")
    pc = count_parameters(mc)
    est = _estimate(cfg, pc, mc)
    est.device_bytes, est.device_source = device_memory(cfg)
    if suggest:
        est.suggestions = _suggestions(cfg, pc, mc, est.peak_bytes)
    return est


def _estimate(cfg: dict, pc: ParamCounts, mc: dict) -> MemoryEstimate:
    from fsdpcfg.schema.actor import fsdp_dtypes  # the schema is heavy; a plan of a config that passed has it

    a = "actor_rollout_ref.actor.fsdp_config."
    world = int(_get(cfg, "trainer.nnodes")) * int(_get(cfg, "trainer.n_gpus_per_node"))
    native = _get(cfg, "fsdpcfg.launcher") == "native"
    cpu = _get(cfg, "trainer.device") == "cpu"
    P, H, V, L = pc.total, pc.hidden_size, pc.vocab_size, len(pc.layers)
    S = _shard(int(_get(cfg, a + "fsdp_size")), world)
    pm = _bytes(_get(cfg, a + "model_dtype"))
    pcb = _bytes(fsdp_dtypes({k: _get(cfg, a + k) for k in ("mixed_precision", "dtype")})[0])
    lora = int(_get(cfg, "actor_rollout_ref.model.lora_rank")) > 0
    trainable = 0 if lora else P
    on_dev = not cpu  # offload moves state from the device to the host; on the CPU nothing leaves
    p_off = on_dev and bool(_get(cfg, a + "param_offload"))
    o_off = on_dev and bool(_get(cfg, a + "optimizer_offload"))
    policy = on_dev and bool(_get(cfg, a + "offload_policy"))
    prompt, resp = int(_get(cfg, "data.max_prompt_length")), int(_get(cfg, "data.max_response_length"))
    seq = prompt + resp
    micro = int(_get(cfg, "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu", if_null=1) or 1)
    tokens = (
        int(_get(cfg, "actor_rollout_ref.actor.ppo_max_token_len_per_gpu"))
        if _get(cfg, "actor_rollout_ref.actor.use_dynamic_bsz")
        else micro * seq
    )
    lp_micro = int(_get(cfg, "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu", if_null=micro) or micro)
    ckpt = bool(_get(cfg, "actor_rollout_ref.model.enable_gradient_checkpointing"))
    n = int(_get(cfg, "actor_rollout_ref.rollout.n"))
    seqs_rank = int(_get(cfg, "data.train_batch_size")) * n // max(world, 1)
    root = pc.embedding + pc.lm_head + pc.final_norm
    # -- resident state
    c: dict[str, int] = {}
    c["actor params"] = 0 if policy else P * pm // S
    c["gradients"] = 0 if policy else trainable * pm // S
    c["optimizer"] = 0 if policy else 2 * trainable * pm // S
    gathered = not (S == 1 and pcb == pm)
    c["fsdp working set"] = (root + 2 * pc.largest_layer) * pcb if gathered else 0
    # the root's unsharded gradient and one layer's; a tied embedding's backward also makes a dense vocab x hidden
    # gradient before adding it to the LM head's
    tied_extra = pc.embedding if not pc.lm_head else 0
    c["unsharded grads"] = ((root + pc.largest_layer + tied_extra) * pcb) if trainable and gathered else 0
    per_tok = sum(pc.activation_widths) * pcb
    act_full = tokens * per_tok
    act_ckpt = tokens * (L * H + max(pc.activation_widths, default=0)) * pcb
    c["activations"] = act_ckpt if ckpt else act_full
    # logits: the compute-dtype output, its fp32 copy (when the compute dtype is narrower), the fp32 log-softmax
    # and, in backward, the fp32 gradients of the log-softmax output and input
    logit_pos = micro * (resp + 1) if native else tokens
    lp_pos = lp_micro * (resp + 1) if native else lp_micro * seq
    fwd_b = (
        pcb
        + (4 if pcb != 4 else 0)
        + 4
        + (4 if float(_get(cfg, "actor_rollout_ref.rollout.temperature")) != 1.0 else 0)
    )
    ent = float(_get(cfg, "actor_rollout_ref.actor.entropy_coeff") or 0) != 0
    c["logits"] = logit_pos * V * (fwd_b + 8 + (8 if ent else 0))
    logits_nograd = lp_pos * V * fwd_b
    act_nograd = lp_micro * seq * (H * 2 + max(pc.activation_widths, default=0)) * pcb
    use_ref = bool(_get(cfg, "actor_rollout_ref.actor.use_kl_loss")) or bool(_get(cfg, "algorithm.use_kl_in_reward"))
    r = "actor_rollout_ref.ref.fsdp_config."
    ref_b = _bytes(_get(cfg, r + "model_dtype"))
    ref_S = _shard(int(_get(cfg, r + "fsdp_size")), world)
    ref_off = on_dev and bool(_get(cfg, r + "param_offload"))
    c["reference"] = P * ref_b // ref_S if use_ref else 0
    ref_cb = _bytes(fsdp_dtypes({k: _get(cfg, r + k) for k in ("mixed_precision", "dtype")})[0])
    ref_ws = (root + 2 * pc.largest_layer) * ref_cb if use_ref else 0
    # FSDP2 keeps a root unit gathered after a forward without backward: the reference model's root stays
    # gathered from its log-prob pass on (its reshard waits for a backward that never comes)
    ref_root = root * ref_cb if use_ref and ref_S > 1 and _get(cfg, "actor_rollout_ref.ref.strategy") == "fsdp2" else 0
    c["reference root (gathered)"] = ref_root
    # -- rollout
    rname = _get(cfg, "actor_rollout_ref.rollout.name")
    rb = _bytes(_get(cfg, "actor_rollout_ref.rollout.dtype"), 2)
    kv_tok = pc.kv_elements_per_token * rb
    kv_info = None
    dev_bytes, _ = device_memory(cfg)
    if not _engine_rollout(rname):  # a replica inside the training process (hf)
        c["rollout replica"] = P * rb
        c["kv cache"] = seqs_rank * seq * kv_tok
        gen_extra = seqs_rank * (prompt * (H * 4) * rb + V * 4 * 3)  # prefill hidden states, last-token logits
        rollout_mem = c["rollout replica"] + c["kv cache"] + gen_extra
    else:
        gmu = float(_get(cfg, "actor_rollout_ref.rollout.gpu_memory_utilization"))
        tp = int(_get(cfg, "actor_rollout_ref.rollout.tensor_model_parallel_size"))
        rollout_mem = int(gmu * dev_bytes) if dev_bytes else 0
        c["rollout reservation"] = rollout_mem
        if dev_bytes:
            nkv = int(mc.get("num_key_value_heads") or mc.get("num_attention_heads") or 1)
            split = 1 if pc.model_type.startswith("deepseek") else min(tp, nkv)
            room = max(0, rollout_mem - P * rb // tp)
            replicas = max(1, world // tp)
            want = math.ceil(int(_get(cfg, "data.train_batch_size")) * n / replicas)
            want = min(want, int(_get(cfg, "actor_rollout_ref.rollout.max_num_seqs")))
            kv_info = {
                "capacity_tokens": room // max(1, kv_tok // split),
                "demand_tokens": want * seq,
                "sequences": want,
                "seq_len": seq,
            }
    # -- phases
    state = (0 if p_off else c["actor params"]) + (0 if o_off else c["optimizer"])
    ref_res = 0 if ref_off else c["reference"]
    replica = c.get("rollout replica", 0)
    ph: dict[str, int] = {}
    if native:  # the native engine loads each model whole before sharding it
        ph["build"] = max(P * pm, c["actor params"] + P * ref_b * use_ref, c["actor params"] + c["reference"] + replica)
    ph["rollout"] = state + ref_res + rollout_mem
    if native:
        bucket = int(float(_get(cfg, "fsdpcfg.update_weights_bucket_megabytes")) * MIB)
        ph["weight sync"] = (
            state + ref_res + replica + min(P * pm, bucket + pc.largest_tensor * pm) + pc.largest_tensor * pm
        )
    ph["log-prob"] = (
        c["actor params"]
        + (0 if o_off else c["optimizer"])
        + replica
        + c["reference"]
        + c["fsdp working set"]
        + ref_ws
        + logits_nograd
        + act_nograd
    )
    ph["update"] = (
        c["actor params"]
        + c["gradients"]
        + (0 if o_off else c["optimizer"])
        + ref_res
        + replica
        + (0 if ref_off else ref_root)
        + c["fsdp working set"]
        + c["unsharded grads"]
        + c["activations"]
        + c["logits"]
    )
    notes = []
    if lora:
        notes.append("LoRA: gradients and optimizer state of the adapters are not counted (small)")
    if not native:
        notes.append("verl scores every token: logits cover prompt + response")
    if policy:
        notes.append("offload_policy: parameters, gradients and optimizer state live in host memory")
    est = MemoryEstimate(params=pc, components=c, phases=ph, kv=kv_info, notes=notes)
    return est


def _candidates(cfg: dict) -> list[tuple[str, dict[str, Any]]]:
    """Settings worth trying for this config: ``[(override as typed, {key: value})]``."""
    a = "actor_rollout_ref.actor."
    cpu = _get(cfg, "trainer.device") == "cpu"
    verl = _get(cfg, "fsdpcfg.launcher") == "verl"
    out: list[tuple[str, dict[str, Any]]] = []
    if not _get(cfg, "actor_rollout_ref.model.enable_gradient_checkpointing"):
        out.append(("patches=gradient_checkpointing", {"actor_rollout_ref.model.enable_gradient_checkpointing": True}))
    micro = int(_get(cfg, a + "ppo_micro_batch_size_per_gpu", if_null=1) or 1)
    if micro > 1:
        out.append((f"{a}ppo_micro_batch_size_per_gpu={micro // 2}", {a + "ppo_micro_batch_size_per_gpu": micro // 2}))
    lp = int(_get(cfg, "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu", if_null=1) or 1)
    if lp > 1:
        k = "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu"
        out.append((f"{k}={lp // 2}", {k: lp // 2}))
    if int(_get(cfg, a + "fsdp_config.fsdp_size")) > 0:
        out.append((f"{a}fsdp_config.fsdp_size=-1", {a + "fsdp_config.fsdp_size": -1}))
    if not cpu and verl:
        for k in ("param_offload", "optimizer_offload"):
            if not _get(cfg, f"{a}fsdp_config.{k}"):
                out.append((f"{a}fsdp_config.{k}=true", {f"{a}fsdp_config.{k}": True}))
        if not _get(cfg, "actor_rollout_ref.ref.fsdp_config.param_offload"):
            out.append(
                (
                    "actor_rollout_ref.ref.fsdp_config.param_offload=true",
                    {"actor_rollout_ref.ref.fsdp_config.param_offload": True},
                )
            )
    if not cpu and _get(cfg, a + "strategy") == "fsdp2" and not _get(cfg, a + "fsdp_config.offload_policy"):
        out.append((f"{a}fsdp_config.offload_policy=true", {a + "fsdp_config.offload_policy": True}))
    gmu = _get(cfg, "actor_rollout_ref.rollout.gpu_memory_utilization")
    if _engine_rollout(_get(cfg, "actor_rollout_ref.rollout.name")) and gmu and float(gmu) > 0.3:
        k = "actor_rollout_ref.rollout.gpu_memory_utilization"
        out.append((f"{k}={float(gmu) - 0.1:.1f}", {k: round(float(gmu) - 0.1, 2)}))
    if _get(cfg, "fsdpcfg.launcher") == "native":
        mb = float(_get(cfg, "fsdpcfg.update_weights_bucket_megabytes"))
        if mb > 64:
            out.append(("fsdpcfg.update_weights_bucket_megabytes=64", {"fsdpcfg.update_weights_bucket_megabytes": 64}))
    if _bytes(_get(cfg, "actor_rollout_ref.ref.fsdp_config.model_dtype")) == 4 and not cpu:
        out.append(
            (
                "actor_rollout_ref.ref.fsdp_config.model_dtype=bf16",
                {"actor_rollout_ref.ref.fsdp_config.model_dtype": "bf16"},
            )
        )
    return out


def _suggestions(cfg: dict, pc: ParamCounts, mc: dict, peak: int) -> list[tuple[str, int]]:
    from fsdpcfg import keypath

    out = []
    for label, overrides in _candidates(cfg):
        alt = copy.deepcopy(cfg)
        for key, value in overrides.items():
            keypath.set(alt, key, value)
        saved = peak - max(_estimate(alt, pc, mc).phases.values())
        if saved > peak * 0.01:
            out.append((label, saved))
    return sorted(out, key=lambda s: -s[1])


def describe_for_check(cfg: dict) -> str:
    """The memory lines of ``fsdpcfg check``'s DERIVED NUMBERS, or one line saying why there are none."""
    try:
        return estimate_memory(cfg).describe()
    except (ValueError, KeyError, TypeError, UnsupportedArchitecture) as e:
        return f"memory: not estimated ({e})"


__all__ = [
    "MemoryEstimate",
    "estimate_memory",
    "device_memory",
    "describe_for_check",
    "read_model_config",
    "KNOWN_GPUS",
]
