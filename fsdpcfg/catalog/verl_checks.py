"""Find every check verl makes on config values, by parsing the installed verl's source with :mod:`ast`.

Nothing of verl is imported: :func:`verl_root` finds the package folder with ``importlib.util.find_spec``
(which does not run the package), and each file of :data:`FILES` is parsed. A *check* is an ``assert`` or a
``raise`` (with the ``if`` tests that lead to it) in a function of those files; in the config files every
check counts, in the start-up files those whose condition reads a config value (a name or attribute
containing ``config``/``cfg``, or one of verl's config leaf names, see :func:`_reads_config`) and every check of
a function named like a validator (``validate``, ``check``). A *registry* is
a name table verl looks a config value up in (:data:`REGISTRIES`): its names are read from the decorators or
the dict literal that fill it.

Each check has a stable identity, :attr:`Check.id` = ``file::function::kind::condition`` (the condition
normalised by ``ast.unparse``; ``#2``, ``#3`` for repeats in one function), so a moved line keeps its mapping
and a changed condition needs a new one. ``fsdpcfg.catalog.verl_coverage`` joins the checks with the mapping
in ``fsdpcfg/data/verl_coverage.yaml``.
"""

from __future__ import annotations

import ast
import importlib.util
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

#: The files scanned, relative to the verl package, and which of their checks count: ``all`` (config
#: dataclasses and validators: every check is on config values) or ``config`` (the start-up path of
#: ``main_ppo`` and ``sft_trainer`` with FSDP engines: the checks whose condition reads a config value).
FILES: dict[str, str] = {
    "utils/config.py": "all",
    "trainer/config/algorithm.py": "all",
    "trainer/config/config.py": "all",
    "workers/config/actor.py": "all",
    "workers/config/checkpoint.py": "all",
    "workers/config/critic.py": "all",
    "workers/config/distillation.py": "all",
    "workers/config/engine.py": "all",
    "workers/config/model.py": "all",
    "workers/config/optimizer.py": "all",
    "workers/config/reward.py": "all",
    "workers/config/rollout.py": "all",
    "trainer/main_ppo.py": "config",
    "trainer/ppo/ray_trainer.py": "config",
    "trainer/ppo/reward.py": "config",
    "trainer/ppo/utils.py": "config",
    "trainer/ppo/core_algos.py": "config",
    "trainer/sft_trainer.py": "config",
    "workers/engine_workers.py": "config",
    "workers/engine/base.py": "config",
    "workers/engine/fsdp/transformer_impl.py": "config",
    "utils/fsdp_utils.py": "config",
    "utils/dataset/rl_dataset.py": "config",
    "utils/dataset/multiturn_sft_dataset.py": "config",
    "workers/rollout/vllm_rollout/utils.py": "config",
    "experimental/reward_loop/reward_manager/dapo.py": "all",
}

#: Words that mark a name or attribute as a config object in a condition (``dataloader``: its length is the
#: data files' rows against ``data.train_batch_size``).
_CONFIG_WORDS = ("config", "cfg", "conf", "dataloader")
#: In a start-up file, every check of a function named like a validator counts (``_validate_profiler_interval``).
_VALIDATOR_WORDS = frozenset({"validate", "validation", "check", "verify"})
#: verl config leaf names too generic to mark a condition as reading config (``n``, ``name``, ``path`` ...).
_MIN_LEAF = 6


@dataclass(frozen=True)
class Registry:
    """A name table verl looks a config value up in.

    Attributes:
        name: short name (``policy_loss``).
        files: glob(s) of the files that fill it, relative to the verl package.
        key: the config key whose value is looked up.
        lookup: the verl function that raises on an unknown name.
        decorator: the registering decorator (``register_policy_loss``), or
        dict_name: the module-level dict literal whose keys are the names (a tuple key: its first element).
    """

    name: str
    files: tuple[str, ...]
    key: str
    lookup: str
    decorator: str | None = None
    dict_name: str | None = None


REGISTRIES: tuple[Registry, ...] = (
    Registry(
        "policy_loss",
        ("trainer/ppo/core_algos.py",),
        "actor_rollout_ref.actor.policy_loss.loss_mode",
        "trainer/ppo/core_algos.py get_policy_loss_fn",
        decorator="register_policy_loss",
    ),
    Registry(
        "adv_estimator",
        ("trainer/ppo/core_algos.py",),
        "algorithm.adv_estimator",
        "trainer/ppo/core_algos.py get_adv_estimator_fn",
        decorator="register_adv_est",
    ),
    Registry(
        "reward_manager",
        ("experimental/reward_loop/reward_manager/*.py",),
        "reward.reward_manager.name",
        "experimental/reward_loop/reward_manager/registry.py get_reward_manager_cls",
        decorator="register",
    ),
    Registry(
        "rollout",
        ("workers/rollout/base.py",),
        "actor_rollout_ref.rollout.name",
        "workers/rollout/base.py get_rollout_class",
        dict_name="_ROLLOUT_REGISTRY",
    ),
    Registry(
        "agent_loop",
        ("experimental/agent_loop/*.py",),
        "actor_rollout_ref.rollout.agent.default_agent_loop",
        "experimental/agent_loop/agent_loop.py AgentLoopWorker (_agent_loop_registry)",
        decorator="register",
    ),
)


