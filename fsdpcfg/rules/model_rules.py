"""FC4xx: the model's own files (config.json, tokenizer_config.json, generation_config.json) against the
config — read as JSON by :mod:`fsdpcfg.model_files`, never executed.

A hub id without a local snapshot, or a path absent on this machine, cannot be inspected: FC400 says so
(info) and the rules that need the files stay silent (docs/design.md#offline-inspection).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from fsdpcfg import paths
from fsdpcfg.model_files import ModelInfo, layer_classes, native_model_types, transformers_version
from fsdpcfg.rules._common import A, flag, fsdp_sections, need_critic, rollout_name, src, val
from fsdpcfg.rules.chain import pending_checkpoint_root
from fsdpcfg.rules.context import Context
from fsdpcfg.rules.finding import Finding
from fsdpcfg.rules.registry import rule

P, TP = f"{A}.model.path", f"{A}.model.tokenizer_path"
TRC = f"{A}.model.trust_remote_code"


def _model(ctx: Context) -> ModelInfo | None:
    """The inspected model when its config.json was read, else None."""
    m = ctx.model
    return m if m is not None and m.status == "ok" and m.config is not None else None


@rule("FC400", "model files that cannot be inspected here", severity="info", keys=[P, TP])
def model_not_local(ctx: Context) -> Iterable[Finding]:
    """A hub id with no local snapshot, or a path that does not exist on this machine (a cluster path checked
    in pre-commit), cannot be read: say so and go on without the model rules. Launch fails on it later.

    Source: docs/design.md#offline-inspection.
    """
    m = ctx.model
    if m is not None and m.status == "not_local" and pending_checkpoint_root(m.path) is None:  # else FC690
        yield ctx.finding(
            "FC400",
            [P],
            f"{P} = {m.path} is not available on this machine (no folder and no "
            "local Hugging Face snapshot); the model-file rules (FC304, FC4xx, FC501) were skipped",
            "run the check where the model is, or download it first to check those rules too",
            severity="info",
        )


@rule(
    "FC401",
    "a model folder must hold config.json and the tokenizer files",
    keys=[P, TP],
    example=["actor_rollout_ref.model.path=<Qwen/Qwen3-8B folder>"],
)
def model_folder_incomplete(ctx: Context) -> Iterable[Finding]:
    """A folder that exists but lacks ``config.json`` (or has an unreadable one), or whose tokenizer folder
    lacks ``tokenizer_config.json``, fails on every rank at start-up.

    Source: docs/design.md#offline-inspection; verl/workers/config/model.py
    ``HFModelConfig.__post_init__`` (AutoConfig) and verl/utils/tokenizer/tokenizer.py ``hf_tokenizer``.
    """
    m = ctx.model
    if m is None or m.status == "not_local":
        return
    if m.status == "bad_config" and m.config_problems:
        return  # FC451 names each field
    if m.status in ("no_config", "bad_config"):
        why = next((x for x in m.problems if x.startswith("config.json")), "config.json is not a JSON object")
        what = "has no config.json" if m.status == "no_config" else f"cannot be used: {why}"
        yield ctx.finding(
            "FC401",
            [P],
            f"{P} = {m.path} {what}",
            "point it at a Hugging Face model folder (config.json, weights, tokenizer files)",
        )
        return
    tok_key = TP if ctx.get(TP) else P
    if m.tokenizer_folder is None:
        yield ctx.finding(
            "FC401",
            [TP],
            f"{TP} = {ctx.get(TP)} does not exist on this machine",
            f"fix {TP} or leave it unset to use {P}",
            severity="warning",
        )
    elif m.tokenizer_config is None:
        yield ctx.finding(
            "FC401",
            [tok_key],
            f"{m.tokenizer_folder} has no tokenizer_config.json; the tokenizer cannot be loaded",
            f"copy the tokenizer files there or set {TP} to a folder that has them",
        )


def _stray_trust_keys(ctx: Context) -> list[str]:
    """Keys named ``*trust_remote_code`` that verl does not read for the model (e.g. ``+model.trust_remote_code``
    on a PPO config)."""
    out = [
        k for k in ctx.composed.added if k.endswith("trust_remote_code") and k not in (TRC, "data.trust_remote_code")
    ]
    if (
        isinstance(ctx.cfg.get("model"), dict)
        and "trust_remote_code" in ctx.cfg["model"]
        and "model.trust_remote_code" not in out
        and "actor_rollout_ref" in ctx.cfg
    ):
        out.append("model.trust_remote_code")
    return out


@rule(
    "FC402",
    "remote-code checkpoints need actor_rollout_ref.model.trust_remote_code",
    keys=[TRC, f"{A}.model.external_lib"],
    example=["actor_rollout_ref.model.path=<Qwen/Qwen-7B folder>"],
)
def remote_code(ctx: Context) -> Iterable[Finding]:
    """config.json's ``auto_map`` points at code shipped with the checkpoint. When the installed transformers
    does not implement its ``model_type`` natively, loading needs ``trust_remote_code=true`` (model and
    tokenizer); a model_type transformers does not know and no auto_map cannot load at all. A
    ``+model.trust_remote_code`` on a PPO config creates a key nothing reads.

    Source: transformers AutoConfig (``models/auto/configuration_auto.py``, read as text); verl passes
    ``actor_rollout_ref.model.trust_remote_code`` to config, model and tokenizer (verl/workers/config/model.py).
    Case c09.
    """
    m = _model(ctx)
    if m is None or not m.model_type:
        return
    native = native_model_types()
    if native is None:
        return
    tv = transformers_version()
    stray = _stray_trust_keys(ctx)
    trusted = flag(ctx.get(TRC))
    if m.model_type in native:
        return
    note = f"; {', '.join(stray)} was set, but nothing reads it — the key verl reads is {TRC}" if stray else ""
    if m.auto_map and not trusted:
        yield ctx.finding(
            "FC402",
            [TRC, *stray],
            f"{m.path}: model_type '{m.model_type}' is not implemented by the installed transformers {tv}, and "
            f"config.json's auto_map ({', '.join(sorted(m.auto_map))}) needs remote code, but {TRC} = false{note}",
            f"set {TRC}=true (it covers the tokenizer too) if you trust this checkpoint's code",
        )
    elif not m.auto_map:
        ext = ctx.get(f"{A}.model.external_lib")
        yield ctx.finding(
            "FC402",
            [P, f"{A}.model.external_lib"],
            f"{m.path}: model_type '{m.model_type}' is not implemented by transformers {tv} and config.json has no "
            f"auto_map" + (f"; {A}.model.external_lib = {ext} may register it" if ext else ""),
            "upgrade transformers, or set actor_rollout_ref.model.external_lib to a package that registers it",
            severity="warning" if ext else "error",
        )


def _data_is_chat(ctx: Context) -> bool:
    """True unless the first training row's prompt is plain text (the head read by
    :func:`fsdpcfg.rules.data_files.peek`; absent or unreadable files are taken as verl's chat-message layout)."""
    from fsdpcfg import datafiles
    from fsdpcfg.rules.data_files import peek

    files = datafiles.file_list(ctx.get("data.train_files"))
    key = str(ctx.get("data.prompt_key") or "prompt")
    head = peek(files[0], "data.train_files") if files else None
    if isinstance(head, datafiles.Peek) and head.rows:
        return not isinstance(head.rows[0].get(key), str)
    return True


