"""One home per default (issue 13 item 2): ``explain``, ``show``, the JSON Schema and the schema's field defaults
state the composed default tree's value for every key, and the tree differs from verl's defaults only where
:mod:`fsdpcfg.catalog.deliberate_defaults` says why."""

from __future__ import annotations

import contextlib
import io
import json
from typing import Any

import pytest

from fsdpcfg import verlref
from fsdpcfg.catalog import deliberate_defaults, keyinfo, schema_files
from fsdpcfg.compose import defaults
from fsdpcfg.schema import RunConfig, keys
from fsdpcfg.schema.sft import SftRunConfig

KINDS = {"ppo": ("fsdpcfg.strict.schema.json", RunConfig), "sft": ("fsdpcfg.sft.strict.schema.json", SftRunConfig)}
_NONE = object()


@pytest.fixture(scope="module")
def schema_docs() -> dict[str, Any]:
    return schema_files.build()


def _json_prop(doc: dict[str, Any], key: str) -> dict[str, Any] | None:
    """The strict JSON Schema's property of ``key``; ``None`` when the path ends below a leaf of the schema."""
    node: dict[str, Any] | None = doc
    for part in key.split("."):
        if node is None:
            return None
        ref = node.get("$ref") or next((p["$ref"] for p in node.get("allOf", []) if "$ref" in p), None)
        if ref:
            node = doc["$defs"][ref.rsplit("/", 1)[-1]]
        props = node.get("properties")
        if props is None:
            return None  # below a leaf (a free mapping, or verl's section-copying interpolation)
        assert part in props, f"{key}: the JSON Schema has no property {part!r}"
        node = props[part]
    return node


def _same(a: Any, b: Any) -> bool:
    return a == b and type(a) is type(b) or (a == b and {type(a), type(b)} <= {int, float})


def _show_values() -> dict[str, Any]:
    """``fsdpcfg show --format json`` with no target: the RL tree's default run, flattened."""
    from fsdpcfg.cli.main import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["show", "--format", "json"]) == 0
    return verlref.flatten(json.loads(out.getvalue())["config"])


