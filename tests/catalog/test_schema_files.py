"""JSON Schema files: fresh, described, and accepting exactly the files people write."""

from __future__ import annotations

import re
import typing
from pathlib import Path

import pytest
import yaml
from omegaconf import OmegaConf
from omegaconf._utils import get_yaml_loader
from pydantic import BaseModel

from fsdpcfg import catalog, paths
from fsdpcfg.catalog import schema_files
from fsdpcfg.compose import compose, recipe_kind

jsonschema = pytest.importorskip("jsonschema")

HEADER = re.compile(r"^# yaml-language-server: \$schema=(\S+)$")


def _load(path: Path):
    return yaml.load(path.read_text(), Loader=get_yaml_loader()) or {}


@pytest.fixture(scope="module")
def docs():
    return schema_files.build()


def test_checked_in_schemas_are_fresh():
    assert schema_files.stale() == [], "run `fsdpcfg schema` and commit schemas/"
    assert (schema_files.schemas_dir() / "fsdpcfg.schema.json").is_file()


def _models(root: type[BaseModel]) -> list[type[BaseModel]]:
    seen: list[type[BaseModel]] = []

    def visit(a) -> None:
        if isinstance(a, type) and issubclass(a, BaseModel):
            if a not in seen:
                seen.append(a)
                for info in a.model_fields.values():
                    visit(info.annotation)
        for x in typing.get_args(a):
            visit(x)

    visit(root)
    return seen


def test_every_field_of_every_schema_model_has_a_description():
    models = [m for root in schema_files._roots().values() for m in _models(root)]
    assert len(models) > 10
    missing = [
        f"{m.__name__}.{name}"
        for m in models
        for name, info in m.model_fields.items()
        if not (info.description or "").strip()
    ]
    assert missing == []
    undocumented = [m.__name__ for m in models if not (m.__doc__ or "").strip()]
    assert undocumented == []


def test_every_recipe_starts_with_the_schema_header():
    recipes = sorted(paths.recipes_dir().glob("*.yaml"))
    assert recipes
    for f in recipes:
        head = f.read_text().splitlines()[:3]
        refs = [m.group(1) for m in map(HEADER.match, head) if m]
        assert refs, f"{f.name}: add `# yaml-language-server: $schema=../schemas/fsdpcfg.schema.json` on line 2"
        stem = "fsdpcfg.sft" if recipe_kind(f.stem) == "sft" else "fsdpcfg"
        assert (f.parent / refs[0]).resolve() == (schema_files.schemas_dir() / f"{stem}.schema.json").resolve()


def test_shipped_recipes_and_group_options_validate_in_the_editor(docs):
    # each kind's files against its own schema (ppo: fsdpcfg.schema.json, sft: fsdpcfg.sft.schema.json)
    validators = {
        k: jsonschema.Draft202012Validator(docs["fsdpcfg.sft.schema.json" if k == "sft" else "fsdpcfg.schema.json"])
        for k in ("ppo", "sft")
    }
    files = [("ppo", paths.conf_dir() / "config.yaml"), ("sft", paths.conf_dir("sft") / "config.yaml")]
    files += [(recipe_kind(f.stem), f) for f in sorted(paths.recipes_dir().glob("*.yaml"))]
    files += [(o.kind, o.path) for o in catalog.all_options() if o.group != "recipe"]
    bad = {
        f"{f.name}:{'.'.join(map(str, e.absolute_path))}": e.message
        for k, f in files
        for e in validators[k].iter_errors(_load(f))
    }
    assert bad == {}


def test_editor_schema_catches_typos_and_wrong_types_but_allows_interpolations(docs):
    v = jsonschema.Draft202012Validator(docs["fsdpcfg.schema.json"])
    assert not list(
        v.iter_errors(
            {
                "defaults": [{"override /rollout": "vllm"}, "qwen_grpo", "_self_"],
                "actor_rollout_ref": {"rollout": {"n": "${data.x}", "prompt_length": 8}},
            }
        )
    )
    errors = list(v.iter_errors({"actor_rollout_ref": {"rollout": {"nn": 4}}}))
    assert errors and "nn" in errors[0].message
    assert list(v.iter_errors({"actor_rollout_ref": {"rollout": {"n": 0}}}))
    assert list(v.iter_errors({"actor_rollout_ref": {"actor": {"strategy": "fsdp3"}}}))


def test_strict_schema_accepts_a_resolved_config_and_requires_sections(docs):
    v = jsonschema.Draft202012Validator(docs["fsdpcfg.strict.schema.json"])
    cfg = OmegaConf.to_container(compose(["+recipe=qwen_grpo"]).cfg, resolve=True)
    assert [e.message for e in v.iter_errors(cfg)] == []
    assert any("required" in e.message for e in v.iter_errors({"trainer": {}}))
