"""The verl side of ``test_generated_overrides_oracle.py``: draw override sets from the installed verl's key tree
and say, per override, what verl 0.9.1 does with it. Imports verl; one process for every set.

    python tests/check/verl_opinion/_overrides_oracle_worker.py SEED N_SETS PER_SET OUT.json

1. **The key tree**, read from the installed verl (never from fsdpcfg's copy of it): verl's own compose of
   ``ppo_trainer`` from its config folder (as ``python -m verl.trainer.main_ppo`` composes it), every leaf with
   its default; for each section with a ``_target_`` (or annotated with a dataclass by its parent's), the fields of
   that config dataclass (the ones verl's YAML leaves out, and the dict- or Any-typed ones); the mappings verl
   reads with ``.get`` or hands to a library (the ``{}`` leaves, ``reward.reward_kwargs`` ...:
   :data:`fsdpcfg.check.verl_opinion._worker.OPEN_MAPPINGS`); the keys only another engine's composition
   (``ppo_megatron_trainer``) has.
2. **The draw**: ``N_SETS`` sets of ``PER_SET`` overrides, ``random.Random(SEED)``, each override one of
   :data:`KINDS` on its own key (no key of a set is another's section); then the set :data:`PINNED`.
3. **verl's verdict per override**, for the command ``main_ppo BASE... SET...``:

   * ``refused``: verl's Hydra compose refuses it (the message is Hydra's);
   * ``crashes``: composed, then verl's checks stop on it (``auto_set_device``, ``validate_config``,
     ``OmegaConf.resolve``, the config dataclasses: :func:`fsdpcfg.check.verl_opinion._worker.verl_checks`);
   * ``ignored``: accepted, and verl reads nothing there (not in its YAML, no dataclass field, not below a
     mapping it reads or passes on);
   * ``accepted``: accepted and read.

   Hydra refuses the first bad override of a command and stops; the verdict of each one, as a user who drops
   the refused override and runs again would see it, comes from Hydra's own override step
   (``ConfigLoaderImpl._apply_overrides_to_config``, what ``compose`` runs after composing the defaults list,
   which no override of a set changes: none names a config group) applied to verl's composed ``BASE``, one
   override after the other, a refused one left out. That this equals verl's own compose is checked on every
   set, not assumed: verl composes ``BASE + SET`` and fails on the first override found refused, with the same
   message, or gives the same tree; and ``BASE`` + the accepted ones composes to the same tree. A crash is
   pinned to its override by the key verl's error names (``unexpected keyword argument 'x'`` at
   ``full_key: a.b``) or else by the shortest prefix of the set that crashes; it is left out and the rest
   checked again, until verl accepts what is left.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import random
import re
import sys
import time
import typing
from pathlib import Path
from typing import Any

from fsdpcfg.check.runscript.translate import hydra_value as hydra_text  # one writer of override values

#: verl's example settings that make its defaults pass validate_config on one GPU (the verl-opinion tests share them).
VALID_ONE_GPU = [
    "algorithm.adv_estimator=grpo",
    "actor_rollout_ref.rollout.name=vllm",
    "trainer.n_gpus_per_node=1",
    "data.train_batch_size=8",
    "actor_rollout_ref.actor.ppo_mini_batch_size=8",
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2",
    "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=2",
    "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=2",
    "critic.ppo_micro_batch_size_per_gpu=2",
]
#: what every drawn set comes after: those settings and a model path.
BASE = [*VALID_ONE_GPU, "actor_rollout_ref.model.path=/models/Qwen2.5-0.5B-Instruct"]
#: what an override of each kind is: the draw picks a kind, then a key and a value of that kind.
KINDS = {
    "leaf_default": "a leaf of verl's YAML set to its own default",
    "leaf_variant": "a leaf set to another value of its type (a bool flipped, a number changed, a string extended)",
    "leaf_wrong_type": "a leaf set to a value of another type (text for a number or a bool, a list for a string)",
    "plus_leaf": "+ on a leaf verl's YAML holds",
    "field_noplus": "key= on a dataclass field verl's YAML leaves out",
    "field_plus": "+key= on a dataclass field verl's YAML leaves out",
    "free_plus": "+ on a new key below a dict- or Any-typed field, a {} leaf or a mapping verl reads with .get",
    "free_noplus": "key= on a new key below such a mapping",
    "delete": "~ on a leaf or a section verl's YAML holds",
    "delete_missing": "~ on a misspelt key",
    "misspelt_noplus": "key= on a misspelt leaf",
    "misspelt_plus": "+key= on a misspelt leaf",
    "wrong_section": "a real leaf under a section that lacks it (rollout.n, critic.clip_ratio_c), with or without +",
    "other_engine": "a key only the Megatron composition has (actor.megatron.*), with or without +",
    "pinned": "an override of :data:`PINNED` (one set after the drawn ones)",
}
#: One more set, judged after the drawn ones: overrides other seeds drew on which fsdpcfg and verl disagreed, kept so
#: that each fix and each class of disagreement left is judged by verl on every run (kind ``pinned``).
PINNED = [
    "+critic.optim.grad_clip=0.5",  # a dataclass field verl's YAML leaves out: was FC102
    "+critic.fsdp.use_dynamic_bsz=true",  # one verl does not overwrite for the critic
    "+actor_rollout_ref.model.load_tokenizer=true",
    "trainer.save_freq=-2",  # verl: save_freq > 0 or never; was FC103
    "actor_rollout_ref.actor.fsdp_config.fsdp_size=-2",  # verl: any negative size shards over all ranks; was FC103
    "+global_profiler.global_tool_config.nsys.controller_nsight_options.gpu-metrics-devices=all",  # nsys's: was FC102
    "~actor_rollout_ref.actor.profiler.tool_config",  # verl's in-place resolve stops: was silent
    "+critic.qat.group_size=16",  # critic.qat is no dict field of verl's (critic.fsdp.qat is): was silent
    "+actor_rollout_ref.actor.fsdp_config.qat.ode=1",  # qat is QATEngineConfig there: verl crashes; was silent
    "+distillation.teacher_models.teacher_model.inference.limt_images=1",  # a RolloutConfig there: was silent
    "+actor_rollout_ref.actor.qat.activationobserver=1",  # actor.qat is a QATConfig, no dict: was silent
    "+actor_rollout_ref.model.external_lib.rope_theta=0.5",
    "+actor_rollout_ref.ref.use_dynamic_bsz=false",
    "+algorithm.pf_ppo.foo_bar=true",
    "trainer.resume_from_path=7",  # verl asserts a string (a folder named 7 is '7')
]
#: names given to new keys below a free mapping
NEW_NAMES = ["rope_theta", "max_model_len", "address", "foo_bar", "custom_flag", "attn_implementation"]
_SENTINEL = object()


def _config_dir() -> str:
    import verl

    return os.path.join(os.path.dirname(verl.__file__), "trainer", "config")


def compose(overrides: list[str], config_name: str = "ppo_trainer") -> Any:
    """verl's own compose: its config folder, ``config_name``, the overrides (``main_ppo``'s ``@hydra.main``).
    Hydra is initialised on verl's config folder once per process (:func:`main`), as ``@hydra.main`` does."""
    from hydra import compose as hydra_compose

    return hydra_compose(config_name=config_name, overrides=list(overrides))


