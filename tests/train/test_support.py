"""The native loop's declaration (fsdpcfg/native/support.py) held against the code in fsdpcfg/train.

A key counts as *read* by a function when the function's source (its AST, not its docstring or messages)
reads the key's leaf as an attribute of the typed config (``cfg.algorithm.use_kl_in_reward``, or
``getattr(section, "use_kl_in_reward")``), indexes a mapping with it (``cfg["algorithm"]["use_kl_in_reward"]``),
calls ``.get`` with it, or passes the dotted key (or a dotted tail of it) as a positional argument
(``_get(cfg, "algorithm.kl_ctrl.type")``). Keyword arguments (``key=`` of a ConfigError, ``config_key=`` of a
Patch) name keys without reading them.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fsdpcfg.native import support
from fsdpcfg.train.patches import REGISTRY

TRAIN = Path(support.__file__).parent
DOTTED = re.compile(r"^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)+$")


def _reads(tree: ast.AST) -> set[str]:
    """The key strings a piece of code reads (leaves and dotted keys), per the module docstring."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            chain = _attribute_chain(node)
            out.update(ATTR + ".".join(chain[i:]) for i in range(len(chain)))
        elif isinstance(node, ast.Subscript):
            if isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
                out.add(node.slice.value)
        if isinstance(node, ast.Call):
            args = node.args
            is_get = isinstance(node.func, ast.Attribute) and node.func.attr == "get"
            is_getattr = isinstance(node.func, ast.Name) and node.func.id == "getattr"
            for i, a in enumerate(args):
                if isinstance(a, ast.Constant) and isinstance(a.value, str):
                    if (is_get and i == 0) or (is_getattr and i == 1) or DOTTED.match(a.value):
                        out.add(a.value)
    return out


def _attribute_chain(node: ast.Attribute) -> list[str]:
    """The attribute names of ``a.b.c`` (``[b, c]`` for the node of ``.c``; the base name left out)."""
    names = [node.attr]
    value = node.value
    while isinstance(value, ast.Attribute):
        names.insert(0, value.attr)
        value = value.value
    return names


#: marks an attribute read in :func:`_reads` (``cfg.trainer.save_freq`` -> ``@trainer.save_freq``, ``@save_freq``)
ATTR = "@"


def _is_read(key: str, reads: set[str], *, anywhere: bool = False) -> bool:
    """``key`` (or a dotted tail of it) is in ``reads``. In the functions a feature names, an attribute read counts
    by its leaf (``optim_cfg.optimizer``). ``anywhere`` (a key no module may read): a plain-word leaf (``type``,
    ``name``) is an attribute of many objects (``device.type``), so there it counts only with its parent
    (``kl_ctrl.type``); a compound leaf (``use_dynamic_bsz``) counts alone."""
    parts = key.split(".")
    tails = [".".join(parts[i:]) for i in range(len(parts))]
    if any(t in reads for t in tails):
        return True
    return any(ATTR + t in reads for t in tails if not anywhere or "." in t or "_" in t)


def _function(spec: str) -> ast.AST:
    """The AST of ``"module:Qualname"`` (found in the source file; nothing imported)."""
    mod, qual = spec.split(":")
    found = importlib.util.find_spec(mod)
    assert found is not None and found.origin, spec
    node: ast.AST = ast.parse(Path(found.origin).read_text())
    for name in qual.split("."):
        node = next(
            n
            for n in ast.iter_child_nodes(node)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.name == name
        )
    return node


def _train_modules(kind: str = "ppo") -> dict[Path, set[str]]:
    """Reads of every module of a native trainer, less this declaration: the GRPO loop (``ppo``) is
    fsdpcfg/train except the SFT trainer (its own key tree); the SFT trainer (``sft``) is all of fsdpcfg/train
    (it shares the engine, optimizer, model and LoRA modules)."""
    return {
        p: _reads(ast.parse(p.read_text()))
        for p in sorted(TRAIN.rglob("*.py"))
        if (kind == "sft" or "sft" not in p.relative_to(TRAIN).parts) and p.name != "support.py"
    }


def test_reader_finds_the_reads_it_should():
    code = 'def f(cfg, rc):\n    cfg["a"]["use_x"]; rc.get("y", 0); _get(cfg, "b.c.z"); E(key="k.not_read")\n'
    assert _reads(ast.parse(code)) == {"a", "use_x", "@get", "y", "b.c.z"}
    typed = 'def f(cfg, tr, device):\n    cfg.trainer.save_freq; getattr(tr, "keep"); cfg.x = 1; device.type\n'
    assert _reads(ast.parse(typed)) == {"@trainer", "@trainer.save_freq", "@save_freq", "keep", "@type"}
    assert _is_read("trainer.save_freq", _reads(ast.parse(typed))) and not _is_read("a.type", {"@type"}, anywhere=True)
    assert _is_read("a.kl_ctrl.type", {"@kl_ctrl.type"})
    assert _is_read("s.b.c.z", {"b.c.z"}) and not _is_read("s.b.c.z", {"b.c"})