@rule(
    "FC403",
    "chat-message data needs a chat template",
    keys=[f"{A}.model.custom_chat_template", P],
    example=["actor_rollout_ref.model.path=<Llama-2-7b-hf folder>"],
)
def chat_template(ctx: Context) -> Iterable[Finding]:
    """verl's RL dataset applies the tokenizer's chat template to the prompt messages; a base checkpoint
    without one (in tokenizer_config.json or a chat_template.jinja file) fails in the dataset after start-up.

    Source: verl/utils/dataset/rl_dataset.py ``RLHFDataset`` (``tokenizer.apply_chat_template``). Case c13.
    """
    m = _model(ctx)
    if m is None or m.tokenizer_config is None or m.has_chat_template:
        return
    if ctx.get(f"{A}.model.custom_chat_template") or not _data_is_chat(ctx):
        return
    where = m.tokenizer_folder or m.folder
    yield ctx.finding(
        "FC403",
        [f"{A}.model.custom_chat_template", P],
        f"the prompts of data.train_files are chat messages, but the tokenizer at {where} has no chat template "
        f"(no chat_template in tokenizer_config.json, no chat_template.jinja)",
        f"set {A}.model.custom_chat_template to a Jinja template, or use an instruct checkpoint",
    )


def _ids(x: Any) -> list[int]:
    if isinstance(x, bool):
        return []
    if isinstance(x, int):
        return [x]
    if isinstance(x, list):
        return [i for i in x if isinstance(i, int) and not isinstance(i, bool)]
    return []


