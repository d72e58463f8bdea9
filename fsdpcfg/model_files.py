"""Read a model's files as JSON/text, never executing them: ``config.json``, ``generation_config.json``,
``tokenizer_config.json``, ``special_tokens_map.json``, ``added_tokens.json``, ``chat_template.jinja``; and
what the *installed* transformers implements, from its files on disk (no ``import transformers``).

:func:`inspect_model` is what :attr:`fsdpcfg.rules.context.Context.model` returns. The FC4xx rules that use
it live in :mod:`fsdpcfg.rules.model_rules`; the memory estimate (:mod:`fsdpcfg.estimate.memory`) reads
``config.json`` through it too, so it is on the ground floor.
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

#: Files a model folder must have for a run (the tokenizer files may sit in ``tokenizer_path``).
CONFIG = "config.json"
TOKENIZER_CONFIG = "tokenizer_config.json"


@dataclass
class ModelInfo:
    """What could be read for one model path.

    Attributes:
        path: the configured ``actor_rollout_ref.model.path``.
        status: ``ok``; ``not_local`` (a hub id with no local snapshot, or a path absent on this machine: it
            cannot be inspected here); ``no_config`` (the folder exists but has no config.json);
            ``bad_config`` (config.json is not a JSON object).
        folder: the local folder read (a hub snapshot when the path is a hub id), if any.
        tokenizer_folder: the folder the tokenizer files were read from, if any.
        config, generation_config, tokenizer_config, special_tokens_map, added_tokens: parsed JSON or None.
        chat_template_file: a ``chat_template.jinja``/``chat_template.json`` exists next to the tokenizer.
        tokenizer_json: path of ``tokenizer.json`` when present (scanned as text only on demand).
    """

    path: str
    status: str
    folder: Path | None = None
    tokenizer_folder: Path | None = None
    config: dict | None = None
    generation_config: dict | None = None
    tokenizer_config: dict | None = None
    special_tokens_map: dict | None = None
    added_tokens: dict | None = None
    chat_template_file: bool = False
    tokenizer_json: Path | None = None
    problems: list[str] = field(default_factory=list)
    config_problems: list[str] = field(default_factory=list)

    # -- architecture ---------------------------------------------------------------------------------
    @property
    def text_config(self) -> dict:
        """The language-model part of the config (``text_config`` for multimodal checkpoints)."""
        cfg = self.config or {}
        inner = cfg.get("text_config")
        return inner if isinstance(inner, dict) and "num_attention_heads" in inner else cfg

    @property
    def model_type(self) -> str | None:
        return (self.config or {}).get("model_type")

    @property
    def architectures(self) -> list[str]:
        a = (self.config or {}).get("architectures") or []
        return [str(x) for x in a] if isinstance(a, list) else []

    @property
    def auto_map(self) -> dict:
        am = (self.config or {}).get("auto_map")
        return am if isinstance(am, dict) else {}

    # -- tokenizer ------------------------------------------------------------------------------------
    def special_token(self, name: str) -> str | None:
        """The content of special token ``name`` (``pad_token``, ``eos_token``) from tokenizer_config.json,
        else special_tokens_map.json; ``None`` when neither defines it."""
        for src in (self.tokenizer_config, self.special_tokens_map):
            if isinstance(src, dict) and src.get(name) is not None:
                v = src[name]
                return v.get("content") if isinstance(v, dict) else str(v)
        return None

    @property
    def has_chat_template(self) -> bool:
        tc = self.tokenizer_config or {}
        return bool(tc.get("chat_template")) or self.chat_template_file

    def token_id(self, content: str | None) -> int | None:
        """The id of token ``content`` from added_tokens_decoder, added_tokens.json, or tokenizer.json's
        added tokens (scanned as text); ``None`` when not found."""
        if content is None:
            return None
        dec = (self.tokenizer_config or {}).get("added_tokens_decoder") or {}
        for i, tok in dec.items():
            if isinstance(tok, dict) and tok.get("content") == content and str(i).isdigit():
                return int(i)
        if isinstance(self.added_tokens, dict) and isinstance(self.added_tokens.get(content), int):
            return self.added_tokens[content]
        if self.tokenizer_json is not None:
            return _scan_tokenizer_json(str(self.tokenizer_json), content)
        return None


def _read_json(p: Path, info: ModelInfo) -> dict | None:
    if not p.is_file():
        return None
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        info.problems.append(f"{p.name} is not valid JSON ({e.__class__.__name__})")
        return None
    except RecursionError:  # nested past the interpreter's recursion limit: json.loads recurses per level
        info.problems.append(f"{p.name} is nested too deeply to be read (json.loads: RecursionError)")
        return None
    return data if isinstance(data, dict) else None


def tokenizer_top_id(info: ModelInfo) -> tuple[int, str] | None:
    """The largest token id the tokenizer of ``info`` can produce and the file that says so, read from
    ``tokenizer.json`` (its model's vocab and its added tokens) or else ``vocab.json`` with the added tokens of
    ``tokenizer_config.json`` (``added_tokens_decoder``) and ``added_tokens.json``; ``None`` when neither exists (a
    SentencePiece ``tokenizer.model`` alone is not read). Cached per file (path, size, mtime)."""
    folder = info.tokenizer_folder
    if folder is None:
        return None
    extra = [
        int(i) for i in (info.tokenizer_config or {}).get("added_tokens_decoder", {}) or {} if str(i).isdigit()
    ] + [v for v in (info.added_tokens or {}).values() if isinstance(v, int)]
    for name in ("tokenizer.json", "vocab.json"):
        f = folder / name
        if f.is_file():
            st = f.stat()
            top = _top_id(str(f), st.st_size, st.st_mtime_ns)
            if top is None:
                return None
            return max([top, *extra]), name
    return None


@lru_cache(maxsize=16)
def _top_id(path: str, size: int, mtime_ns: int) -> int | None:
    """The largest id in ``tokenizer.json`` (``model.vocab``: a mapping, or a list for Unigram; ``added_tokens``)
    or ``vocab.json`` (a mapping); ``None`` when unreadable. ``size`` and ``mtime_ns`` key the cache."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    ids: list[int] = []
    vocab = (data.get("model") or {}).get("vocab") if Path(path).name == "tokenizer.json" else data
    if isinstance(vocab, dict):
        ids += [v for v in vocab.values() if isinstance(v, int)]
    elif isinstance(vocab, list):
        ids.append(len(vocab) - 1)
    for tok in data.get("added_tokens") or [] if Path(path).name == "tokenizer.json" else []:
        if isinstance(tok, dict) and isinstance(tok.get("id"), int):
            ids.append(tok["id"])
    return max(ids) if ids else None


@lru_cache(maxsize=64)
def _scan_tokenizer_json(path: str, content: str) -> int | None:
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    m = re.search(r'\{\s*"id"\s*:\s*(\d+)\s*,\s*"content"\s*:\s*' + re.escape(json.dumps(content)), text)
    return int(m.group(1)) if m else None


def _hub_snapshot(repo_id: str) -> Path | None:
    """A local snapshot of hub id ``org/name`` in the Hugging Face cache (no network), if any."""
    if not re.fullmatch(r"[\w.-]+/[\w.-]+", repo_id):
        return None
    roots = [
        os.environ.get("HF_HUB_CACHE"),
        os.path.join(os.environ["HF_HOME"], "hub") if os.environ.get("HF_HOME") else None,
        os.path.join(Path.home(), ".cache", "huggingface", "hub"),
    ]
    for root in filter(None, roots):
        snaps = Path(root) / f"models--{repo_id.replace('/', '--')}" / "snapshots"
        if snaps.is_dir():
            for s in sorted(snaps.iterdir(), reverse=True):
                if (s / CONFIG).is_file():
                    return s
    return None


def _local_folder(path: str) -> tuple[Path | None, bool]:
    """``(folder, exists)``: the local folder for ``path`` (a hub snapshot for a hub id)."""
    p = Path(os.path.expanduser(path))
    if p.is_dir():
        return p, True
    if p.exists():  # a file, e.g. a .safetensors: treat its folder as the model
        return p.parent, True
    snap = _hub_snapshot(path)
    return (snap, True) if snap is not None else (None, False)


def inspect_model(path: Any, tokenizer_path: Any = None) -> ModelInfo | None:
    """Read what is readable of the model at ``path`` (and its tokenizer at ``tokenizer_path`` or ``path``).

    Returns ``None`` when ``path`` is not set (``???`` or empty); otherwise a :class:`ModelInfo` whose
    ``status`` says whether it could be inspected. Never raises on a bad folder; never imports anything.
    """
    if not isinstance(path, str) or not path.strip() or path.strip() == "???":
        return None
    folder, exists = _local_folder(path)
    if not exists or folder is None:
        return ModelInfo(path=path, status="not_local")
    info = ModelInfo(path=path, status="ok", folder=folder)
    info.config = _read_json(folder / CONFIG, info)
    if not (folder / CONFIG).is_file():
        info.status = "no_config"
    elif info.config is None:
        info.status = "bad_config"
    else:
        info.config_problems = config_field_problems(info.config)
        if info.config_problems:
            info.status = "bad_config"
    info.generation_config = _read_json(folder / "generation_config.json", info)
    tfolder: Path | None = folder
    if isinstance(tokenizer_path, str) and tokenizer_path.strip():
        tf, texists = _local_folder(tokenizer_path)
        tfolder = tf if texists else None
    if tfolder is not None:
        info.tokenizer_folder = tfolder
        info.tokenizer_config = _read_json(tfolder / TOKENIZER_CONFIG, info)
        info.special_tokens_map = _read_json(tfolder / "special_tokens_map.json", info)
        info.added_tokens = _read_json(tfolder / "added_tokens.json", info)
        info.chat_template_file = any((tfolder / n).is_file() for n in ("chat_template.jinja", "chat_template.json"))
        tj = tfolder / "tokenizer.json"
        info.tokenizer_json = tj if tj.is_file() else None
    return info


# -- config.json fields the rules and the memory estimate read ------------------------------------------------
#: ``field: (kind, minimum)`` for the config.json fields that :mod:`fsdpcfg.estimate.param_count`, the memory estimate
#: and the FC3xx-FC5xx rules read; ``int``: an integer (not a boolean) from ``minimum`` to 2**31 - 1, ``float``: a
#: finite number above ``minimum``, ``bool``: true/false. A field that is absent or null is not checked (the
#: architectures differ in which they have); one that is present with a wrong type or range is an error (FC451).
CONFIG_FIELDS: dict[str, tuple[str, float]] = {
    "hidden_size": ("int", 1),
    "num_hidden_layers": ("int", 1),
    "num_attention_heads": ("int", 1),
    "num_key_value_heads": ("int", 1),
    "intermediate_size": ("int", 1),
    "vocab_size": ("int", 1),
    "max_position_embeddings": ("int", 1),
    "head_dim": ("int", 1),
    "sliding_window": ("int", 1),
    "num_experts": ("int", 0),
    "num_local_experts": ("int", 0),
    "n_routed_experts": ("int", 0),
    "n_shared_experts": ("int", 0),
    "num_experts_per_tok": ("int", 1),
    "moe_intermediate_size": ("int", 1),
    "shared_expert_intermediate_size": ("int", 0),
    "first_k_dense_replace": ("int", 0),
    "kv_lora_rank": ("int", 1),
    "q_lora_rank": ("int", 1),
    "qk_rope_head_dim": ("int", 1),
    "qk_nope_head_dim": ("int", 1),
    "v_head_dim": ("int", 1),
    "rope_theta": ("float", 0),
    "rms_norm_eps": ("float", 0),
    "tie_word_embeddings": ("bool", 0),
}
_INT_MAX = 2**31 - 1


def config_field_problems(config: dict) -> list[str]:
    """Check the :data:`CONFIG_FIELDS` of a parsed config.json (its ``text_config`` for multimodal ones, too).

    Returns one line per problem, ``field = value: what it must be`` (empty when all are fine). Also checks that
    ``num_attention_heads`` is a multiple of ``num_key_value_heads`` and, without ``head_dim``, that
    ``hidden_size`` divides by ``num_attention_heads`` (transformers reshapes by both). Never raises.
    Source: issue 14 item 7 (``hidden_size: "sixty-four"``, negative layers, zero heads or NaN passed ``check``).
    """
    out: list[str] = []
    parts = [("", config)]
    if isinstance(config.get("text_config"), dict):
        parts.append(("text_config.", config["text_config"]))
    for prefix, c in parts:
        for name, (kind, low) in CONFIG_FIELDS.items():
            v = c.get(name)
            if v is None:
                continue
            shown = f"{prefix}{name} = {json.dumps(v)[:60]}"
            if kind == "bool":
                if not isinstance(v, bool):
                    out.append(f"{shown}: must be true or false")
            elif kind == "int":
                if isinstance(v, bool) or not isinstance(v, int):
                    out.append(f"{shown}: must be an integer")
                elif not low <= v <= _INT_MAX:
                    out.append(f"{shown}: must be from {int(low)} to {_INT_MAX:,}")
            elif isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= low:
                out.append(f"{shown}: must be a finite number above {low:g}")
        heads, kv, hidden = (c.get(k) for k in ("num_attention_heads", "num_key_value_heads", "hidden_size"))
        ints = [x for x in (heads, kv, hidden) if isinstance(x, int) and not isinstance(x, bool) and x > 0]
        if len(ints) == 3 and isinstance(heads, int) and isinstance(kv, int) and isinstance(hidden, int) and heads % kv:
            out.append(f"{prefix}num_attention_heads = {heads} is not a multiple of num_key_value_heads = {kv}")
        if (
            len(ints) == 3
            and isinstance(heads, int)
            and isinstance(hidden, int)
            and c.get("head_dim") is None
            and hidden % heads
        ):
            out.append(
                f"{prefix}hidden_size = {hidden} is not a multiple of num_attention_heads = {heads} "
                "(and no head_dim is given)"
            )
    return out


# -- chat templates ------------------------------------------------------------------------------------------
def chat_templates(info: ModelInfo) -> list[tuple[str, str]]:
    """``[(where, template source)]``: the chat templates of the tokenizer (tokenizer_config.json's
    ``chat_template``, a string or a list of ``{name, template}``; ``chat_template.jinja``; ``chat_template.json``)."""
    out: list[tuple[str, str]] = []
    folder = info.tokenizer_folder
    if folder is None:
        return out
    ct = (info.tokenizer_config or {}).get("chat_template")
    if isinstance(ct, str):
        out.append((str(folder / TOKENIZER_CONFIG) + " chat_template", ct))
    elif isinstance(ct, list):
        for t in ct:
            if isinstance(t, dict) and isinstance(t.get("template"), str):
                out.append((f"{folder / TOKENIZER_CONFIG} chat_template[{t.get('name')}]", t["template"]))
    jinja = folder / "chat_template.jinja"
    if jinja.is_file():
        try:
            out.append((str(jinja), jinja.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError) as e:
            info.problems.append(f"{jinja.name} cannot be read ({e.__class__.__name__})")
    js = folder / "chat_template.json"
    if js.is_file():
        data = _read_json(js, info)
        if isinstance(data, dict) and isinstance(data.get("chat_template"), str):
            out.append((str(js) + " chat_template", data["chat_template"]))
    return out


@lru_cache(maxsize=64)
def template_syntax_error(source: str) -> tuple[int, str] | None:
    """``(line, message)`` of the first Jinja syntax error of ``source`` (an unknown filter or test included), or
    ``None`` when it compiles (kept per template text: a check and the run's check compile the same template).

    Compiled (never rendered) with the environment transformers uses for chat templates
    (``ImmutableSandboxedEnvironment`` with ``loopcontrols``, the ``generation`` block, ``trim_blocks``,
    ``lstrip_blocks``: ``transformers/utils/chat_template_utils.py`` ``_compile_jinja_template``). jinja2 is
    imported here, on first use, so that a config without a template does not pay for it.
    """
    import jinja2.ext
    import jinja2.nodes
    import jinja2.sandbox

    class Generation(jinja2.ext.Extension):
        """``{% generation %}...{% endgeneration %}``, the block transformers' ``AssistantTracker`` adds (it marks
        the assistant's tokens for ``return_assistant_tokens_mask``): parsed as transformers parses it."""

        tags = {"generation"}

        def parse(self, parser):
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
            return jinja2.nodes.CallBlock(self.call_method("_block"), [], [], body).set_lineno(lineno)

        def _block(self, caller):
            return caller()

    env = jinja2.sandbox.ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[Generation, jinja2.ext.loopcontrols]
    )
    try:
        env.from_string(source)  # compiled, as transformers does: an unknown filter or test fails here too
    except jinja2.TemplateSyntaxError as e:
        return int(e.lineno or 1), str(e.message or e)
    except jinja2.TemplateError as e:  # TemplateAssertionError: no filter or test of that name
        return int(getattr(e, "lineno", None) or 1), str(getattr(e, "message", None) or e)
    return None


# -- the installed transformers, read from its files -------------------------------------------------------
@lru_cache(maxsize=1)
def _transformers_root() -> Path | None:
    try:
        from importlib.metadata import PackageNotFoundError, distribution

        root = Path(str(distribution("transformers").locate_file("transformers")))
    except (ImportError, PackageNotFoundError, OSError):
        return None
    return root if root.is_dir() else None


def transformers_version() -> str | None:
    try:
        from importlib.metadata import version

        return version("transformers")
    except Exception:
        return None


@lru_cache(maxsize=1)
def native_model_types() -> frozenset[str] | None:
    """``model_type`` values the installed transformers maps to a config class (``CONFIG_MAPPING_NAMES`` in
    ``models/auto/auto_mappings.py`` or ``configuration_auto.py``, parsed as text); ``None`` when
    transformers is not installed."""
    root = _transformers_root()
    if root is None:
        return None
    found: set[str] = set()
    for rel in ("models/auto/auto_mappings.py", "models/auto/configuration_auto.py"):
        f = root / rel
        if f.is_file():
            text = f.read_text(encoding="utf-8", errors="replace")
            found.update(re.findall(r'\(\s*"([\w-]+)"\s*,\s*"\w+Config"\s*\)', text))
            found.update(re.findall(r'"([\w-]+)"\s*:\s*"\w+Config"', text))
    return frozenset(found) if found else None


def _modeling_text(model_type: str) -> str | None:
    root = _transformers_root()
    if root is None:
        return None
    mod = model_type.replace("-", "_")
    f = root / "models" / mod / f"modeling_{mod}.py"
    if not f.is_file():
        return None
    return f.read_text(encoding="utf-8", errors="replace")


@lru_cache(maxsize=64)
def layer_classes(model_type: str) -> tuple[tuple[str, ...], frozenset[str]] | None:
    """``(no_split_modules, defined_classes)`` of transformers' ``modeling_<type>.py``, read as text: the
    decoder-layer class names FSDP should wrap, and every ``nn.Module`` class the file defines. ``None``
    when transformers has no such modeling file."""
    text = _modeling_text(model_type)
    if text is None:
        return None
    ns: list[str] = []
    for m in re.finditer(r"_no_split_modules\s*=\s*\[([^\]]*)\]", text):
        ns.extend(re.findall(r'"(\w+)"', m.group(1)))
    classes = frozenset(re.findall(r"^class (\w+)\(", text, flags=re.M))
    return tuple(dict.fromkeys(ns)), classes


@lru_cache(maxsize=64)
def module_names(model_type: str) -> frozenset[str] | None:
    """The attribute names under which transformers' ``modeling_<type>.py`` (read as text) builds a submodule or
    a parameter (``self.q_proj = nn.Linear(``, ``self.experts = ...(``, ``self.gate_up_proj = nn.Parameter(``):
    the leaf names a PEFT ``target_modules`` entry can match. ``None`` when transformers has no such file (a
    remote-code model) or the file builds nothing this way."""
    text = _modeling_text(model_type)
    if text is None:
        return None
    names = frozenset(re.findall(r"\bself\.(\w+)\s*=\s*[\w.]+\(", text))
    return names or None


@lru_cache(maxsize=64)
def class_defined_anywhere(name: str) -> bool | None:
    """True when some ``models/*/modeling_*.py`` of the installed transformers defines ``class <name>(`` (read as
    text); ``None`` when transformers is not installed. Scans every modeling file (tens of ms): call it only
    after the model_type's own file (:func:`layer_classes`) did not have the class."""
    root = _transformers_root()
    if root is None:
        return None
    pattern = re.compile(rf"^class {re.escape(name)}\(", flags=re.M)
    for f in (root / "models").glob("*/modeling_*.py"):
        if pattern.search(f.read_text(encoding="utf-8", errors="replace")):
            return True
    return False


@lru_cache(maxsize=1)
def sdpa_applies_softcap() -> bool | None:
    """Whether the installed transformers' sdpa attention (``integrations/sdpa_attention.py``, read as text) takes a
    ``softcap`` argument; ``None`` when transformers or the file is absent. 5.10's does not."""
    root = _transformers_root()
    f = root / "integrations" / "sdpa_attention.py" if root is not None else None
    if f is None or not f.is_file():
        return None
    return "softcap" in f.read_text(encoding="utf-8", errors="replace")