@dataclass(frozen=True)
class Check:
    """One check verl makes.

    Attributes:
        id: ``file::function::kind::condition`` (stable across line moves).
        file: path relative to the verl package (``workers/config/actor.py``).
        function: qualified name of the enclosing function (``ActorConfig.__post_init__``).
        line: 1-based line of the ``assert``/``raise`` (for the doc only, not part of the id).
        kind: ``assert``, ``raise`` or ``registry``.
        condition: the normalised condition: for a ``raise`` the ``if`` tests leading to it (``not (...)`` for
            an ``else`` branch; ``always`` when none), for an ``assert`` its test (``if TESTS: assert TEST`` under
            ``if`` tests); for a registry its names.
        message: the first string of the message, shortened (empty when none).
    """

    id: str
    file: str
    function: str
    line: int
    kind: str
    condition: str
    message: str


def verl_root() -> Path:
    """The installed verl package folder, found without importing verl.

    Raises:
        FileNotFoundError: verl is not installed in this environment.
    """
    spec = importlib.util.find_spec("verl")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("verl is not installed here: the coverage table is generated from its source")
    return Path(list(spec.submodule_search_locations)[0])


@lru_cache(maxsize=1)
def _leaf_names() -> frozenset[str]:
    from fsdpcfg import verlref

    names = set()
    for config in ("ppo_trainer", "sft_trainer_engine"):
        names |= {part for k in verlref.keys(config) for part in k.split(".")}
    return frozenset(n for n in names if len(n) >= _MIN_LEAF)


def _reads_config(node: ast.AST) -> bool:
    """True when the expression ``node`` reads a config value: a name or attribute containing
    ``config``/``cfg``/``conf``, or one named like a key of verl's config tree (a leaf such as ``loss_agg_mode``
    or a section such as ``kl_ctrl``; names shorter than 6 characters are too generic to count)."""
    leaves = _leaf_names()
    for n in ast.walk(node):
        word = n.id if isinstance(n, ast.Name) else n.attr if isinstance(n, ast.Attribute) else None
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in leaves:
            return True
        if word is None:
            continue
        low = word.lower()
        if any(w in low for w in _CONFIG_WORDS) or word in leaves:
            return True
    return False


def _message(node: ast.AST | None) -> str:
    """The first string of a raise/assert message (an f-string with its ``{...}`` fields kept), whitespace
    collapsed, at most 120 characters."""
    if node is None:
        return ""
    for n in ast.walk(node):
        text = None
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value.strip():
            text = n.value
        elif isinstance(n, ast.JoinedStr):
            text = ast.unparse(n)[2:-1]  # f'...' -> ...
        if text is not None:
            text = " ".join(text.split())
            return text if len(text) <= 120 else text[:117] + "..."
    return ""


def _norm(node: ast.AST) -> str:
    return " ".join(ast.unparse(node).split())


class _Scanner(ast.NodeVisitor):
    """Collects (function, kind, condition nodes, node) of each assert/raise, with the enclosing if tests."""

    def __init__(self) -> None:
        self.scope: list[str] = []
        self.tests: list[tuple[ast.expr, bool]] = []  # (test, in the else branch)
        self.found: list[tuple[str, str, list[tuple[ast.expr, bool]], ast.stmt]] = []

    def _scoped(self, node, name: str) -> None:
        self.scope.append(name)
        saved, self.tests = self.tests, []
        self.generic_visit(node)
        self.tests = saved
        self.scope.pop()

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._scoped(node, node.name)

    def visit_FunctionDef(self, node) -> None:
        self._scoped(node, node.name)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_If(self, node: ast.If) -> None:
        self.visit(node.test)
        for branch, neg in ((node.body, False), (node.orelse, True)):
            self.tests.append((node.test, neg))
            for s in branch:
                self.visit(s)
            self.tests.pop()

    def visit_Assert(self, node: ast.Assert) -> None:
        if self.scope:
            self.found.append((".".join(self.scope), "assert", [*self.tests, (node.test, False)], node))

    def visit_Raise(self, node: ast.Raise) -> None:
        if self.scope and node.exc is not None:
            self.found.append((".".join(self.scope), "raise", list(self.tests), node))


def _condition(tests: list[tuple[ast.expr, bool]], kind: str) -> str:
    if kind == "assert":
        body = _norm(tests[-1][0])
        return f"if {_condition(tests[:-1], 'raise')}: assert {body}" if len(tests) > 1 else body
    if not tests:
        return "always"
    if len(tests) == 1 and not tests[0][1]:
        return _norm(tests[0][0])
    return " and ".join(
        f"not ({_norm(t)})" if neg else f"({_norm(t)})" if isinstance(t, (ast.BoolOp, ast.IfExp)) else _norm(t)
        for t, neg in tests
    )


