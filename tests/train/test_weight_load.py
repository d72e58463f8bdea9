"""The one weight-load loop (:func:`fsdpcfg.train.rollout.load.load_buckets`): copies, casts, checks."""

import ast
from pathlib import Path

import pytest
import torch

from fsdpcfg.train.rollout.load import load_buckets

ROOT = Path(__file__).resolve().parents[2] / "fsdpcfg"


def _targets():
    a, b = torch.zeros(2, 3, dtype=torch.float16), torch.zeros(4)
    shared = [torch.zeros(4), torch.zeros(4)]
    return {"a": [a], "b": [b], "s": shared}


def test_copies_and_casts_every_streamed_tensor_into_each_target():
    t = _targets()
    src = torch.arange(6.0).reshape(2, 3)
    buckets = [[("a", src)], [("b", torch.ones(4)), ("s", torch.full((4,), 7.0))]]
    loaded = load_buckets(buckets, t.get, expected=t)
    assert loaded == {"a", "b", "s"}
    assert t["a"][0].dtype == torch.float16 and t["a"][0].tolist() == [[0, 1, 2], [3, 4, 5]]
    assert t["b"][0].tolist() == [1, 1, 1, 1]
    assert [x.tolist() for x in t["s"]] == [[7.0] * 4, [7.0] * 4]
    assert buckets == [[], []]  # drained: the stream's tensors are not kept


def test_unknown_name_shape_mismatch_and_missing_are_errors():
    t = _targets()
    with pytest.raises(RuntimeError, match="weight sync: the replica has no tensor named 'zz'"):
        load_buckets([[("zz", torch.zeros(1))]], t.get, expected=t)
    with pytest.raises(RuntimeError, match=r"b has shape \(3,\), the replica expects \(4,\)"):
        load_buckets([[("b", torch.zeros(3))]], t.get, expected=t, unknown=lambda n: "x")
    with pytest.raises(RuntimeError, match=r"no base weights arrived for \['a', 's'\] \(2 tensors\)"):
        load_buckets([[("b", torch.zeros(4))]], t.get, expected=t, what="base weights")
    # a tied copy may be absent
    got = load_buckets(
        [[("a", torch.zeros(2, 3)), ("b", torch.zeros(4))]], t.get, expected=t, may_be_absent=lambda k, _: k == "s"
    )
    assert got == {"a", "b"}


def test_no_other_module_copies_a_weight_stream_itself():
    """The loop lives once: no other module iterates ``drain(...)`` (the stream's consumer side)."""
    users = []
    for path in ROOT.rglob("*.py"):
        if path.name == "load.py" and path.parent.name == "rollout":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.For) and isinstance(node.iter, ast.Call):
                f = node.iter.func
                if (f.id if isinstance(f, ast.Name) else getattr(f, "attr", None)) == "drain":
                    users.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert users == []
