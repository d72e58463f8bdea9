"""Which boundary of a run owns a failure, and what to try: the doctor's vocabulary for its verdicts.

A run crosses four boundaries where models break (plus the config itself):

* ``config``: the composed config, before anything is loaded (batch arithmetic, unknown keys, ...);
* ``model construction``: tokenizer, processor, config and model loading, remote code, ``external_lib``, chat
  template, model-level patches;
* ``training-state names``: what the trainer shards, optimises and saves under the model's module and parameter
  names (FSDP wrap classes, sharding, optimizer state, checkpoint save/reload);
* ``trainer-to-rollout transfer``: the weight stream from the sharded actor (Hugging Face names, full tensors,
  buckets) into the rollout;
* ``rollout loading``: the rollout replica accepting the weights, its post-processing, generation, and log-probs
  equal to the actor's after synchronisation.

A finding of the static check maps by rule ID (:func:`boundary_of_rule`); an exception raised while a stage runs
maps by the innermost fsdpcfg frame of its traceback (:func:`boundary_of_exception`), so that a failure deep in
:mod:`fsdpcfg.train.rollout.hf` is reported as a rollout problem even when the stage that ran it was "GRPO".
Pure Python: no torch import.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass
from types import TracebackType

CONFIG = "config"
MODEL = "model construction"
STATE = "training-state names"
TRANSFER = "trainer-to-rollout transfer"
ROLLOUT = "rollout loading"

#: boundary -> what to try when it fails and the failure itself carries no fix.
ADVICE: dict[str, str] = {
    CONFIG: "fix the config findings above (`fsdpcfg check` prints the same ones with provenance)",
    MODEL: "load the model by hand with the same trust_remote_code/external_lib (AutoConfig, AutoTokenizer, "
    "AutoModelForCausalLM.from_pretrained); check the folder's config.json, tokenizer files and auto_map; "
    "turn patches off (patches=none) to see whether a patch is at fault",
    STATE: "set actor_rollout_ref.actor.fsdp_config.wrap_policy.transformer_layer_cls_to_wrap to the decoder layer "
    "class (or null for the model's _no_split_modules); try the other engine (fsdp vs fsdp2); compare the "
    "checkpoint's parameter names with model.state_dict() of a freshly loaded model",
    TRANSFER: "compare the names the actor streams (fsdpcfg.train.engine.fsdp.iter_full_params) with the replica's "
    "state_dict() keys: tied weights, wrapper prefixes and LoRA names are the usual suspects; lower "
    "fsdpcfg.update_weights_bucket_megabytes to isolate a tensor",
    ROLLOUT: "check the replica's post-processing (tied embeddings re-tied, buffers such as rotary tables rebuilt), "
    "the rollout dtype (actor_rollout_ref.rollout.dtype vs the actor's), and the generation settings",
}

_MODEL_RULES = {"FC106", "FC361", "FC400", "FC401", "FC402", "FC403", "FC404", "FC470", "FC471", "FC861"}
_STATE_RULES = {"FC405", "FC364", "FC703", "FC704"}
_ROLLOUT_RULES = {"FC406", "FC501", "FC502", "FC503", "FC504", "FC505", "FC506", "FC801"}

#: (module prefix, function names or None for any) -> boundary; the first match from the innermost frame wins.
_FRAMES: list[tuple[str, frozenset[str] | None, str]] = [
    ("fsdpcfg.train.rollout.hf", frozenset({"update_weights"}), TRANSFER),
    ("fsdpcfg.train.rollout", None, ROLLOUT),
    ("fsdpcfg.train.lora.rollout", None, ROLLOUT),
    ("fsdpcfg.train.lora.collect", None, TRANSFER),
    ("fsdpcfg.train.lora.names", None, TRANSFER),
    ("fsdpcfg.train.engine.fsdp", frozenset({"iter_full_params", "bucketed", "_persistent_buffers"}), TRANSFER),
    ("fsdpcfg.train.engine", None, STATE),
    ("fsdpcfg.train.checkpoint", None, STATE),
    ("fsdpcfg.native.ckpt_layout", None, STATE),
    ("fsdpcfg.train.lora.setup", None, MODEL),
    ("fsdpcfg.train.sft.dataset", None, MODEL),  # the tokenizer's chat template applied to the data
    ("fsdpcfg.train.data", None, MODEL),
    ("fsdpcfg.train.patches", None, MODEL),
    ("fsdpcfg.patches", None, MODEL),
    ("fsdpcfg.train.model", None, MODEL),
]


@dataclass
class Failure:
    """Why a stage failed.

    Attributes:
        boundary: one of :data:`ADVICE`'s keys.
        message: what went wrong (first lines of the error, or the comparison's numbers).
        fix: what to try (the error's own fix when it has one, else the boundary's advice).
        error_type: the exception class name (``""`` for a failed comparison or a config finding).
        key: the config key involved, when known.
        rules: rule IDs of the static findings behind it (stage 0 only).
    """

    boundary: str
    message: str
    fix: str
    error_type: str = ""
    key: str | None = None
    rules: tuple[str, ...] = ()

    def to_json(self) -> dict:
        """The machine form (plain types)."""
        return {
            "boundary": self.boundary,
            "message": self.message,
            "fix": self.fix,
            "error_type": self.error_type,
            "key": self.key,
            "rules": list(self.rules),
        }

    @classmethod
    def from_json(cls, d: dict) -> Failure:
        """Inverse of :meth:`to_json`."""
        return cls(
            boundary=d["boundary"],
            message=d["message"],
            fix=d["fix"],
            error_type=d.get("error_type", ""),
            key=d.get("key"),
            rules=tuple(d.get("rules") or ()),
        )


def boundary_of_rule(rule_id: str) -> str:
    """The boundary a static finding of rule ``rule_id`` (``FC403``) belongs to (``config`` when none fits)."""
    if rule_id in _MODEL_RULES:
        return MODEL
    if rule_id in _STATE_RULES:
        return STATE
    if rule_id in _ROLLOUT_RULES:
        return ROLLOUT
    return CONFIG


def boundary_of_frames(frames: list[tuple[str, str]], default: str) -> str:
    """The boundary owning an error raised through ``frames`` (``(module, function)`` pairs, outermost first):
    the innermost frame of fsdpcfg's training code that matches a known module, else ``default`` (a library
    frame such as transformers' counts for the fsdpcfg code that called it)."""
    for module, function in reversed(frames):
        if module.startswith("fsdpcfg.doctor"):
            continue
        for prefix, functions, boundary in _FRAMES:
            if module.startswith(prefix) and (functions is None or function in functions):
                return boundary
    return default


def _frames(tb: TracebackType | None) -> list[tuple[str, str]]:
    out = []
    for frame, _ in traceback.walk_tb(tb):
        out.append((str(frame.f_globals.get("__name__", "")), frame.f_code.co_name))
    return out


def boundary_of_exception(exc: BaseException, default: str) -> str:
    """:func:`boundary_of_frames` over ``exc``'s traceback (and the exception it was raised from)."""
    frames = _frames(exc.__traceback__)
    cause = exc.__cause__ or exc.__context__
    if cause is not None and not exc.__suppress_context__:
        frames = frames + _frames(cause.__traceback__)
    return boundary_of_frames(frames, default)


def failure_from_exception(exc: BaseException, default: str) -> Failure:
    """A :class:`Failure` for ``exc``: a :class:`fsdpcfg.errors.ConfigError` keeps its key and fix; any other
    error gets the owning boundary's advice. ``default`` is the stage's own boundary."""
    from fsdpcfg.errors import ConfigError

    boundary = boundary_of_exception(exc, default)
    text = str(exc.message if isinstance(exc, ConfigError) else exc).strip() or type(exc).__name__
    lines = text.splitlines()
    message = " ".join(line.strip() for line in lines[:3])[:600]
    fix = exc.fix if isinstance(exc, ConfigError) and exc.fix else ADVICE[boundary]
    key = exc.key if isinstance(exc, ConfigError) else None
    return Failure(boundary=boundary, message=message, fix=fix, error_type=type(exc).__name__, key=key)
