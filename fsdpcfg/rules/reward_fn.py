"""FC415: the custom reward function file, parsed with :mod:`ast` and never imported or run.

verl loads ``reward.custom_reward_function.path`` with ``importlib`` in the reward workers and calls
``name(data_source=..., solution_str=..., ground_truth=..., extra_info=..., **reward_kwargs)`` per sample: a
missing file, a syntax error, a missing function or one that does not take these keywords fails there,
minutes after start-up.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from fsdpcfg.rules.context import Context
from fsdpcfg.rules.finding import Finding
from fsdpcfg.rules.registry import rule

SEC = "reward.custom_reward_function"
PATH, NAME, KWARGS = f"{SEC}.path", f"{SEC}.name", f"{SEC}.reward_kwargs"
#: The keywords verl's reward managers pass (verl/experimental/reward_loop/reward_manager/naive.py,
#: verl/workers/reward_manager/naive.py ``compute_score(data_source=, solution_str=, ground_truth=, extra_info=)``).
CALL_KWARGS = ("data_source", "solution_str", "ground_truth", "extra_info")
#: verl's prefixes of ``load_module`` (verl/utils/import_utils.py): ``pkg://`` imports a module (not checked
#: here: that would import it), ``file://`` names a file.
PKG, FILE = "pkg://", "file://"


@dataclass(frozen=True)
class Signature:
    """What a reward function accepts by keyword.

    Attributes:
        names: parameters that can be passed by keyword.
        required: parameters without a default (positional-only ones included).
        var_kw: it takes ``**kwargs``.
        positional_only: parameters before ``/`` (cannot be passed by keyword).
    """

    names: frozenset[str]
    required: frozenset[str]
    var_kw: bool
    positional_only: tuple[str, ...]


def _signature(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> Signature:
    a = fn.args
    pos = [*a.posonlyargs, *a.args]
    pos_defaults = len(a.defaults)
    required = {p.arg for p in pos[: len(pos) - pos_defaults]}
    required |= {p.arg for p, d in zip(a.kwonlyargs, a.kw_defaults, strict=True) if d is None}
    names = {p.arg for p in [*a.args, *a.kwonlyargs]}
    return Signature(frozenset(names), frozenset(required), a.kwarg is not None, tuple(p.arg for p in a.posonlyargs))


@lru_cache(maxsize=32)
def inspect_file(path: str, name: str, stamp: tuple[int, int]) -> tuple[str, Any]:
    """Parse ``path`` and look for the top-level ``name``.

    Returns ``("syntax", message)``, ``("unreadable", message)``, ``("missing", [top-level function names])``,
    ``("bound", None)`` (``name`` is bound by an import or assignment: its signature is not known statically)
    or ``("function", Signature)``.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        return "unreadable", str(e)
    try:
        tree = ast.parse(text, filename=path)
    except SyntaxError as e:
        return "syntax", f"line {e.lineno}: {e.msg}"
    found: Any = None
    functions = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            functions.append(node.name)
            if node.name == name:
                found = node  # the last definition wins, as at import
        elif _binds(node, name):
            found = "bound"
    if found is None:
        return "missing", functions
    if found == "bound":
        return "bound", None
    return "function", _signature(found)


def _binds(node: ast.stmt, name: str) -> bool:
    """True when the top-level statement ``node`` binds ``name`` other than by ``def``."""
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return any((a.asname or a.name.split(".")[0]) == name for a in node.names)
    if isinstance(node, ast.ClassDef):
        return node.name == name
    targets: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
        targets = [node.target]
    elif isinstance(node, (ast.If, ast.Try, ast.With)):
        body = [*getattr(node, "body", []), *getattr(node, "orelse", []), *getattr(node, "finalbody", [])]
        for h in getattr(node, "handlers", []):
            body += h.body
        return any(
            isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == name or _binds(s, name) for s in body
        )
    return any(isinstance(n, ast.Name) and n.id == name for t in targets for n in ast.walk(t))


