"""JSON Schema files for editors, exported from the Pydantic models (``model_json_schema()``).

Two files per config layout, written to ``schemas/``:

* ``fsdpcfg.schema.json`` -- for the files people edit: recipes and group options. Those are *partial*
  configs (``@package _global_``: keys at their full path, any subset of them), so the editor schema
  has no ``required`` keys; it still forbids unknown keys (``additionalProperties: false``) so a typo is
  underlined. Every leaf also accepts a Hydra interpolation (``${data.max_prompt_length}``) or ``???``,
  and the root accepts Hydra's ``defaults:`` list. Recipes point at it with their first lines::

      # @package _global_
      # yaml-language-server: $schema=../schemas/fsdpcfg.schema.json

* ``fsdpcfg.strict.schema.json`` -- the models' schema as it is: a complete, resolved config (a dumped
  config, ``fsdpcfg export`` output) with its required keys and exact types.

Every ``default`` is the composed default tree's value (:mod:`fsdpcfg.compose.defaults`): what a run gets
when the key is not set, as ``fsdpcfg show`` and ``fsdpcfg explain`` print it.

A test regenerates both in memory and compares them with the checked-in files; ``fsdpcfg schema`` rewrites
them after a model changes.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from fsdpcfg import paths

#: Schema dialect of Pydantic 2's output.
DIALECT = "https://json-schema.org/draft/2020-12/schema"
#: A value Hydra fills in later: an interpolation or the missing marker.
HYDRA_VALUE = {
    "type": "string",
    "pattern": r"^(\$\{.*\}|\?\?\?)$",
    "description": "a Hydra interpolation (${other.key}) or ??? (must be set later)",
}
#: Hydra's defaults list: `- group: option`, `- override /group: option`, `- parent_recipe`, `- _self_`.
DEFAULTS_LIST = {
    "type": "array",
    "description": "Hydra defaults list: `override /GROUP: OPTION` picks a group option, a recipe name "
    "(`- qwen_grpo`) extends that recipe, `_self_` places this file's own keys",
    "items": {
        "anyOf": [
            {"type": "string"},
            {
                "type": "object",
                "minProperties": 1,
                "maxProperties": 1,
                "additionalProperties": {"type": ["string", "null"]},
            },
        ]
    },
}


def schemas_dir() -> Path:
    """Return the folder of the schema files: the repository's ``schemas/`` in a checkout (next to ``conf/`` and
    ``recipes/``), else the copy an installed package carries (``fsdpcfg/_tree/schemas``, written by setup.py)."""
    checkout = paths.REPO_DIR / "schemas"
    if (paths.REPO_DIR / "conf" / "config.yaml").is_file():
        return checkout
    return paths.PACKAGE_DIR / "_tree" / "schemas"


def output_dir() -> Path:
    """Where ``fsdpcfg schema`` writes (and ``--check`` reads) by default: the repository's ``schemas/`` in a
    checkout; from an installed package, ``schemas/`` in the current folder (a project's own copy for its
    editor), never the installed package itself."""
    if (paths.REPO_DIR / "conf" / "config.yaml").is_file():
        return paths.REPO_DIR / "schemas"
    return Path.cwd() / "schemas"


def _roots() -> dict[str, Any]:
    """Return ``{file stem: root model}``; a new config layout (the SFT tree) adds its root model here."""
    from fsdpcfg.schema import RunConfig
    from fsdpcfg.schema.sft import SftRunConfig

    return {"fsdpcfg": RunConfig, "fsdpcfg.sft": SftRunConfig}


#: file stem -> the verl composition(s) whose keys the tree also accepts (``fsdpcfg.verlref``): ``ppo`` is the
#: union of main_ppo's engines.
VERL_KEYS = {"fsdpcfg": "ppo", "fsdpcfg.sft": "sft_trainer_engine"}
_JSON_TYPES = (
    (bool, "boolean"),
    (int, "integer"),
    (float, "number"),
    (str, "string"),
    (list, "array"),
    (dict, "object"),
)


def _verl_leaf(default: Any) -> dict[str, Any]:
    """The JSON Schema of a verl key the models do not type: the JSON type of verl's default (an integer
    default also takes a number, a null default any value)."""
    prop: dict[str, Any] = {"description": f"verl {{version}} key; verl's default: {json.dumps(default)}"}
    for t, name in _JSON_TYPES:
        if default is not None and isinstance(default, t):
            prop["type"] = ["integer", "number"] if name == "integer" else name
            break
    return prop


def _add_verl_keys(doc: dict[str, Any], config: str) -> None:
    """Add to ``doc`` (a model's ``model_json_schema()``) every key of verl's ``config`` that the models do not
    type, so that the schema accepts verl's whole tree as the config does (:mod:`fsdpcfg.compose.verl_base`):
    new sections inline (``additionalProperties: false``), leaves typed by verl's default. A section shared by
    several roles (one ``$defs`` entry, e.g. ``FSDPConfig``) gets the union of their keys."""
    from fsdpcfg import verlref

    defs = doc.setdefault("$defs", {})
    raw = verlref.defaults(config, resolved=False)
    resolved = verlref.defaults(config)

    def section(prop: dict[str, Any]) -> dict[str, Any] | None:
        ref = prop.get("$ref") or next((p["$ref"] for p in prop.get("allOf", []) if "$ref" in p), None)
        if ref:
            return defs[ref.rsplit("/", 1)[-1]]
        return prop if prop.get("type") == "object" and "properties" in prop else None

    for key in sorted(raw):
        parts = key.split(".")
        node = doc
        for i, part in enumerate(parts):
            props = node.setdefault("properties", {})
            if i == len(parts) - 1:
                if part not in props:
                    v = resolved.get(key)
                    props[part] = _verl_leaf(None if isinstance(v, str) and "${" in v else v)
                break
            if part not in props:
                props[part] = {
                    "type": "object",
                    "properties": {},
                    "additionalProperties": False,
                    "description": f"verl {{version}} section {'.'.join(parts[: i + 1])}",
                }
            nxt = section(props[part])
            if nxt is None:
                break  # a typed leaf of the models (a mapping field, a value verl also sets to a section)
            node = nxt


#: file stem -> the config kind whose default tree gives the schema's ``default`` values.
KINDS = {"fsdpcfg": "ppo", "fsdpcfg.sft": "sft"}


def _ref_name(prop: dict[str, Any]) -> str | None:
    ref = prop.get("$ref") or next((p["$ref"] for p in prop.get("allOf", []) if "$ref" in p), None)
    return ref.rsplit("/", 1)[-1] if ref else None


def _inline(doc: dict[str, Any], names: set[str]) -> None:
    """Replace every use of the ``$defs`` models ``names`` by a copy of the model (one per use), and drop them."""
    defs = doc["$defs"]
    models = [doc, *defs.values()]
    while models:
        model = models.pop()
        for name, prop in list(model.get("properties", {}).items()):
            ref = _ref_name(prop)
            if ref in names:
                extra = {k: v for k, v in prop.items() if k not in ("$ref", "allOf")}
                prop = model["properties"][name] = {**copy.deepcopy(defs[ref]), **extra}
            if "properties" in prop:
                models.append(prop)
    for name in names:
        del defs[name]


def _set_defaults(doc: dict[str, Any], kind: str) -> None:
    """Set every property's ``default`` to the composed default tree's value (:mod:`fsdpcfg.compose.defaults`,
    the one home of defaults); a value that must be set (``???``) has no ``default``. A property the tree does
    not reach keeps the models' default (verl's). A ``$defs`` model two keys share (``FSDPConfig`` for the
    actor and the reference) whose keys default differently per role is inlined, one copy per role."""
    from fsdpcfg.compose import defaults

    tree = defaults.tree(kind)
    while True:
        defs = doc.get("$defs", {})
        owner: dict[int, tuple[str, Any]] = {}
        found: list[tuple[dict[str, Any], Any]] = []
        conflicts: set[str] = set()
        for key, value in tree.items():
            node: dict[str, Any] | None = doc
            parts = key.split(".")
            model_name = None
            for part in parts[:-1]:
                prop = (node or {}).get("properties", {}).get(part)
                if prop is None:
                    node = None
                    break
                model_name = _ref_name(prop)
                node = defs[model_name] if model_name else (prop if "properties" in prop else None)
            prop = (node or {}).get("properties", {}).get(parts[-1])
            if prop is None or _is_section(prop):
                continue
            seen = owner.setdefault(id(prop), (key, value))
            if seen[1] != value and model_name is not None:
                conflicts.add(model_name)
            found.append((prop, value))
        if not conflicts:
            break
        _inline(doc, conflicts)
    for prop, value in found:
        if defaults.is_set(value):
            prop["default"] = value
        else:
            prop.pop("default", None)


def _with_version(doc: Any) -> Any:
    from fsdpcfg import verlref

    return json.loads(json.dumps(doc).replace("{version}", verlref.VERL_VERSION))


def _is_section(prop: dict[str, Any]) -> bool:
    return "$ref" in prop or any("$ref" in p for p in prop.get("allOf", []))


def editor_schema(strict: dict[str, Any], title: str) -> dict[str, Any]:
    """Return the partial editor schema made from a model's ``model_json_schema()`` (see module doc)."""
    doc = copy.deepcopy(strict)
    models = [doc, *doc.get("$defs", {}).values()]
    while models:
        model = models.pop()
        model.pop("required", None)
        for name, prop in list(model.get("properties", {}).items()):
            if _is_section(prop):
                continue
            if prop.get("type") == "object" and "properties" in prop:
                models.append(prop)  # an inline section (verl's keys, _add_verl_keys)
                continue
            core = {k: v for k, v in prop.items() if k not in ("title", "description", "default")}
            wrapped = {k: prop[k] for k in ("title", "description", "default") if k in prop}
            wrapped["anyOf"] = [core, {"$ref": "#/$defs/HydraValue"}]
            model["properties"][name] = wrapped
    doc.setdefault("$defs", {})["HydraValue"] = HYDRA_VALUE
    doc["properties"] = {"defaults": DEFAULTS_LIST, **doc["properties"]}
    return {"$schema": DIALECT, "title": title, **{k: v for k, v in doc.items() if k != "title"}}