# -- 1. the key tree -----------------------------------------------------------------------------------------
@dataclasses.dataclass
class Tree:
    """verl's key tree as the draw and the verdicts read it (see the module doc)."""

    flat: dict[str, Any]  # verl's composed tree, flat (``_target_`` keys too)
    leaves: dict[str, Any]  # YAML leaf -> default as written
    sections: set[str]  # YAML sections (dotted prefixes of the leaves)
    fields: dict[str, tuple[list[str], bool, Any]]  # dataclass field -> (kinds, nested dataclass?, default)
    absent: list[str]  # dataclass fields verl's YAML leaves out
    free: list[str]  # mappings below which any key is verl's
    other_engine: list[str]  # leaves only ppo_megatron_trainer has


def read_tree() -> Tree:
    """Read verl's key tree from the installed verl (composes ``ppo_trainer`` and ``ppo_megatron_trainer``)."""
    from hydra.utils import get_class
    from omegaconf import OmegaConf

    from fsdpcfg.check.verl_opinion._worker import OPEN_MAPPINGS
    from fsdpcfg.keypath import flatten, prefixes
    from fsdpcfg.verlref.field_types import _kinds

    raw = OmegaConf.to_container(compose([]), resolve=False)
    flat = flatten(raw)
    leaves = {k: v for k, v in flat.items() if not k.endswith("._target_")}
    sections = prefixes(leaves)
    fields: dict[str, tuple[list[str], bool, Any]] = {}

    def visit(node: dict[str, Any], prefix: str, nested_cls: Any) -> None:
        target = node.get("_target_")
        cls = nested_cls
        if isinstance(target, str):
            try:
                cls = get_class(target)
            except Exception:
                cls = None
        hints: dict[str, Any] = {}
        if cls is not None and dataclasses.is_dataclass(cls):
            try:
                hints = typing.get_type_hints(cls)
            except Exception:
                hints = {}
            for f in dataclasses.fields(cls):
                if not f.init or f.name.startswith("_"):
                    continue
                kinds, nested = _kinds(hints.get(f.name, f.type))
                default = f.default if f.default is not dataclasses.MISSING else _SENTINEL
                fields[prefix + f.name] = (sorted(kinds), nested is not None, default)
        for k, v in node.items():
            if isinstance(v, dict) and v:
                sub = _kinds(hints[k])[1] if k in hints else None  # a field annotated with a dataclass
                visit(v, f"{prefix}{k}.", sub if dataclasses.is_dataclass(sub) else None)

    visit(raw, "", None)  # type: ignore[arg-type]
    absent = sorted(k for k in fields if k not in leaves and k not in sections)
    free = {k for k, v in leaves.items() if v == {}} | set(OPEN_MAPPINGS)
    free |= {k for k, (kinds, nested, _) in fields.items() if not nested and ({"dict", "any"} & set(kinds))}
    free = {k for k in free if not any(k.startswith(f + ".") for f in free)}  # the outermost only
    mega = flatten(OmegaConf.to_container(compose([], "ppo_megatron_trainer"), resolve=False))
    known = set(leaves) | sections
    other = sorted(
        k
        for k in mega
        if not k.endswith("._target_")
        and k not in known
        and not any(k.startswith(p + ".") for p in leaves)
        and not any(k.startswith(f + ".") for f in free)
        and k not in fields
    )
    return Tree(flat, leaves, sections, fields, absent, sorted(free), other)


