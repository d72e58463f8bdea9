"""Model traps that the model's own files show before anything starts (issue 23 item 6), each found after torchrun
had started before: FC420 a checkpoint that is not a causal LM on the native loop's causal-LM path, FC421 a model
folder without weights, FC422 a tokenizer with more ids than the embedding has rows, FC423 an ``external_lib`` that
cannot be found. Everything is read as files (JSON, the
installed transformers' auto mapping parsed as Python source, the import path searched); nothing is imported.
"""

from __future__ import annotations

import ast
import importlib.machinery
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

from fsdpcfg.model_files import _transformers_root, tokenizer_top_id, transformers_version
from fsdpcfg.rules._common import A
from fsdpcfg.rules.context import Context
from fsdpcfg.rules.finding import Finding
from fsdpcfg.rules.registry import rule

P = f"{A}.model.path"
EXT = f"{A}.model.external_lib"
#: the weight files ``PreTrainedModel.from_pretrained`` reads (transformers/utils/__init__.py's SAFE_WEIGHTS_NAME,
#: SAFE_WEIGHTS_INDEX_NAME, WEIGHTS_NAME, WEIGHTS_INDEX_NAME); a sharded checkpoint's shards are *.safetensors.
WEIGHT_FILES = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)


@lru_cache(maxsize=1)
def causal_lm_classes() -> dict[str, str] | None:
    """``{model_type: class name}`` of ``AutoModelForCausalLM`` in the installed transformers
    (``MODEL_FOR_CAUSAL_LM_MAPPING_NAMES`` of ``models/auto/modeling_auto.py``, parsed with :mod:`ast`, not
    imported); ``None`` when it cannot be read."""
    root = _transformers_root()
    f = root / "models" / "auto" / "modeling_auto.py" if root is not None else None
    if f is None or not f.is_file():
        return None
    for node in ast.parse(f.read_text(encoding="utf-8", errors="replace")).body:
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id == "MODEL_FOR_CAUSAL_LM_MAPPING_NAMES"
            and isinstance(node.value, ast.Call)
            and node.value.args
        ):
            try:
                pairs = ast.literal_eval(node.value.args[0])
            except ValueError:
                return None
            return {str(k): str(v) for k, v in pairs}
    return None


def _remote_causal_lm(auto_map: object) -> bool:
    return isinstance(auto_map, dict) and "AutoModelForCausalLM" in auto_map


@rule("FC420", "the checkpoint is a causal LM (the native loop loads AutoModelForCausalLM)", keys=[P])
def causal_lm_checkpoint(ctx: Context) -> Iterable[Finding]:
    """The native trainer and rollout load the model with ``AutoModelForCausalLM.from_pretrained``. A model type
    transformers has no causal-LM class for (T5, a vision-language model) fails there, after torchrun started;
    one it has a class for but whose checkpoint is another head (``BertForMaskedLM`` loaded as
    ``BertLMHeadModel``, bidirectional attention) trains a model that sees the tokens it predicts. An error for
    ``launcher=native``; verl picks its own classes (vision-language models included).

    Source: fsdpcfg/train/model.py (``AutoModelForCausalLM``); transformers ``MODEL_FOR_CAUSAL_LM_MAPPING_NAMES``
    (models/auto/modeling_auto.py); issue 23 item 6.
    """
    m = ctx.model
    if ctx.launcher != "native" or m is None or m.status != "ok" or not isinstance(m.config, dict):
        return
    if _remote_causal_lm(m.auto_map):
        return
    classes = causal_lm_classes()
    mtype, arch = m.model_type, m.architectures
    if classes is None or not isinstance(mtype, str):
        return
    where = f"{m.folder}/config.json"
    if mtype not in classes:
        yield ctx.finding(
            "FC420",
            [P],
            f"{where}: model_type {mtype!r} ({', '.join(arch) or 'no architectures'}) has no causal-LM class in "
            f"transformers {transformers_version()}: AutoModelForCausalLM cannot load it, so the native run would "
            "fail after torchrun started",
            "use a decoder-only causal LM checkpoint (a *ForCausalLM), or launcher=verl for a vision-language model",
        )
        return
    head = arch[0] if arch else None
    if head is not None and head != classes[mtype] and not head.endswith(("ForCausalLM", "LMHeadModel")):
        yield ctx.finding(
            "FC420",
            [P],
            f"{where}: the checkpoint is a {head}, not a causal LM: AutoModelForCausalLM would load it as "
            f"{classes[mtype]} with the head it lacks newly initialised, and train a model that is not a "
            "left-to-right decoder",
            "use a decoder-only causal LM checkpoint (its config.json lists a *ForCausalLM architecture)",
        )