@rule(
    "FC404",
    "pad token and stop ids: which ids training and rollout will use",
    severity="warning",
    keys=[P, TP],
    example=["actor_rollout_ref.model.path=<Llama-3.2-3B-Instruct folder>"],
)
def pad_and_stop_ids(ctx: Context) -> Iterable[Finding]:
    """A tokenizer without a pad token is padded with eos (verl/utils/tokenizer/tokenizer.py
    ``set_pad_token_id``); the rollout engine stops on generation_config.json's ``eos_token_id`` while the
    trainer's masks use the tokenizer's eos. Say which ids will be used, and warn when the tokenizer's eos is
    not among the engine's stop ids. Case c14.
    """
    m = _model(ctx)
    if m is None or m.tokenizer_config is None or m.tokenizer_config.get("auto_map"):
        return  # a remote-code tokenizer sets its special tokens in code: nothing to read here
    eos_tok = m.special_token("eos_token")
    eos_id = m.token_id(eos_tok)
    cfg_ids = _ids(m.text_config.get("eos_token_id")) or _ids((m.config or {}).get("eos_token_id"))
    gen_ids = _ids((m.generation_config or {}).get("eos_token_id"))
    stop = gen_ids or cfg_ids
    if eos_id is None and len(cfg_ids) == 1:
        eos_id = cfg_ids[0]  # sentencepiece tokenizers keep eos in tokenizer.model; config.json names its id
    keys = [P, TP]
    ids = (
        f"stop ids: config.json {cfg_ids or 'none'}, generation_config.json {gen_ids or 'none'}, "
        f"tokenizer eos {eos_tok!r} = {eos_id if eos_id is not None else 'unknown id'}"
    )
    if m.special_token("pad_token") is None:
        yield ctx.finding(
            "FC404",
            keys,
            f"the tokenizer of {m.tokenizer_folder} defines no pad token; verl pads with eos {eos_tok!r} "
            f"(id {eos_id if eos_id is not None else 'unknown'}), so padding and end of answer share one id; {ids}",
            "fine for most runs; to pad with a distinct id, use a tokenizer folder whose tokenizer_config.json "
            f"sets pad_token ({TP})",
            severity="warning",
        )
    elif eos_id is not None and stop and eos_id not in stop:
        yield ctx.finding(
            "FC404",
            keys,
            f"the tokenizer's eos {eos_tok!r} (id {eos_id}) is not among the rollout engine's stop ids {stop}; {ids}",
            "make generation_config.json's eos_token_id include the tokenizer's eos id",
            severity="warning",
        )


def _wrap_keys(ctx: Context) -> list[str]:
    return [f"{sec}.wrap_policy.transformer_layer_cls_to_wrap" for sec, _ in fsdp_sections(ctx)]


@rule(
    "FC405",
    "FSDP wrap classes must be modules of the model's architecture",
    keys=[f"{A}.actor.fsdp_config.wrap_policy.transformer_layer_cls_to_wrap"],
    example=["+actor_rollout_ref.actor.fsdp_config.wrap_policy.transformer_layer_cls_to_wrap=[Gemma3DecoderLayer]"],
)
def wrap_classes(ctx: Context) -> Iterable[Finding]:
    """``transformer_layer_cls_to_wrap`` names classes to shard; a name the architecture does not define makes
    every rank fail while building the model. The expected names are transformers' ``_no_split_modules`` of
    ``modeling_<model_type>.py`` (read as text), e.g. Qwen3ForCausalLM -> Qwen3DecoderLayer.

    Source: verl/utils/fsdp_utils.py ``get_fsdp_wrap_policy`` (raises when a class is not found). Case c15.
    """
    m = _model(ctx)
    if m is None or not m.model_type:
        return
    lc = layer_classes(m.model_type)
    if lc is None:
        return
    expected, defined = lc
    for key in _wrap_keys(ctx):
        v = val(ctx, key)
        names = [v] if isinstance(v, str) else [str(x) for x in v] if isinstance(v, list) else []
        missing = [n for n in names if n not in defined]
        if missing:
            arch = m.architectures[0] if m.architectures else m.model_type
            yield ctx.finding(
                "FC405",
                [key],
                f"{key} = {names}: {', '.join(missing)} is not a class of {arch} (transformers "
                f"models/{m.model_type}/modeling_{m.model_type}.py)",
                f"set {key}={list(expected) or '<the decoder layer class>'}, or remove it (verl then uses the "
                "model's _no_split_modules)",
            )