# -- 2. the draw ---------------------------------------------------------------------------------------------
def _misspell(key: str, rng: random.Random, tree: Tree) -> str:
    head, _, leaf = key.rpartition(".")
    for _ in range(20):
        how = rng.randrange(4)
        if how == 0 and len(leaf) > 3:
            i = rng.randrange(len(leaf))
            new = leaf[:i] + leaf[i + 1 :]
        elif how == 1:
            new = leaf + "s"
        elif how == 2 and "_" in leaf:
            new = leaf.replace("_", "", 1)
        else:
            i = rng.randrange(max(1, len(leaf) - 1))
            new = leaf[:i] + leaf[i + 1 : i + 2] + leaf[i : i + 1] + leaf[i + 2 :]
        cand = f"{head}.{new}" if head else new
        if new and cand not in tree.leaves and cand not in tree.sections and cand not in tree.fields:
            return cand
    return f"{key}_x"


def _plain(v: Any) -> bool:
    return v is None or isinstance(v, (bool, int, float)) or (isinstance(v, str) and "${" not in v and v != "???")


def _variant(v: Any, kinds: list[str]) -> Any:
    if isinstance(v, bool):
        return not v
    if isinstance(v, int):
        return v * 2 if v else 1
    if isinstance(v, float):
        return v / 2 if v else 0.5
    if isinstance(v, str):
        return v + "_x"
    if "int" in kinds:
        return 2
    if "float" in kinds:
        return 0.5
    if "bool" in kinds:
        return True
    return "x"


