"""The kept first-stage tree (fsdpcfg.compose.tree_cache) and the uncopied ConfigStore (fsdpcfg.compose._fasthydra)
compose exactly what Hydra composes from scratch: the same tree, the same Hydra node, the same error, for every
recipe and for override sets of every kind."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from omegaconf import OmegaConf

from fsdpcfg.compose import GROUPS, _fasthydra, available_options, compose, tree_cache
from fsdpcfg.errors import ConfigError, UsageError

#: Hydra node entries that differ between any two composes (a new temporary search folder each time)
_VOLATILE = ("searchpath", "runtime")


def _outcome(overrides: list[str], *, cached: bool, monkeypatch) -> tuple:
    """(tree, Hydra node) of a compose, or (error class, message, key) of its refusal."""
    if not cached:  # Hydra as it is: the whole compose, and its copy of the ConfigStore
        monkeypatch.setattr(tree_cache, "split", lambda parsed, groups: None)
        _fasthydra.uninstall()
    try:
        c = compose(overrides)
    except (ConfigError, UsageError) as e:
        return (type(e).__name__, e.message, e.key, e.fix)
    finally:
        monkeypatch.undo()
        _fasthydra.install()
    hydra = OmegaConf.to_container(c.hydra_cfg, resolve=False) if c.hydra_cfg is not None else {}
    for k in _VOLATILE:
        hydra.pop(k, None)
    return (
        OmegaConf.to_container(c.cfg, resolve=False),
        hydra,
        c.choices,
        c.added,
        c.deleted,
        c.pruned,
    )


def _same(overrides: list[str], monkeypatch) -> None:
    fresh = _outcome(overrides, cached=False, monkeypatch=monkeypatch)
    first = _outcome(overrides, cached=True, monkeypatch=monkeypatch)  # fills the kept tree (or uses one)
    again = _outcome(overrides, cached=True, monkeypatch=monkeypatch)  # from the kept tree
    assert first == fresh, overrides
    assert again == fresh, overrides


@pytest.mark.parametrize("recipe", [None, *available_options("recipe")])
def test_every_recipe_composes_the_same_from_a_kept_tree(recipe, monkeypatch):
    base = [] if recipe is None else [f"+recipe={recipe}"]
    _same(base, monkeypatch)
    _same(
        [*base, "data.train_batch_size=8", "+actor_rollout_ref.actor.new_key=1", "~trainer.project_name"], monkeypatch
    )


@pytest.mark.parametrize(
    "overrides",
    [
        # group choices after dotted keys: Hydra applies group choices first, whatever the order
        ["data.train_batch_size=8", "+recipe=qwen_grpo", "engine=fsdp"],
        # a dict on a group's key after a dotted key: the order matters, composed whole
        ["+recipe=qwen_grpo", "data.max_prompt_length=64", "+data={a: 1}"],
        ["+recipe=qwen_grpo", "+data={a: 1}", "data.a=2"],
        # errors: an unknown key, a wrong type, `+` on a key that exists, deleting a key that does not
        ["+recipe=qwen_grpo", "data.no_such_key=1"],
        ["+recipe=qwen_grpo", "data.train_batch_size=abc"],
        ["+recipe=qwen_grpo", "+data.train_batch_size=4"],
        ["+recipe=qwen_grpo", "~data.no_such_key"],
        ["+recipe=qwen_grpo", "engine=bogus", "data.train_batch_size=4"],
        ["+recipe=qwen_grpo", "engine=0"],  # a plain ValueError of Hydra's, kept and raised again
        ["+recipe=qwen_grpo", "hydra.job.name=x", "data.train_batch_size=4"],
        ["+recipe=qwen_sft", "data.micro_batch_size_per_gpu=2"],
        # keys that are not groups are config overrides too, whether or not they have a dot (Hydra's
        # Overrides.__init__: a dict value or a key that is no group): composed from the kept tree
        ["+recipe=qwen_grpo", "+top_level=1", "data.train_batch_size=4"],
        ["data.train_batch_size=4", "+top_level=1", "engine=fsdp"],
        ["+recipe=qwen_grpo", "nogroup=x"],
        ["+recipe=qwen_grpo", "~fsdpcfg", "data.train_batch_size=4"],
        ["+recipe=qwen_grpo", "fsdpcfg=5"],
        ["+recipe=qwen_grpo", "trainer=5"],  # a group: Hydra's "must be a string or a list"
        ["+recipe=qwen_grpo", "sft=x"],  # a group folder no defaults list names
        ["+recipe=qwen_grpo", "data.train_batch_size=4", "trainer={a: 1}"],
        ["+recipe=qwen_grpo", "trainer={a: 1}", "trainer.a=2"],
        ["+recipe=qwen_grpo", "data.train_batch_size=4", "hydra.job.name=x"],  # hydra.* after: composed whole
    ],
)
def test_order_and_errors_are_hydra_s(overrides, monkeypatch):
    _same(overrides, monkeypatch)


def test_a_changed_recipe_file_is_composed_again(tmp_path: Path, monkeypatch):
    f = tmp_path / "mine.yaml"
    f.write_text("# @package _global_\ndefaults:\n  - qwen_grpo\n  - _self_\ndata:\n  train_batch_size: 8\n")
    assert compose([f"+recipe={f}"]).cfg.data.train_batch_size == 8
    f.write_text("# @package _global_\ndefaults:\n  - qwen_grpo\n  - _self_\ndata:\n  train_batch_size: 16\n")
    assert compose([f"+recipe={f}"]).cfg.data.train_batch_size == 16


def test_a_kept_tree_is_never_handed_out(monkeypatch):
    a = compose(["+recipe=qwen_grpo"])
    a.cfg.data.train_batch_size = 12345
    assert compose(["+recipe=qwen_grpo"]).cfg.data.train_batch_size != 12345


_OPTION = st.builds(
    lambda g, o: f"{g}={o}",
    st.sampled_from([*GROUPS, "+recipe"]),
    st.sampled_from(sorted({o for g in GROUPS for o in available_options(g)}) + ["bogus"]),
)
_DOTTED = st.builds(
    lambda op, k, v: f"{op}{k}={v}" if op != "~" else f"~{k}",
    st.sampled_from(["", "", "+", "++", "~"]),
    st.sampled_from(
        [
            "data.train_batch_size",
            "data.max_prompt_length",
            "actor_rollout_ref.rollout.n",
            "actor_rollout_ref.actor.ppo_mini_batch_size",
            "trainer.logger",
            "trainer.project_name",
            "fsdpcfg.launcher",
            "data.nope",
            "critic.optim.lr",
        ]
    ),
    st.sampled_from(["1", "8", "x", "null", "[console]", "{a: 1}", "${data.train_batch_size}", "native"]),
)


_TOP = st.sampled_from(
    ["+top_level=1", "nogroup=x", "~fsdpcfg", "fsdpcfg=5", "++other=[1, 2]", "data={a: 1}", "sft=x", "~data"]
)


@pytest.mark.slow
@settings(max_examples=100, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.one_of(_OPTION, _DOTTED, _DOTTED, _TOP), max_size=5))
def test_random_override_sets_compose_the_same(overrides):
    mp = pytest.MonkeyPatch()
    try:
        _same(["+recipe=qwen_grpo", *overrides], mp)
    finally:
        mp.undo()