@rule("FC421", "the model folder holds weights", keys=[P])
def weights_present(ctx: Context) -> Iterable[Finding]:
    """A model folder with ``config.json`` but no weight file (``model.safetensors``, its shards and index, or
    ``pytorch_model.bin``): ``from_pretrained`` fails when the ranks load the model (native) or when verl's workers
    do, minutes in. A folder of only a config (a download that stopped, a config copied on its own) is the usual
    cause.

    Source: transformers ``PreTrainedModel.from_pretrained`` ("does not appear to have a file named ...");
    issue 23 item 6.
    """
    m = ctx.model
    if m is None or m.status != "ok" or m.folder is None:
        return
    folder = Path(m.folder)
    if any((folder / f).is_file() for f in WEIGHT_FILES) or any(folder.glob("*.safetensors")):
        return
    present = sorted(p.name for p in folder.iterdir())[:8]
    yield ctx.finding(
        "FC421",
        [P],
        f"{folder} has config.json but no weights ({' or '.join(WEIGHT_FILES[::2])}; it holds: "
        f"{', '.join(present)}): from_pretrained fails when the model is loaded",
        "point the path at the complete checkpoint folder (finish the download, or copy the weight files)",
    )


@rule("FC422", "the tokenizer's ids fit the model's embedding (vocab_size)", keys=[P, f"{A}.model.tokenizer_path"])
def tokenizer_fits_embedding(ctx: Context) -> Iterable[Finding]:
    """A tokenizer whose largest id is ``vocab_size`` or more (another model's tokenizer through
    ``model.tokenizer_path``, added tokens without ``resize_token_embeddings``): the first such token in a prompt
    or a sample indexes past the embedding table (``IndexError: index out of range``; on CUDA a device-side
    assert), after the run started. An embedding larger than the tokenizer is normal (Qwen2.5: 151,936 rows,
    151,665 tokens).

    Source: torch.nn.functional.embedding (ids must be < num_embeddings); transformers
    ``PreTrainedModel.resize_token_embeddings``; issue 23 item 6.
    """
    m = ctx.model
    if m is None or m.status != "ok" or not isinstance(m.config, dict):
        return
    rows = m.text_config.get("vocab_size")
    found = tokenizer_top_id(m)
    if not isinstance(rows, int) or isinstance(rows, bool) or found is None or found[0] < rows:
        return
    top, name = found
    yield ctx.finding(
        "FC422",
        [P, f"{A}.model.tokenizer_path"],
        f"the tokenizer ({m.tokenizer_folder}/{name}) has ids up to {top}, but {m.folder}/config.json has "
        f"vocab_size = {rows}: a token id of {rows} or more indexes past the embedding table when it first "
        "appears (index out of range)",
        "use the model's own tokenizer (actor_rollout_ref.model.tokenizer_path), or resize the embeddings "
        "(resize_token_embeddings) and save the model",
    )


def find_module(name: str) -> bool:
    """True when module ``name`` (dotted) can be found on ``sys.path`` without importing anything: each package
    level is searched in its parent's folders (:class:`importlib.machinery.PathFinder`), builtins and frozen
    modules included."""
    parts = name.split(".")
    if importlib.machinery.BuiltinImporter.find_spec(parts[0]) or importlib.machinery.FrozenImporter.find_spec(
        parts[0]
    ):
        return len(parts) == 1
    path: list[str] | None = None
    for i, part in enumerate(parts):
        spec = importlib.machinery.PathFinder.find_spec(part, path)
        if spec is None:
            return False
        if i < len(parts) - 1:
            path = list(spec.submodule_search_locations or [])
            if not path:
                return False
    return True


@rule("FC423", "model.external_lib can be found", keys=[EXT], example=[f"{EXT}=my_models_not_installed"])
def external_lib_found(ctx: Context) -> Iterable[Finding]:
    """``actor_rollout_ref.model.external_lib`` is imported by verl's workers (``import_external_libs``) and by the
    native ranks before the model is built: a module that is not on this machine's path fails there. Searched
    on the import path without importing it (no code of the config runs in ``check``: FC740). A warning for
    ``launcher=verl`` (the cluster's workers may have it); an error for the native run on this machine.

    Source: verl/utils/import_utils.py ``import_external_libs``; fsdpcfg/train/model.py
    ``import_external_libs``; issue 23 item 6.
    """
    ext = ctx.get(EXT)
    names = [ext] if isinstance(ext, str) else [e for e in ext if isinstance(e, str)] if isinstance(ext, list) else []
    for name in names:
        if not name.strip() or find_module(name.strip()):
            continue
        native = ctx.launcher == "native"
        yield ctx.finding(
            "FC423",
            [EXT],
            f"{EXT} = {name}: no module {name} on this machine's import path, so "
            + (
                "the ranks fail to import it before the model is built"
                if native
                else "verl's workers will fail to import it unless their machines have it"
            ),
            f"install the package that provides {name} (or add its folder to PYTHONPATH), or remove {EXT}",
            severity="error" if native else "warning",
        )
