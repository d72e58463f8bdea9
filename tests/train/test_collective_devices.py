"""Under NCCL every tensor handed to a collective must be on the rank's CUDA device (NCCL has no CPU tensors);
gloo takes CPU tensors. The CPU tests run gloo only, so a collective on a tensor built without ``device=`` passes
every test here and fails on the first GPU run (it did: the doctor's stage 3 and stage 5 reductions). This scans
the package for the whole kind: a function that creates a tensor without ``device=`` and passes that name to a
``dist`` collective."""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[2] / "fsdpcfg"
COLLECTIVES = {
    "all_reduce",
    "all_gather",
    "broadcast",
    "reduce",
    "reduce_scatter",
    "gather",
    "scatter",
    "all_to_all",
    "all_gather_into_tensor",
    "reduce_scatter_tensor",
}
FACTORIES = {"tensor", "zeros", "ones", "empty", "full", "arange"}


def _bare_tensors(fn: ast.AST) -> set[str]:
    out = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            f = node.value.func
            if (
                isinstance(f, ast.Attribute)
                and f.attr in FACTORIES
                and isinstance(f.value, ast.Name)
                and f.value.id == "torch"
                and not any(k.arg == "device" for k in node.value.keywords)
            ):
                out.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return out


def violations(tree: ast.AST) -> list[tuple[int, str]]:
    """``(line, name)`` of every collective call whose tensor argument was created without ``device=``."""
    found = []
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        bare = _bare_tensors(fn)
        for node in ast.walk(fn):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in COLLECTIVES
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "dist"
            ):
                for arg in node.args:
                    if isinstance(arg, ast.Name) and arg.id in bare:
                        found.append((node.lineno, arg.id))
    return found


def test_no_collective_on_a_tensor_without_a_device():
    bad = {}
    for f in sorted(PKG.rglob("*.py")):
        v = violations(ast.parse(f.read_text()))
        if v:
            bad[str(f.relative_to(PKG.parent))] = v
    assert not bad, f"collectives on tensors created without device= (fail under NCCL): {bad}"


def test_the_scan_finds_the_fault_it_is_for():
    src = (
        "def f(x):\n    t = torch.tensor([x], dtype=torch.float64)\n    dist.all_reduce(t)\n"
        "def g(x, d):\n    t = torch.tensor([x], device=d)\n    dist.all_reduce(t)\n"
    )
    assert violations(ast.parse(src)) == [(3, "t")]


def test_collective_device_follows_the_backend(monkeypatch):
    import torch
    import torch.distributed as dist

    from fsdpcfg.train.loop import collective_device

    monkeypatch.setattr(dist, "get_backend", lambda *a: "gloo")
    assert collective_device() == torch.device("cpu")
    monkeypatch.setattr(dist, "get_backend", lambda *a: "nccl")
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    assert collective_device() == torch.device("cuda", 0)