def scan_file(root: Path, rel: str, scope: str) -> list[Check]:
    """The checks of one file (see :data:`FILES` for ``scope``), in source order, ids made unique."""
    tree = ast.parse((root / rel).read_text(encoding="utf-8"), filename=rel)
    sc = _Scanner()
    sc.visit(tree)
    out: list[Check] = []
    seen: dict[str, int] = {}
    for function, kind, tests, node in sc.found:
        msg_node = node.msg if isinstance(node, ast.Assert) else node.exc if isinstance(node, ast.Raise) else None
        validator = bool(_VALIDATOR_WORDS & set(function.rsplit(".", 1)[-1].lower().strip("_").split("_")))
        if scope == "config" and not validator:
            cond_nodes = [t for t, _ in tests]
            if not any(_reads_config(t) for t in cond_nodes) and not (
                kind == "raise" and not tests and msg_node is not None and _reads_config(msg_node)
            ):
                continue
        cond = _condition(tests, kind)
        base = f"{rel}::{function}::{kind}::{cond}"
        seen[base] = seen.get(base, 0) + 1
        cid = base if seen[base] == 1 else f"{base}#{seen[base]}"
        out.append(Check(cid, rel, function, node.lineno, kind, cond, _message(msg_node)))
    return out


def _str_enums(tree: ast.Module) -> dict[str, dict[str, str]]:
    """``{class: {member: string value}}`` of the module's classes holding string constants (enums)."""
    out: dict[str, dict[str, str]] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            members = {
                t.id: s.value.value
                for s in node.body
                if isinstance(s, ast.Assign)
                for t in s.targets
                if isinstance(t, ast.Name) and isinstance(s.value, ast.Constant) and isinstance(s.value.value, str)
            }
            if members:
                out[node.name] = members
    return out


def _decorator_names(tree: ast.Module, decorator: str, enums: dict[str, dict[str, str]]) -> list[str]:
    names = []
    for node in ast.walk(tree):
        for d in getattr(node, "decorator_list", []):
            if not (isinstance(d, ast.Call) and d.args):
                continue
            # a plain name matches only a plain call (``@register(..)``, not ``@ToolParser.register(..)``)
            fn = d.func.id if isinstance(d.func, ast.Name) else ""
            if fn != decorator:
                continue
            arg = d.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                names.append(arg.value)
            elif isinstance(arg, ast.Attribute) and isinstance(arg.value, ast.Name):
                value = enums.get(arg.value.id, {}).get(arg.attr)
                if value is not None:
                    names.append(value)
    return names


def _dict_names(tree: ast.Module, dict_name: str) -> list[str]:
    for node in tree.body:
        target = (
            node.targets[0]
            if isinstance(node, ast.Assign) and len(node.targets) == 1
            else node.target
            if isinstance(node, ast.AnnAssign)
            else None
        )
        if (
            isinstance(target, ast.Name)
            and target.id == dict_name
            and isinstance(node, (ast.Assign, ast.AnnAssign))
            and isinstance(node.value, ast.Dict)
        ):
            names = []
            for k in node.value.keys:
                if isinstance(k, ast.Tuple) and k.elts:
                    k = k.elts[0]
                if isinstance(k, ast.Constant) and isinstance(k.value, str):
                    names.append(k.value)
            return list(dict.fromkeys(names))
    return []


def registry_names(root: Path, reg: Registry) -> list[str]:
    """The names registered in ``reg``, read from its files (sorted, unique)."""
    names: list[str] = []
    enums: dict[str, dict[str, str]] = {}
    trees = []
    for pattern in reg.files:
        for path in sorted(root.glob(pattern)):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            trees.append(tree)
            enums.update(_str_enums(tree))
    for tree in trees:
        if reg.decorator:
            names += _decorator_names(tree, reg.decorator, enums)
        if reg.dict_name:
            names += _dict_names(tree, reg.dict_name)
    return sorted(set(names))


def scan(root: Path | None = None) -> list[Check]:
    """Every check of :data:`FILES` and every registry of :data:`REGISTRIES` in the verl at ``root``
    (default: the installed one), in file order.

    Raises:
        FileNotFoundError: verl is not installed, or a file of :data:`FILES` is missing from it (a verl
            release that moved it: update :data:`FILES`).
    """
    root = root or verl_root()
    out: list[Check] = []
    for rel, scope in FILES.items():
        if not (root / rel).is_file():
            raise FileNotFoundError(f"{root / rel} is not in this verl; update FILES in {__name__}")
        out += scan_file(root, rel, scope)
    for reg in REGISTRIES:
        names = registry_names(root, reg)
        out.append(
            Check(
                f"registry::{reg.name}",
                reg.lookup.split()[0],
                reg.lookup.split()[-1],
                0,
                "registry",
                ", ".join(names),
                f"{reg.key} is looked up in this table",
            )
        )
    return out