def build() -> dict[str, dict[str, Any]]:
    """Return ``{file name: schema document}`` for every file of ``schemas/``."""
    out: dict[str, dict[str, Any]] = {}
    for stem, model in _roots().items():
        strict = model.model_json_schema()
        _add_verl_keys(strict, VERL_KEYS[stem])
        _set_defaults(strict, KINDS[stem])
        strict = _with_version(strict)
        desc = strict.get("description", "")
        out[f"{stem}.schema.json"] = editor_schema(
            strict, f"{stem} recipe or group option (partial config; {model.__name__})"
        )
        out[f"{stem}.strict.schema.json"] = {
            "$schema": DIALECT,
            **strict,
            "title": f"{stem} complete config ({model.__name__})",
            "description": desc,
        }
    return out


def render(doc: dict[str, Any]) -> str:
    """Serialise a schema the way the checked-in files are written (stable, 2-space indent, newline)."""
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def stale(folder: Path | None = None) -> list[str]:
    """Return the schema files under ``folder`` (default ``schemas/``) that are missing or out of date."""
    folder = Path(folder or output_dir())
    return [
        name
        for name, doc in build().items()
        if not (folder / name).is_file() or (folder / name).read_text() != render(doc)
    ]


def write(folder: Path | None = None) -> list[Path]:
    """Write every schema file under ``folder`` (default ``schemas/``); return the paths written."""
    folder = Path(folder or output_dir())
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, doc in build().items():
        (folder / name).write_text(render(doc))
        written.append(folder / name)
    return written