def _wrong(v: Any) -> Any:
    if isinstance(v, (bool, int, float)):
        return "not_a_number" if not isinstance(v, bool) else "maybe"
    if isinstance(v, str):
        return [1, 2]
    return 7  # a list or a {} leaf


def _value_for(kinds: list[str], default: Any, rng: random.Random) -> Any:
    if default is not _SENTINEL and isinstance(default, (bool, int, float, str)) and default != "???":
        return default
    for kind, value in (("bool", True), ("int", 2), ("float", 0.5), ("str", "x"), ("list", [1])):
        if kind in kinds:
            return value
    return rng.choice([1, "x", True])


def draw(tree: Tree, seed: int, n_sets: int, per_set: int) -> list[list[dict[str, Any]]]:
    """``n_sets`` sets of ``per_set`` overrides ``{"text", "kind", "key"}`` (see the module doc)."""
    rng = random.Random(seed)
    base_keys = {b.split("=", 1)[0] for b in BASE}
    leaves = sorted(k for k in tree.leaves if k.count(".") >= 1 and k not in base_keys)
    plain = [k for k in leaves if _plain(tree.leaves[k])]
    set_leaves = [k for k in plain if tree.leaves[k] is not None]
    sections = sorted(s for s in tree.sections if "." in s)
    absent = [k for k in tree.absent if "." in k]
    deep = [k for k in leaves if k.count(".") >= 2]
    kinds = [k for k in KINDS if k != "pinned"]
    sets: list[list[dict[str, Any]]] = []
    for _ in range(n_sets):
        out: list[dict[str, Any]] = []
        used: list[str] = []
        while len(out) < per_set:
            kind = rng.choice(kinds)
            plus = ""
            if kind == "leaf_default":
                key = rng.choice(set_leaves)
                text = f"{key}={hydra_text(tree.leaves[key])}"
            elif kind in ("leaf_variant", "leaf_wrong_type"):
                key = rng.choice(plain)
                v = tree.leaves[key]
                kk = tree.fields.get(key, ([], False, None))[0]
                text = f"{key}={hydra_text(_variant(v, kk) if kind == 'leaf_variant' else _wrong(v))}"
            elif kind == "plus_leaf":
                key = rng.choice(plain)
                v = tree.leaves[key]
                text = f"+{key}={hydra_text(_variant(v, tree.fields.get(key, ([], False, None))[0]))}"
            elif kind in ("field_noplus", "field_plus"):
                key = rng.choice(absent)
                kk, _, default = tree.fields[key]
                plus = "+" if kind == "field_plus" else ""
                text = f"{plus}{key}={hydra_text(_value_for(kk, default, rng))}"
            elif kind in ("free_plus", "free_noplus"):
                key = f"{rng.choice(tree.free)}.{rng.choice(NEW_NAMES)}"
                plus = "+" if kind == "free_plus" else ""
                text = f"{plus}{key}={hydra_text(rng.choice([1, 0.5, True, 'x']))}"
            elif kind == "delete":
                key = rng.choice(leaves + sections)
                text = f"~{key}"
            elif kind == "delete_missing":
                key = _misspell(rng.choice(leaves), rng, tree)
                text = f"~{key}"
            elif kind in ("misspelt_noplus", "misspelt_plus"):
                real = rng.choice(plain)
                key = _misspell(real, rng, tree)
                plus = "+" if kind == "misspelt_plus" else ""
                text = f"{plus}{key}={hydra_text(_variant(tree.leaves[real], []))}"
            elif kind == "wrong_section":
                real = rng.choice(deep)
                parts = real.split(".")
                key = ".".join(parts[1:]) if rng.random() < 0.5 else ".".join(["critic", *parts[2:]])
                if key in tree.leaves or key in tree.sections or key in tree.fields or key.count(".") < 1:
                    continue
                plus = rng.choice(["", "+"])
                v = tree.leaves[real]
                text = f"{plus}{key}={hydra_text(v if _plain(v) else 1)}"
            else:  # other_engine
                key = rng.choice(tree.other_engine)
                plus = rng.choice(["", "+"])
                text = f"{plus}{key}=2"
            if any(key == u or key.startswith(u + ".") or u.startswith(key + ".") for u in used):
                continue
            used.append(key)
            out.append({"text": text, "kind": kind, "key": key})
        sets.append(out)
    sets.append([{"text": t, "kind": "pinned", "key": _key(t)} for t in PINNED])
    return sets