@pytest.mark.parametrize("feature", [f for f in support.ALL_FEATURES if isinstance(f, support.Native)], ids=str)
def test_native_feature_is_read_by_its_code(feature):
    """Every key of an implemented feature is read by one of the functions it names; a component the loop
    does not have (impl empty) is read nowhere in fsdpcfg/train and runs only its off values."""
    if not feature.impl:
        assert feature.values and set(feature.values) == set(feature.keys), feature.name
        for key in feature.keys:
            assert not _refuses_verl_default(key, feature), key
            readers = [p for p, r in _train_modules(feature.kind).items() if _is_read(key, r, anywhere=True)]
            assert not readers, f"{key} is declared absent from the native loop but read by {readers}"
        return
    reads = set().union(*(_reads(_function(s)) for s in feature.impl))
    unread = [k for k in feature.keys if not _is_read(k, reads)]
    assert not unread, f"{feature.name}: {unread} not read by {feature.impl}"
    assert set(feature.values or {}) <= set(feature.keys), feature.name
    if feature.when is not None:
        assert feature.when[0] not in feature.keys or feature.when[0] not in (feature.values or {})


def _refuses_verl_default(key: str, feature: support.Native) -> bool:
    """True when verl's default value of ``key`` is not among the values the feature declares (a declaration
    that would refuse every default config)."""
    from fsdpcfg import verlref

    defaults = verlref.defaults("sft_trainer_engine" if feature.kind == "sft" else "ppo_trainer")
    return key in defaults and defaults[key] not in (feature.values or {}).get(key, (defaults[key],))


@pytest.mark.parametrize("feature", [f for f in support.ALL_FEATURES if isinstance(f, support.NotNative)], ids=str)
def test_refused_feature_has_no_code_behind_it(feature):
    """No module of the loop reads a refused key. A patch declared for ``launcher=verl`` only is read by the
    patch registry to refuse it: it must have no native implementation."""
    modules = _train_modules(feature.kind)
    for key in feature.keys:
        patch = next((REGISTRY[n] for n in REGISTRY.names() if REGISTRY[n].config_key == key), None)
        if patch is not None:
            assert "native" not in patch.launchers and not patch.impls, f"{key}: patch {patch.name} runs natively"
        readers = [str(p.relative_to(TRAIN)) for p, r in modules.items() if _is_read(key, r, anywhere=True)]
        assert not readers, f"{key} is declared not implemented ({feature.reason}) but read by {readers}"


def test_every_declared_key_is_a_schema_key_with_its_values_allowed():
    from fsdpcfg.schema import keys as K

    names = [f.name for f in support.ALL_FEATURES]
    assert len(names) == len(set(names))
    declared = [k for f in support.ALL_FEATURES for k in f.keys]
    assert len(declared) == len(set(declared)), "a key is declared twice"
    sft_keys = set(_sft_schema_keys())
    for f in support.ALL_FEATURES:
        for key in f.keys:
            assert key in (sft_keys if f.kind == "sft" else K.schema_keys()), key
    for key, values in support.NATIVE_VALUES.items():
        allowed = K.allowed_values(key)
        assert not allowed or set(values) <= set(allowed), key
    assert set(support.NATIVE_WHEN) <= set(support.NATIVE_VALUES)


def _sft_schema_keys() -> list[str]:
    from fsdpcfg.rules.sft_rules import _schema_defaults

    return list(_schema_defaults())


def test_formerly_refused_features_are_declared_native():
    """use_kl_in_reward and layered_summon are implemented (train/loop.py, train/lora): not refused."""
    for key in ("algorithm.use_kl_in_reward", "actor_rollout_ref.rollout.layered_summon"):
        assert key not in support.NATIVE_UNSUPPORTED
        assert isinstance(support.feature_of(key), support.Native)
    assert support.NATIVE_VALUES["algorithm.kl_ctrl.type"] == ("fixed",)
    assert support.NATIVE_WHEN["algorithm.kl_ctrl.type"] == ("algorithm.use_kl_in_reward", True)


def test_declaration_imports_no_torch():
    code = "import sys, fsdpcfg.native.support, fsdpcfg.rules.launcher_rules; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
