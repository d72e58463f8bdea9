"""No config default lives in code (issue 13 item 2): fsdpcfg/plan and fsdpcfg/train read a composed config, whose
every key the tree sets (:mod:`fsdpcfg.compose.defaults`), so ``.get("key", <literal>)`` and
``_get(cfg, "key", <literal>)`` on a config would be a second home for a default."""

from __future__ import annotations

import ast
from pathlib import Path

from fsdpcfg import paths

ROOTS = ("plan", "train")
#: ``file:call`` of ``.get`` calls on dicts that are not the config, with why.
NOT_CONFIG = {
    "estimate/memory.py:c.get('rollout replica', 0)": "the estimate's own component table",
    "estimate/param_count.py:c.get('tie_word_embeddings', config.get('tie_word_embeddings'))": "a model's config.json",
    "train/checkpoint.py:os.environ.get('FSDPCFG_TEST_SAVE_PAUSE', '')": "a test hook, an environment variable",
    "train/base.py:os.environ.get('FSDPCFG_TEST_HANG', '')": "a test hook, an environment variable",
    "native/ckpt_layout.py:manifest.get('files', [])": "a checkpoint manifest",
    "train/entry.py:os.environ.get('RANK', '0')": "torchrun's environment",
    "train/base.py:os.environ.get('LOCAL_RANK', '0')": "torchrun's environment",
}


def _is_none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _literal_key(node: ast.expr) -> bool:
    return isinstance(node, (ast.Constant, ast.JoinedStr)) or (
        isinstance(node, ast.BinOp) and any(_literal_key(x) for x in (node.left, node.right))
    )


def _offenders() -> list[str]:
    out = []
    base = paths.PACKAGE_DIR
    for root in ROOTS:
        for f in sorted((base / root).rglob("*.py")):
            rel = str(f.relative_to(base))
            for n in ast.walk(ast.parse(f.read_text())):
                if not isinstance(n, ast.Call) or not isinstance(n.func, (ast.Attribute, ast.Name)):
                    continue
                name = n.func.attr if isinstance(n.func, ast.Attribute) else n.func.id
                if name == "get" and isinstance(n.func, ast.Attribute) and len(n.args) == 2:
                    key, default = n.args
                elif name == "_get" and len(n.args) == 3:
                    key, default = n.args[1], n.args[2]  # _get(cfg, "a.b", default): only if_null= is allowed
                else:
                    continue
                if _literal_key(key) and not _is_none(default) and f"{rel}:{ast.unparse(n)}" not in NOT_CONFIG:
                    out.append(f"{rel}:{n.lineno}: {ast.unparse(n)}")
    return out


def test_no_literal_default_on_config_keys_in_plan_and_train():
    assert _offenders() == [], "read the key directly (the composed tree has it), or allow-list a non-config dict"


def test_allow_list_entries_still_exist():
    base = paths.PACKAGE_DIR
    for entry in NOT_CONFIG:
        rel, call = entry.split(":", 1)
        text = ast.unparse(ast.parse((base / rel).read_text()))
        assert call in text, f"stale allow-list entry {entry}"


def test_the_scan_finds_a_literal_default(tmp_path: Path, monkeypatch):
    pkg = tmp_path / "pkg"
    (pkg / "train").mkdir(parents=True)
    (pkg / "plan").mkdir()
    (pkg / "train" / "x.py").write_text("def f(cfg):\n    return cfg.get('lora_rank', 0), _get(cfg, 'a.b', 1)\n")
    monkeypatch.setattr(paths, "PACKAGE_DIR", pkg)
    assert _offenders() == ["train/x.py:2: cfg.get('lora_rank', 0)", "train/x.py:2: _get(cfg, 'a.b', 1)"]