# -- 3. verl's verdicts --------------------------------------------------------------------------------------
def _apply(cfg: Any, text: str) -> None:
    """Hydra's own override step (what ``compose`` runs after the defaults list), on one override."""
    from hydra._internal.config_loader_impl import ConfigLoaderImpl
    from hydra.core.override_parser.overrides_parser import OverridesParser

    ConfigLoaderImpl._apply_overrides_to_config(OverridesParser.create().parse_overrides([text]), cfg)


def _err(e: BaseException) -> str:
    text = str(e).strip() or type(e).__name__
    return f"{type(e).__name__}: {text}"[:600]


def _tree_of(cfg: Any) -> Any:
    from omegaconf import OmegaConf

    return OmegaConf.to_container(cfg, resolve=False)


def _may_change_on_refusal(cfg: Any, text: str) -> bool:
    """True unless Hydra's override step is sure to leave ``cfg`` as it was when it refuses ``text``: it refuses
    a missing key, an existing one with ``+`` and a ``~`` on a missing one before it writes anything, but walks
    into a key whose value is not a mapping (a number, null, an interpolation) by making it ``{}`` first, and
    merges a mapping or list value part by part. (Composing ``BASE`` + the accepted overrides checks the result
    of each set.)"""
    from omegaconf import DictConfig

    if "=" in text and text.split("=", 1)[1].lstrip()[:1] in "[{":
        return True
    node = cfg
    for part in _key(text).split(".")[:-1]:
        child = node._get_node(part, validate_access=False) if isinstance(node, DictConfig) else None
        if child is None:
            return False
        if not isinstance(child, DictConfig) or child._is_interpolation() or child._is_none():
            return True
        node = child
    return False


def _built(base: Any, texts: list[str]) -> Any:
    cfg = copy.deepcopy(base)
    for t in texts:
        _apply(cfg, t)
    return cfg


def _key(text: str) -> str:
    return text.lstrip("+~").split("=", 1)[0]


def _named_culprit(error: str, remaining: list[str]) -> str | None:
    """The override whose key verl's dataclass error names (``unexpected keyword argument 'x'`` at
    ``full_key: a.b``), or None."""
    arg = re.search(r"unexpected keyword argument '(\w+)'", error)
    where = re.search(r"full_key: (\S+)", error)
    if not arg or not where:
        return None
    named = f"{where.group(1)}.{arg.group(1)}"
    hits = [t for t in remaining if _key(t) == named or _key(t).startswith(named + ".")]
    return hits[0] if len(hits) == 1 else None


