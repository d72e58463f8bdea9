"""The catalogue is read from the config tree: options, defaults and descriptions, no hand-kept list."""

from __future__ import annotations

from pathlib import Path

from fsdpcfg import catalog, paths


def test_every_group_option_is_listed_with_its_first_comment_line():
    options = catalog.all_options()
    files = {(o.group, o.name) for o in options}
    for g in catalog.groups("ppo"):
        for f in (paths.conf_dir("ppo") / g).glob("*.yaml"):
            assert (g, f.stem) in files
    fsdp2 = next(o for o in options if o.group == "engine" and o.name == "fsdp2")
    assert fsdp2.description.startswith("FSDP2: torch.distributed.fsdp.fully_shard")
    assert fsdp2.is_default and fsdp2.kind == "ppo"


def test_every_shipped_option_and_recipe_has_a_description():
    missing = [str(o.path) for o in [*catalog.all_options(), *catalog.recipes()] if not o.description]
    assert missing == [], f"add a one-line comment at the top of: {missing}"


def test_recipes_listed_with_kind_and_description():
    r = {o.name: o for o in catalog.recipes()}
    assert r["qwen_grpo"].description == "GRPO on GSM8K with a Qwen2-architecture model."
    assert r["qwen_grpo"].kind == "ppo"


def test_root_defaults_mark_exactly_one_option_per_group():
    defaults = catalog.root_defaults("ppo")
    assert defaults["engine"] == "fsdp2" and defaults["launcher"] == "native"
    for g in catalog.groups("ppo"):
        assert sum(o.is_default for o in catalog.group_options(g)) == 1, g


def test_directives_and_blank_comment_lines_are_skipped(tmp_path: Path):
    f = tmp_path / "x.yaml"
    f.write_text(
        "# @package _global_\n# yaml-language-server: $schema=s.json\n#\n# What it does.\n# More.\na: 1\n# not this\n"
    )
    assert catalog.describe(f) == "What it does."
    assert catalog.comment_block(f) == ["What it does.", "More."]
    (tmp_path / "y.yaml").write_text("a: 1\n")
    assert catalog.describe(tmp_path / "y.yaml") == ""


def test_ordered_choices_put_recipe_first_then_tree_order():
    got = catalog.ordered_choices({"launcher": "native", "engine": "fsdp2", "recipe": "qwen_grpo"})
    assert list(got) == ["recipe", "engine", "launcher"]
