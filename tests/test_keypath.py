"""The one dotted-key walker (:mod:`fsdpcfg.keypath`): its semantics, and a guard that no other module walks
dotted keys over dicts itself."""

import ast
from pathlib import Path

import pytest

from fsdpcfg import keypath

ROOT = Path(__file__).resolve().parents[1] / "fsdpcfg"


def test_get_missing_null_and_lists():
    tree = {"a": {"b": {"c": 3}, "n": None, "l": [{"x": 1}]}}
    assert keypath.get(tree, "a.b.c") == 3
    assert keypath.get(tree, "a.b") == {"c": 3}
    assert keypath.get(tree, "a.n", "dflt") is None  # null is present
    assert keypath.get(tree, "a.zz", "dflt") == "dflt"
    assert keypath.get(tree, "a.b.c.d", 7) == 7  # below a leaf: missing
    assert keypath.get(tree, "a.l.0", 8) == 8  # a list is a leaf, never indexed
    with pytest.raises(KeyError, match="a.zz"):
        keypath.get(tree, "a.zz")
    assert keypath.has(tree, "a.n") and not keypath.has(tree, "a.q")


def test_set_delete_flatten_unflatten():
    tree: dict = {"a": {"b": 1}}
    keypath.set(tree, "a.c.d", 2)
    keypath.set(tree, "a.b", 5)
    assert tree == {"a": {"b": 5, "c": {"d": 2}}}
    with pytest.raises(TypeError, match="cannot set a.b.x: b holds int"):
        keypath.set(tree, "a.b.x", 1)
    assert keypath.delete(tree, "a.c.d") is True and tree == {"a": {"b": 5, "c": {}}}
    assert keypath.delete(tree, "a.q.r") is False
    flat = keypath.flatten({"a": {"b": 1, "e": {}, "l": [1, 2]}, "n": None})
    assert flat == {"a.b": 1, "a.e": {}, "a.l": [1, 2], "n": None}
    assert keypath.unflatten(flat) == {"a": {"b": 1, "e": {}, "l": [1, 2]}, "n": None}
    assert keypath.prefixes(["a.b.c", "x"]) == {"a", "a.b"}


#: functions the guard below finds that are not dotted-key walkers over config dicts, with the reason.
ALLOWED = {
    "keypath.py:get": "the walker",
    "keypath.py:set": "the walker",
    "keypath.py:flatten": "the walker",
    "compose/flat.py:rows_yaml": "indents YAML lines by the parts two sorted keys share; walks no dict",
    "compose/flat.py:_leaves": "walks a DictConfig's nodes (provenance of each node), not plain dicts",
    "train/lora/names.py:base_name": "rewrites a parameter name (a string), not a config key",
    "check/to_verl.py:_drop_unlisted_nulls": "a tree filter keyed by the dotted key of each node (verl's null keys)",
    "check/to_verl.py:_drop_verl_defaults": "a tree filter keyed by each node's provenance",
    "schema/sft.py:walk": "walks pydantic models' fields (schema defaults), not a dict",
    "schema/validate.py:walk": "the validator's one pass over the tree (classifies every key as it goes)",
    "verlref/field_types.py:visit": "walks verl's tree beside its config dataclasses (each node's class and hints)",
}


def _splits_on_dot(fn: ast.AST) -> bool:
    return any(
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr in ("split", "rsplit", "partition", "rpartition")
        and n.args
        and isinstance(n.args[0], ast.Constant)
        and n.args[0].value == "."
        for n in ast.walk(fn)
    )


def _descends(fn: ast.AST) -> bool:
    """``node = node[part]`` / ``node = node.setdefault(part, {})`` / ``node = node.get(part)``."""
    for n in ast.walk(fn):
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
            t, v = n.targets[0].id, n.value
            if isinstance(v, ast.Subscript) and isinstance(v.value, ast.Name) and v.value.id == t:
                return True
            if (
                isinstance(v, ast.Call)
                and isinstance(v.func, ast.Attribute)
                and v.func.attr in ("setdefault", "get")
                and isinstance(v.func.value, ast.Name)
                and v.func.value.id == t
            ):
                return True
    return False


def _flattens(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Recursion that builds ``f"{prefix}.{k}"`` keys: a flattener."""
    recursive = any(
        isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == fn.name for n in ast.walk(fn)
    )
    dotted = any(
        isinstance(n, ast.JoinedStr) and any(isinstance(v, ast.Constant) and "." in str(v.value) for v in n.values)
        for n in ast.walk(fn)
    )
    return recursive and dotted


def test_no_second_dotted_key_walker():
    found = set()
    for path in sorted(ROOT.rglob("*.py")):
        for fn in ast.walk(ast.parse(path.read_text())):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and (
                (_splits_on_dot(fn) and _descends(fn)) or _flattens(fn)
            ):
                found.add(f"{path.relative_to(ROOT).as_posix()}:{fn.name}")
    assert sorted(found - set(ALLOWED)) == [], "walk dotted keys with fsdpcfg.keypath (get/set/delete/flatten)"
    assert sorted(set(ALLOWED) - found) == [], "an allowed function is gone or renamed: drop it from ALLOWED"