def verdicts(tree: Tree, sets: list[list[dict[str, Any]]]) -> dict[str, Any]:
    """verl's verdict on every override of ``sets`` (the module doc, step 3), and the proof of each set."""
    from fsdpcfg.check.verl_opinion._worker import OPEN_MAPPINGS, _dataclass_field, verl_checks

    base = compose(BASE)
    stage, error, _ = verl_checks(copy.deepcopy(base), "ppo")
    assert stage is None, f"verl refuses the base: {stage}: {error}"
    assert _tree_of(_built(compose([]), BASE)) == _tree_of(base)
    # which keys verl reads, as fsdpcfg check --verl's worker tells them (fsdpcfg.check.verl_opinion._worker._base)
    base_keys = tree.flat
    open_ = OPEN_MAPPINGS + tuple(k for k, v in tree.flat.items() if v == {})

    def checks(texts: list[str]) -> tuple[str | None, str | None]:
        stage, error, _ = verl_checks(_built(base, texts), "ppo")
        return stage, error

    proofs = {"sets": 0, "composes": 0}
    for items in sets:
        # compose verdicts: Hydra's override step, one override after the other
        state = copy.deepcopy(base)
        accepted: list[str] = []
        for it in items:
            rebuild = _may_change_on_refusal(state, it["text"])
            try:
                _apply(state, it["text"])
            except Exception as e:
                it.update(verdict="refused", stage="compose", error=_err(e))
                if rebuild:
                    state = _built(base, accepted)
                continue
            accepted.append(it["text"])
        # the proof: verl's own compose of the command gives the same
        texts = [it["text"] for it in items]
        refused = [it for it in items if it.get("verdict") == "refused"]
        try:
            whole = compose(BASE + texts)
            assert not refused, f"verl composes {texts}, the override step refused {refused[0]['text']}"
            assert _tree_of(whole) == _tree_of(state), f"verl's compose of {texts} differs from the override step"
        except AssertionError:
            raise
        except Exception as e:
            assert refused and _err(e) == refused[0]["error"], (texts, _err(e), refused[:1])
            kept = _tree_of(compose(BASE + accepted))
            assert kept == _tree_of(state), f"verl's compose of {accepted} differs from the override step"
            proofs["composes"] += 1
        proofs["sets"] += 1
        proofs["composes"] += 1
        # verl's checks on what composed; a crash pinned to its override, left out, the rest checked again
        remaining = list(accepted)
        stage, error = verl_checks(state, "ppo")[:2]
        while stage is not None:
            assert error is not None
            culprit = _named_culprit(error, remaining)
            if culprit is None:
                lo, hi = 1, len(remaining)  # the shortest prefix that crashes
                while lo < hi:
                    mid = (lo + hi) // 2
                    if checks(remaining[:mid])[0] is None:
                        lo = mid + 1
                    else:
                        hi = mid
                culprit = remaining[lo - 1]
            it = next(i for i in items if i["text"] == culprit)
            it.update(verdict="crashes", stage=stage, error=error)
            remaining.remove(culprit)
            stage, error = checks(remaining)
        for it in items:
            if "verdict" in it:
                continue
            key = it["key"]
            read = (
                it["text"].startswith("~")
                or key in base_keys
                or any(key == p or key.startswith(p + ".") for p in open_)
                or _dataclass_field(key, base_keys)
            )
            it["verdict"] = "accepted" if read else "ignored"
    return proofs


def declared_kinds(tree: Tree, key: str) -> list[str]:
    """The kinds of value verl declares for ``key``: its dataclass field's annotation, else the type of its YAML
    default (none for a null or an interpolated default, or a key verl does not have)."""
    if key in tree.fields:
        return tree.fields[key][0]
    v = tree.leaves.get(key, _SENTINEL)
    if v is _SENTINEL or v is None or (isinstance(v, str) and ("${" in v or v == "???")):
        return []
    if isinstance(v, bool):
        return ["bool"]
    return [{int: "int", float: "float", str: "str", list: "list", dict: "dict"}.get(type(v), "any")]


def main(argv: list[str]) -> int:
    """Draw, judge, write ``{"sets", "proofs", "kinds", "tree", "cpu_s"}`` to ``argv[3]``."""
    seed, n_sets, per_set, out = int(argv[0]), int(argv[1]), int(argv[2]), Path(argv[3])
    t0 = time.process_time()
    import logging
    import warnings

    warnings.simplefilter("ignore")
    logging.disable(logging.WARNING)
    import verl  # noqa: F401  (its import is part of the cost)
    from hydra import initialize_config_dir

    with initialize_config_dir(config_dir=_config_dir(), version_base=None):
        tree = read_tree()
        sets = draw(tree, seed, n_sets, per_set)
        t1 = time.process_time()
        proofs = verdicts(tree, sets)
    for items in sets:
        for it in items:
            it["default"] = tree.leaves.get(it["key"], None)
            it["verl_kinds"] = declared_kinds(tree, it["key"])
    doc = {
        "sets": sets,
        "proofs": proofs,
        "tree": {
            "leaves": len(tree.leaves),
            "dataclass_fields": len(tree.fields),
            "absent_fields": len(tree.absent),
            "free_mappings": len(tree.free),
            "other_engine": len(tree.other_engine),
        },
        "cpu_s": {"tree_and_draw": round(t1 - t0, 2), "verdicts": round(time.process_time() - t1, 2)},
    }
    out.write_text(json.dumps(doc, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