@lru_cache(maxsize=1)
def arch_table() -> dict:
    """The versioned table of architectures and load formats per rollout backend (package data)."""
    return json.loads((paths.data_dir() / "rollout_arch_support.json").read_text())


@rule("FC406", "architecture support of the rollout backend", severity="warning", keys=[P, f"{A}.rollout.name"])
def rollout_architecture(ctx: Context) -> Iterable[Finding]:
    """vLLM and SGLang implement a fixed set of architectures natively (the versions verl 0.9.1 pins); for
    others they fall back to their Transformers backend (slower, some features missing) or fail.

    Source: fsdpcfg/data/rollout_arch_support.json (vLLM ``_TEXT_GENERATION_MODELS``, SGLang ``EntryClass``).
    """
    m = _model(ctx)
    name = rollout_name(ctx)
    backend = arch_table()["backends"].get(name)
    if m is None or not backend or not backend.get("architectures") or not m.architectures:
        return
    arch = m.architectures[0]
    if arch not in backend["architectures"]:
        yield ctx.finding(
            "FC406",
            [P, f"{A}.rollout.name"],
            f"{arch} is not in {name} {backend['version']}'s native architectures (fsdpcfg table from "
            f"{backend['source'].split(';')[0]}); it may run on the engine's Transformers fallback or fail",
            "try another rollout backend, or check the engine's supported-models list for this version",
            severity="warning",
        )


@rule(
    "FC451",
    "config.json fields have the types and ranges the checks and the model need",
    keys=[P],
    example=["+recipe=qwen_grpo", "+actor_rollout_ref.model.override_config.hidden_size=sixty-four"],
)
def config_json_fields(ctx: Context) -> Iterable[Finding]:
    """A ``config.json`` whose architecture numbers are of the wrong type or range (``hidden_size: "sixty-four"``,
    ``num_hidden_layers: -2``, ``num_attention_heads: 0``, ``NaN``), or whose heads do not divide: transformers
    fails building the model on every rank after start-up, and the memory estimate and the FC3xx/FC5xx rules
    cannot use it. Each field is named with its value (:data:`fsdpcfg.model_files.CONFIG_FIELDS`).

    Source: issue 14 item 7; transformers ``PretrainedConfig`` subclasses (``Qwen2Config`` ...) and the
    attention modules' ``view(..., num_heads, head_dim)``.
    """
    from fsdpcfg.model_files import config_field_problems

    m = ctx.model
    if m is None or m.config is None:
        return
    if m.config_problems:
        where = (m.folder / "config.json") if m.folder is not None else m.path
        yield ctx.finding(
            "FC451",
            [P],
            f"{where}: " + "; ".join(m.config_problems),
            "fix config.json (it is the checkpoint's own file: re-download or re-save it with "
            "transformers' save_pretrained), or point the model path at a valid checkpoint",
        )
    ov_key = f"{A}.model.override_config"
    ov = ctx.get(ov_key)
    if isinstance(ov, dict) and ov:  # transformers applies it on top of config.json
        extra = [p for p in config_field_problems({**m.config, **ov}) if p not in m.config_problems]
        if extra:
            yield ctx.finding(
                "FC451",
                [ov_key],
                f"{ov_key} applied to config.json gives: " + "; ".join(extra),
                f"fix the values under {ov_key}",
            )


