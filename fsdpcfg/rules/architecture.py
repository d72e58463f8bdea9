"""FC47x: what the installed transformers builds for the model's ``config.json``, against what the file asks for
(read as JSON and transformers' files as text, never imported).

FC470: ``architectures`` names a class no installed transformers module defines (the Auto classes then build the
model_type's class and ignore the name; vLLM and SGLang resolve the name and refuse it).
FC471: attention logit soft-capping (Gemma 2) with an attention implementation that skips it (``sdpa``).
"""

from __future__ import annotations

from collections.abc import Iterable

from fsdpcfg.model_files import class_defined_anywhere, layer_classes, sdpa_applies_softcap, transformers_version
from fsdpcfg.rules._common import A
from fsdpcfg.rules.context import Context
from fsdpcfg.rules.finding import Finding
from fsdpcfg.rules.model_rules import P, _model
from fsdpcfg.rules.registry import rule

ATTN = f"{A}.model.override_config.attn_implementation"
#: What each launcher loads with when ``override_config.attn_implementation`` is unset: the native loop leaves it
#: to transformers (``sdpa`` for every architecture that supports it), verl 0.9.1 asks for flash_attention_2
#: (verl/workers/config/model.py ``HFModelConfig``: ``override_config.get("attn_implementation",
#: "flash_attention_2")``).
DEFAULT_ATTN = {"native": "sdpa", "verl": "flash_attention_2"}
#: Attention implementations of transformers 5.10 that apply ``softcap`` (``eager_attention_forward`` in the
#: model file; flash-attention's kernels take ``softcap``); ``integrations/sdpa_attention.py`` has no such argument.
SOFTCAP_ATTN = ("eager", "flash_attention_2", "flash_attention_3")


@rule(
    "FC470",
    "config.json's architectures must name a class the installed transformers defines",
    keys=[P, f"{A}.model.trust_remote_code"],
)
def unknown_architecture(ctx: Context) -> Iterable[Finding]:
    """``architectures`` records the class that wrote the checkpoint. When no module of the installed
    transformers defines it (a newer release's class, a custom subclass without ``auto_map``), transformers'
    Auto classes build the ``model_type``'s own class instead and ignore the name: weights of modules that class
    lacks are dropped with a warning, and the run trains a different model than the checkpoint's. vLLM and SGLang
    resolve ``architectures`` itself and stop ("Model architectures [...] are not supported"). A class that
    ``auto_map`` supplies (remote code, FC402) and a ``model_type`` transformers does not know (FC402) are left to
    FC402.

    Source: transformers ``models/auto/auto_factory.py`` (``_BaseAutoModelClass.from_config`` picks the class by
    ``type(config)``, i.e. model_type); vLLM ``ModelRegistry.resolve_model_cls`` (by ``architectures``); the
    compatibility matrix's unknown-architecture asset (issue 16).
    """
    m = _model(ctx)
    if m is None or not m.model_type or not m.architectures:
        return
    lc = layer_classes(m.model_type)
    if lc is None:  # model_type not native: FC402's case
        return
    _, defined = lc
    mapped = " ".join(str(v) for v in m.auto_map.values())
    for arch in m.architectures:
        if arch in defined or arch in mapped:
            continue
        anywhere = class_defined_anywhere(arch)
        if anywhere is not False:  # defined by another model file (transformers builds model_type's class), or unknown
            continue
        built = next((c for c in sorted(defined) if c.endswith("ForCausalLM")), f"the {m.model_type} class")
        yield ctx.finding(
            "FC470",
            [P],
            f"{m.path}: config.json names architecture {arch!r}, which transformers {transformers_version()} does "
            f"not define; from_pretrained would build {built} from model_type '{m.model_type}' and ignore the name "
            "(weights of modules it lacks are dropped), and vLLM/SGLang rollouts (launcher=verl) refuse an unknown "
            "architecture",
            f"use a transformers version that defines {arch}, or the checkpoint's own modeling code (auto_map + "
            f"{A}.model.trust_remote_code=true); if the checkpoint really is a plain {built}, correct config.json's "
            f'architectures to ["{built}"]',
        )


@rule(
    "FC471",
    "attention logit soft-capping needs an attention implementation that applies it",
    severity="warning",
    keys=[ATTN, P],
)
def softcap_attention(ctx: Context) -> Iterable[Finding]:
    """Gemma 2 caps its attention scores (``attn_logit_softcapping``, 50.0: ``tanh(s / 50) * 50``). In transformers
    5.10 the eager path and flash-attention apply it; ``sdpa`` (``integrations/sdpa_attention.py``) takes no soft-cap
    argument and silently skips it, so training and log-probs are computed with a different attention than the
    model was trained with (measured on tiny-gemma2: sdpa's output with the cap equals sdpa's without it, eager's
    differs). The installed sdpa integration is read as text: a transformers whose sdpa takes ``softcap`` (or that
    cannot be read) gets no finding. The native loop loads with transformers' default, sdpa, unless
    ``override_config.attn_implementation`` says otherwise; verl asks for flash_attention_2, which applies it.

    Source: transformers 5.10 ``models/gemma2/modeling_gemma2.py`` (``eager_attention_forward(softcap=...)``) and
    ``integrations/sdpa_attention.py``; verl/workers/config/model.py (the flash_attention_2 default);
    tests/rules/test_architecture_rules.py.
    """
    m = _model(ctx)
    if m is None:
        return
    cap = m.text_config.get("attn_logit_softcapping")
    if cap in (None, 0, 0.0):
        return
    asked = ctx.get(ATTN)
    impl = str(asked) if asked else DEFAULT_ATTN.get(ctx.launcher, "sdpa")
    if impl in SOFTCAP_ATTN or (impl == "sdpa" and sdpa_applies_softcap() is not False):
        return
    why = f"{ATTN} = {asked}" if asked else f"{ATTN} is unset, so the {ctx.launcher} launcher loads with {impl}"
    device = str(ctx.get("trainer.device") or "cuda")
    better = "eager" if device == "cpu" or ctx.launcher == "native" else "flash_attention_2"
    yield ctx.finding(
        "FC471",
        [ATTN, P],
        f"{m.path}: {m.model_type} caps attention scores (attn_logit_softcapping = {cap}), but {why}, which skips "
        f"the cap in transformers {transformers_version()}: actor, reference and hf-rollout log-probs use an "
        "uncapped attention",
        f"set +{ATTN}={better}" + ("" if better == "eager" else " (or eager)"),
        severity="warning",
    )
