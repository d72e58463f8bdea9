"""The package tree is the pipeline: no module imports another package's private module, and the torch-free
stages (check, rules, plan, the patch declarations) import no torch."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import fsdpcfg

PKG = Path(fsdpcfg.__file__).resolve().parent


def _imported_modules(tree: ast.AST, module: str) -> list[tuple[int, str]]:
    """``(line, dotted name)`` of every module ``tree`` (the source of ``module``) imports, submodules named in
    ``from X import y`` included (``y`` may be a module)."""
    out: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolve against the importing module's package
                parts = module.split(".")[: -node.level]
                base = ".".join([*parts, base] if base else parts)
            out.append((node.lineno, base))
            out += [(node.lineno, f"{base}.{a.name}") for a in node.names]
    return out


def _is_module(name: str) -> bool:
    """True when the dotted ``name`` is a module or package of fsdpcfg (not a function or class in one)."""
    path = PKG.parent.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _private_owner(name: str) -> str | None:
    """The package owning the first private part of the module ``fsdpcfg.<pkg>...._<private>``; None when
    ``name`` is no fsdpcfg module or no part of it is private."""
    parts = name.split(".")
    if parts[0] != "fsdpcfg" or not _is_module(name):
        return None
    for i, part in enumerate(parts[1:], start=1):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[:i])
    return None


def private_imports_across_packages() -> list[str]:
    """``file:line imports X`` for each import of a private module ``fsdpcfg.<pkg>._x`` from outside ``<pkg>``."""
    bad = []
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG.parent)
        module = ".".join(rel.with_suffix("").parts)
        if module.endswith(".__init__"):
            module = module[: -len(".__init__")]
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for line, name in _imported_modules(ast.parse(path.read_text(encoding="utf-8")), package + ".x"):
            owner = _private_owner(name)
            if owner is None or owner == "fsdpcfg":  # the root package's own helpers belong to everyone
                continue
            if package != owner and not package.startswith(owner + "."):
                bad.append(f"{rel}:{line} imports {name}")
    return bad


def test_no_private_module_is_imported_from_another_package():
    assert private_imports_across_packages() == []


def test_the_private_import_scan_sees_a_violation():
    tree = ast.parse("from fsdpcfg.compose._compose import groups\nfrom fsdpcfg.rules import _common\n")
    names = [n for _, n in _imported_modules(tree, "fsdpcfg.cli.x")]
    assert [_private_owner(n) for n in names if _private_owner(n)] == ["fsdpcfg.compose", "fsdpcfg.rules"]
    assert _private_owner("fsdpcfg.compose.provenance") is None
    assert _private_owner("fsdpcfg.check.runscript.expand._concat") is None  # a private function, not a module
    assert _private_owner("fsdpcfg.check.verl_opinion._worker") == "fsdpcfg.check.verl_opinion"


def test_check_rules_plan_and_patch_declarations_import_no_torch():
    code = (
        "import sys, fsdpcfg.check, fsdpcfg.check.config, fsdpcfg.check.sources, fsdpcfg.rules, fsdpcfg.plan, "
        "fsdpcfg.plan.sft, fsdpcfg.patches, fsdpcfg.launch.machine\n"
        "from fsdpcfg.check import load_rule_modules\n"
        "load_rule_modules()\n"
        "print(sorted(m for m in ('torch', 'transformers', 'verl', 'fsdpcfg.train.patches') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