def test_show_prints_the_default_tree():
    shown = _show_values()
    resolved = defaults.resolved_tree("ppo")
    assert len(shown) > 800
    assert {k for k in shown} == set(resolved)
    bad = {k: (shown[k], resolved[k]) for k in shown if not _same(shown[k], resolved[k])}
    assert bad == {}
    # the tree states a machine-dependent default as written; show resolves it on this machine
    assert defaults.tree()["data.train_files"] == "${fsdpcfg_data:datasets/gsm8k/train.jsonl}"
    assert shown["data.train_files"].endswith("datasets/gsm8k/train.jsonl") and shown["data.train_files"][0] == "/"
    # the original complaint (issue 13): verl's values were shown as fsdpcfg's defaults
    assert shown["trainer.logger"] == ["console"] and shown["trainer.project_name"] == "fsdpcfg"


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_explain_json_schema_and_tree_agree_on_every_key(kind, schema_docs):
    doc = schema_docs[KINDS[kind][0]]
    tree = defaults.tree(kind)
    problems, checked, below_leaf = [], 0, []
    for key, value in tree.items():
        want = value if defaults.is_set(value) else _NONE
        prop = _json_prop(doc, key)
        if prop is None:
            below_leaf.append(key)
        else:
            got = prop.get("default", _NONE)
            if not (got is want is _NONE or _same(got, want)):
                problems.append(f"{key}: JSON Schema default {got!r} != tree {value!r}")
        info = keyinfo.key_info(key)
        assert info is not None, f"explain does not know {key}"
        got = info.default if kind == "ppo" else info.sft_default
        got = got if info.has(got) else _NONE
        if not (got is want is _NONE or _same(got, want)):
            problems.append(f"{key}: explain default {got!r} != tree {value!r}")
        checked += 1
    assert problems == [], "\n".join(problems)
    assert checked == len(tree) > (800 if kind == "ppo" else 150)
    # only keys that a composed config flattens out of one verl value (``mtp: ${oc.select:...}``) or a free mapping
    assert all(
        any(key.startswith(p + ".") for p in ("actor_rollout_ref.rollout.mtp", "actor_rollout_ref.rollout.qat"))
        for key in below_leaf
    ), below_leaf


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_schema_field_defaults_are_the_trees_or_verls_where_deliberate(kind):
    """A schema field's default is the tree's, except (a) a key the tree leaves ``???`` or sets to a
    machine-dependent path is required or has verl's default, (b) a key whose tree default differs from
    verl's on purpose (the deliberate table) keeps verl's default: the schema models verl's config, and a
    config that lacks the key reads as verl would read it (``fsdpcfg.rules`` fall back to it)."""
    leaves, _ = keys.model_index(KINDS[kind][1])
    tree = defaults.tree(kind)
    verl = deliberate_defaults._verl_flat(deliberate_defaults.COMPOSITION[kind], True)
    verl_raw = deliberate_defaults._verl_flat(deliberate_defaults.COMPOSITION[kind], False)
    raw = defaults.raw_tree(kind)
    deliberate = deliberate_defaults.DELIBERATE[kind]
    problems, checked = [], 0
    for key, info in leaves.items():
        if key not in tree:
            continue  # a key the tree does not hold (another engine's, a + key): the field's default applies
        ours = _NONE if info.is_required() else info.get_default(call_default_factory=True)
        value = tree[key]
        written = raw[key]
        if key in deliberate or defaults.machine_dependent(key, kind) or not defaults.is_set(value):
            ok = ours is _NONE or (key in verl and _same(ours, verl[key])) or _same(ours, value)
        elif isinstance(written, str) and "${" in written and written == verl_raw.get(key):
            ok = _same(ours, value) or _same(ours, verl[key])  # a copy of another key, written as verl does
        else:
            ok = _same(ours, value)
        if not ok:
            problems.append(f"{key}: schema field default {ours!r}, tree {value!r}, verl {verl.get(key, '-')!r}")
        checked += 1
    assert problems == [], "\n".join(problems)
    assert checked > (200 if kind == "ppo" else 80)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_difference_from_verl_is_deliberate(kind):
    diff = deliberate_defaults.differences(kind)
    table = deliberate_defaults.DELIBERATE[kind]
    unlisted = {k: v for k, v in diff.items() if k not in table}
    assert unlisted == {}, "fsdpcfg's default differs from verl's: add the key and the reason to DELIBERATE"
    stale = sorted(k for k in table if k not in diff)
    assert stale == [], "no longer a difference from verl's default: remove it from DELIBERATE"
    assert all(len(reason) > 20 for reason in table.values())


def test_differences_compare_values_not_spellings():
    diff = deliberate_defaults.differences("ppo")
    assert diff["trainer.logger"] == (["console"], ["console", "wandb"])
    assert diff["actor_rollout_ref.rollout.name"] == ("hf", "???")
    assert diff["data.val_files"] == ("${fsdpcfg_data:datasets/gsm8k/test.jsonl}", "~/data/rlhf/gsm8k/test.parquet")
    # same as verl: a copy verl writes alike (prometheus.served_model_name copies the model path in both)
    assert "actor_rollout_ref.rollout.prometheus.served_model_name" not in diff
    assert "actor_rollout_ref.actor.clip_ratio" not in diff
    assert all(not k.startswith("fsdpcfg.") for k in diff)


def test_explain_prints_the_trees_default_and_where_it_is_set():
    from fsdpcfg.cli.explain import key_page

    page = key_page("trainer.logger", [])
    assert "default:     [console]  (conf/config.yaml:" in page
    assert "sft default: [console, wandb]" in page
    assert "verl 0.9.1:  [console, wandb]" in page
    page = key_page("engine.strategy", [])
    assert "sft default: fsdp2" in page and "verl 0.9.1:  fsdp" in page


def test_reference_page_lists_every_deliberate_difference():
    from fsdpcfg.catalog import reference

    page = reference.render()
    section = page[page.index("## Defaults that differ from verl") : page.index("## Rules")]
    for kind, table in deliberate_defaults.DELIBERATE.items():
        for key in table:
            assert f"| `{key}` |" in section, (kind, key)
    assert "| `trainer.logger` | `[console]` | `[console, wandb]` | console only" in section