@rule(
    "FC452",
    "the chat templates of the tokenizer parse as Jinja",
    keys=[f"{A}.model.custom_chat_template", P],
    example=["actor_rollout_ref.model.custom_chat_template='{% for m in messages %}{{ m.content }'"],
)
def chat_template_syntax(ctx: Context) -> Iterable[Finding]:
    """A chat template with a Jinja syntax error (``custom_chat_template``, tokenizer_config.json's
    ``chat_template``, ``chat_template.jinja``) fails at the first ``apply_chat_template``, in the dataset after
    start-up. Templates are parsed, never rendered (no code of the checkpoint runs).

    Source: issue 14 item 7; transformers ``_compile_jinja_template`` (``utils/chat_template_utils.py``).
    """
    from fsdpcfg.model_files import chat_templates, template_syntax_error

    key = f"{A}.model.custom_chat_template"
    sources: list[tuple[str, str, list[str]]] = []
    custom = ctx.get(key)
    if isinstance(custom, str) and custom.strip():
        sources.append((key, custom, [key]))
    elif ctx.model is not None and ctx.model.tokenizer_folder is not None:
        sources += [(where, text, [P]) for where, text in chat_templates(ctx.model)]
    for where, text, keys in sources:
        err = template_syntax_error(text)
        if err is not None:
            line, msg = err
            yield ctx.finding(
                "FC452",
                keys,
                f"{where}: line {line} of the chat template: Jinja syntax error: {msg}",
                f"fix the template (it is parsed by jinja2 as transformers does), or set {key} to a working one",
            )


#: verl 0.9.1's placeholder model path: the default of every ``HFModelConfig.path`` in its YAML
#: (verl/trainer/config/model/hf_model.yaml ``path: ~/models/deepseek-llm-7b-chat``), read from verl's own
#: defaults (one home: :mod:`fsdpcfg.verlref`).
def _placeholder_path(ctx: Context) -> str | None:
    d = ctx.verl_defaults().get("critic.model.path")
    return d if isinstance(d, str) else None


@rule(
    "FC418",
    "a critic in use must name its model (critic.model.path is verl's placeholder)",
    keys=["critic.model.path", "critic.enable", "algorithm.adv_estimator"],
    example=["algorithm.adv_estimator=gae"],
)
def critic_placeholder_path(ctx: Context) -> Iterable[Finding]:
    """A run that builds a critic (``critic.enable``, or ``adv_estimator=gae`` when it is unset) loads
    ``critic.model.path``, whose verl 0.9.1 default is the placeholder ``~/models/deepseek-llm-7b-chat`` (the
    example path of ``model/hf_model.yaml``), not the actor's model. A GAE script that sets only
    ``actor_rollout_ref.model.path`` fails when the critic worker loads the folder, after the actor and the
    rollout are up; where the folder exists, the critic is a different model (another tokenizer and size) from
    the policy it scores. Not when the actor itself is on the placeholder (then both are one model).

    Source: verl/trainer/config/ppo_trainer.yaml (``model@critic.model: hf_model``) and model/hf_model.yaml
    (``path: ~/models/deepseek-llm-7b-chat``), verl/trainer/ppo/utils.py ``need_critic``, verl/workers/config/model.py
    ``HFModelConfig.__post_init__`` (loads the path); verl's own GAE examples set
    ``critic.model.path=$HOME/models/...`` beside the actor's (examples/ppo_trainer/*.sh).
    """
    if ctx.composed.kind != "ppo" or not need_critic(ctx):
        return
    ph = _placeholder_path(ctx)
    path = val(ctx, "critic.model.path")
    if ph is None or not isinstance(path, str) or path.rstrip("/") != ph:
        return
    actor = ctx.get(P)
    if isinstance(actor, str) and actor.rstrip("/") == ph:
        return
    why = (
        "critic.enable = true"
        if ctx.get("critic.enable") is not None
        else f"algorithm.adv_estimator = {ctx.get('algorithm.adv_estimator')}"
    )
    yield ctx.finding(
        "FC418",
        ["critic.model.path", P],
        f"the run builds a critic ({why}) but critic.model.path = {path} {src(ctx, 'critic.model.path')} is "
        f"verl's placeholder, not the actor's model {actor}: the critic worker fails to load it (or, where it "
        "exists, scores the policy with another model and tokenizer)",
        "set critic.model.path=${actor_rollout_ref.model.path} (or a reward-model checkpoint of the same tokenizer)",
    )
