"""Rows with provenance, their renderings, and what a command-line target names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from omegaconf import OmegaConf

from fsdpcfg import catalog
from fsdpcfg.compose import compose
from fsdpcfg.errors import UsageError


@pytest.fixture(scope="module")
def grpo():
    return compose(["+recipe=qwen_grpo", "data.train_batch_size=8"])


def test_rows_resolve_values_and_keep_sources(grpo):
    rows = {r.key: r for r in catalog.rows(grpo)}
    n = rows["actor_rollout_ref.rollout.n"]
    assert n.value == 4 and n.raw is None
    assert n.source.startswith("recipe=qwen_grpo (recipes/qwen_grpo.yaml:")
    pl = rows["actor_rollout_ref.rollout.prompt_length"]
    assert pl.value == 256 and pl.raw == "${data.max_prompt_length}"
    assert rows["data.train_batch_size"].source == "command line `data.train_batch_size=8`"
    assert rows["actor_rollout_ref.actor.strategy"].source.startswith("engine=fsdp2 (conf/engine/fsdp2.yaml:")
    assert rows["actor_rollout_ref.actor.optim.betas"].value == [0.9, 0.999]


def test_unresolvable_values_show_as_written():
    c = compose(["+recipe=qwen_grpo", "actor_rollout_ref.rollout.name=???"])
    rows = {r.key: r for r in catalog.rows(c)}
    assert rows["actor_rollout_ref.rollout.name"].value == "???"


def test_table_yaml_json_renderings(grpo):
    rows = catalog.rows(grpo, prefix="actor_rollout_ref.rollout")
    assert all(r.key.startswith("actor_rollout_ref.rollout.") for r in rows)
    text = catalog.rows_table(rows)
    lines = text.splitlines()
    assert lines[0].split() == ["KEY", "VALUE", "SOURCE"]
    col = lines[0].index("VALUE")
    n_line = next(ln for ln in lines if ln.startswith("actor_rollout_ref.rollout.n "))
    assert n_line[col:].startswith("4 ")  # aligned value column
    assert "from ${data.max_prompt_length}" in text
    doc = yaml.safe_load(catalog.rows_yaml(rows))
    assert doc["actor_rollout_ref"]["rollout"]["n"] == 4
    assert doc["actor_rollout_ref"]["rollout"]["val_kwargs"]["do_sample"] is False
    j = json.loads(catalog.rows_json(rows, {"recipe": "qwen_grpo"}))
    assert j["config"]["actor_rollout_ref"]["rollout"]["n"] == 4
    assert j["provenance"]["actor_rollout_ref.rollout.n"].startswith("recipe=qwen_grpo")


def test_format_value_is_inline_yaml():
    assert [catalog.format_value(v) for v in (None, True, 1e-5, [1, "a"], {}, "a: b", "x")] == [
        "null",
        "true",
        "1.0e-05",
        "[1, a]",
        "{}",
        "'a: b'",
        "x",
    ]


def test_split_args_recognises_names_files_and_overrides(tmp_path: Path):
    assert catalog.split_args(["qwen_grpo", "a.b=1", "~c"]) == (["+recipe=qwen_grpo", "a.b=1", "~c"], [], None)
    rec = tmp_path / "mine.yaml"
    rec.write_text("# @package _global_\ndefaults:\n  - qwen_grpo\n  - _self_\n")
    over, dirs, full = catalog.split_args([str(rec), "x=1"])
    assert over == ["+recipe=mine", "x=1"] and dirs == [tmp_path.resolve()] and full is None
    assert catalog.split_args([f"+recipe={rec}"])[0] == ["+recipe=mine"]
    overlay = tmp_path / "overlay.yaml"  # a few sections, no header: a recipe composed at the top level
    overlay.write_text("data:\n  train_batch_size: 4\n")
    assert catalog.split_args([str(overlay)]) == (["+recipe=overlay"], [tmp_path.resolve()], None)
    assert catalog.load([str(overlay)]).cfg.data.train_batch_size == 4
    dump = tmp_path / "dump.yaml"  # every section of the PPO tree: a full config, read as it is
    dump.write_text("actor_rollout_ref: {}\ndata:\n  train_batch_size: 4\nalgorithm: {}\ntrainer: {}\n")
    assert catalog.split_args([str(dump)]) == ([], [], dump)
    with pytest.raises(UsageError, match="more than one"):
        catalog.split_args(["qwen_grpo", "other"])
    with pytest.raises(UsageError, match="overrides"):
        catalog.split_args([str(dump), "a=1"])
    with pytest.raises(UsageError, match="no such recipe file"):
        catalog.split_args([str(tmp_path / "nope.yaml")])


def test_recipe_file_may_not_shadow_a_shipped_recipe(tmp_path: Path):
    f = tmp_path / "qwen_grpo.yaml"
    f.write_text("defaults:\n  - _self_\n")
    with pytest.raises(UsageError, match="shadows"):
        catalog.recipe_overrides(f)


def test_load_full_config_file(tmp_path: Path, grpo):
    dump = tmp_path / "dump.yaml"
    OmegaConf.save(grpo.cfg, dump, resolve=True)
    c = catalog.load([str(dump)])
    assert c.origin == "file"
    assert catalog.flat(c) == catalog.flat(grpo)
