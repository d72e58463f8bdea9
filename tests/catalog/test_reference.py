"""docs/reference.md is generated from the tree and the rule table, and kept fresh."""

from __future__ import annotations

import subprocess
import sys

import pytest

from fsdpcfg import catalog, paths
from fsdpcfg.catalog import reference, ruleinfo


def test_reference_page_is_fresh():
    assert not reference.stale(), "run `python scripts/gen_reference.py` and commit docs/reference.md"


def test_reference_lists_every_option_and_rule():
    text = reference.render()
    for o in catalog.all_options():
        assert f"| {o.group} | " in text and f"`{o.name}`" in text
    assert "| `qwen_grpo` | ppo | GRPO on GSM8K with a Qwen2-architecture model. |" in text
    assert "| engine | **`fsdp2`** |" in text
    for rid, rule in ruleinfo.rules().items():
        assert f"\n### {rid}\n\n**{rule.title}** ({rule.severity})" in text
        assert f"[{rid}](#{rid.lower()})" in text


@pytest.mark.slow  # end to end: a fresh Python process
def test_gen_reference_check_mode(tmp_path):
    script = paths.REPO_DIR / "scripts" / "gen_reference.py"
    r = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "up to date" in r.stdout


def test_stale_detects_a_changed_page(tmp_path):
    page = tmp_path / "reference.md"
    assert reference.stale(page)
    reference.write(page)
    assert not reference.stale(page)
    page.write_text(page.read_text().replace("FC201", "FC2O1"))
    assert reference.stale(page)
