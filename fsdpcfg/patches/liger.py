"""``liger``: Liger fused Triton kernels (RMSNorm, RoPE, SwiGLU, fused linear cross-entropy)
(``actor_rollout_ref.model.use_liger``).

GPU only: Liger's kernels are Triton kernels, which need a CUDA device. verl applies them with
``liger_kernel.transformers.monkey_patch._apply_liger_kernel_to_instance(model=module)``
(``verl/workers/engine/fsdp/transformer_impl.py`` ``_build_module``); the native launcher does not run them
(:mod:`fsdpcfg.native.support`, rule FC802), so the patch is passed to verl. On a CPU run it is
rejected before launch (rule FC861). The model types are liger-kernel's ``MODEL_TYPE_TO_APPLY_LIGER_FN``
entries for causal LMs; verl silently skips other types, fsdpcfg reports them (rule FC361).
"""

from __future__ import annotations

from fsdpcfg.patches.registry import Patch

PATCH = Patch(
    name="liger",
    title="Liger fused kernels: RMSNorm, RoPE, SwiGLU, fused linear cross-entropy (CUDA only)",
    targets=("rmsnorm.forward", "rope", "swiglu.forward", "cross_entropy"),
    config_key="actor_rollout_ref.model.use_liger",
    is_on=bool,
    model_types=frozenset({"gemma", "gemma2", "llama", "mistral", "mixtral", "qwen2", "qwen3", "phi3"}),
    devices=("cuda",),
    verl_devices=("cuda",),  # Triton kernels: CUDA (and ROCm) GPUs only
    launchers=("verl",),
    packages=("liger_kernel",),
    source="verl/workers/engine/fsdp/transformer_impl.py (use_liger); liger_kernel/transformers/monkey_patch.py",
)