def _problems(sig: Signature, extra: list[str]) -> list[str]:
    """Why calling a function of ``sig`` with verl's keywords plus ``extra`` (``reward_kwargs``) fails."""
    passed = [*CALL_KWARGS, *extra]
    out = []
    if sig.positional_only:
        out.append(f"{', '.join(sig.positional_only)} positional-only (before '/'), but verl passes keywords")
    if not sig.var_kw:
        unknown = [k for k in passed if k not in sig.names]
        if unknown:
            out.append(f"it does not accept {', '.join(unknown)} (and has no **kwargs)")
    missing = sorted(sig.required - set(passed))
    if missing:
        out.append(f"it requires {', '.join(missing)}, which verl does not pass")
    return out


@rule(
    "FC415",
    "the custom reward function exists and takes the keywords verl passes",
    keys=[PATH, NAME, KWARGS],
    example=["reward=arith", "reward.custom_reward_function.name=score"],
)
def custom_reward_function(ctx: Context) -> Iterable[Finding]:
    """``reward.custom_reward_function.path`` is parsed (never imported): a syntax error, a missing
    ``reward.custom_reward_function.name`` (null is allowed while ``path`` is null: verl reads the name only for a
    path; with a path it is an error even when the file is not on this machine), or a function that cannot be called as
    ``name(data_source=, solution_str=, ground_truth=, extra_info=, **reward_kwargs)`` is an error; a file absent
    on this machine is an info (a cluster path), a ``pkg://`` module is not checked (it would be imported).

    Source: verl/trainer/ppo/reward.py ``get_custom_reward_fn`` (``load_extern_object``, ``_call_with_kwargs``);
    verl/utils/import_utils.py ``load_module`` / ``load_extern_object`` (FileNotFoundError, RuntimeError,
    AttributeError); verl/experimental/reward_loop/reward_manager/naive.py (the keyword call).
    """
    path = ctx.get(PATH)
    if not isinstance(path, str) or not path.strip() or path.startswith(PKG):
        return
    name = ctx.get(NAME)
    if not isinstance(name, str) or not name:  # read only now that the path is set (null is verl's "none" otherwise)
        yield ctx.finding(
            "FC415",
            [NAME, PATH],
            f"{NAME} is {'null' if name is None else repr(name)} while {PATH} is set; verl needs the function's name "
            "(get_custom_reward_fn: assert fn_name is not None)",
            f"set {NAME}=compute_score (or the function's name)",
        )
        return
    file = path.removeprefix(FILE)
    p = Path(file).expanduser()
    if not p.is_file():
        yield ctx.finding(
            "FC415",
            [PATH],
            f"{PATH}: {path} does not exist on this machine, so the reward function was not checked",
            "fix the path, or check where the file is",
            severity="info",
        )
        return
    st = p.stat()
    kind, got = inspect_file(str(p), name, (st.st_mtime_ns, st.st_size))
    if kind in ("syntax", "unreadable"):
        what = "has a syntax error" if kind == "syntax" else "cannot be read"
        yield ctx.finding(
            "FC415",
            [PATH],
            f"{PATH}: {path} {what} ({got}); verl fails importing it in the reward worker",
            "fix the file (python -m py_compile FILE shows the error)",
        )
    elif kind == "missing":
        have = f"; its functions: {', '.join(got)}" if got else "; it defines no function"
        yield ctx.finding(
            "FC415",
            [NAME, PATH],
            f"{path} defines no top-level {name!r}{have}",
            f"set {NAME} to one of them, or add def {name}(data_source, solution_str, ground_truth, "
            "extra_info=None, **kwargs)",
        )
    elif kind == "function":
        kwargs = ctx.get(KWARGS) or {}
        extra = [str(k) for k in kwargs] if isinstance(kwargs, dict) else []
        problems = _problems(got, extra)
        if problems:
            yield ctx.finding(
                "FC415",
                [NAME, PATH, KWARGS],
                f"{path}: {name}() cannot be called as verl calls it "
                f"({name}(data_source=, solution_str=, ground_truth=, extra_info=, **reward_kwargs)): "
                + "; ".join(problems),
                f"define it as def {name}(data_source, solution_str, ground_truth, extra_info=None, **kwargs)",
            )
