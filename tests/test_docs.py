"""The README and docs/ a user of a clone reads: nothing points outside the repository, every relative link and
anchor resolves, the README stays a doorway (<= 200 lines, the two fresh-machine commands as they are), and the
check output it shows is what ``fsdpcfg check`` says on the example script."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
DOCS = REPO / "docs"
EXAMPLE = DOCS / "examples" / "run_grpo.sh"

#: where a clone's files may not point: the design notes and cases beside the development checkout
#: (docs/design.md holds the principles the code cites).
OUTSIDE = re.compile(r"\.\./shared|shared/DESIGN|(?<![\w/.-])(?:DESIGN|STYLE|NOTES)\.md")
#: text files worth scanning (the shipped tokenizer and dataset files are data, not prose or code).
TEXT_SUFFIXES = {".py", ".md", ".sh", ".yaml", ".yml", ".toml", ".txt", ".cfg", ".tsv", ".jinja"}
SCANNED = ("fsdpcfg", "docs", "scripts", "benchmarks")

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def _scanned_files() -> list[Path]:
    files = [README]
    for top in SCANNED:
        files += [p for p in sorted((REPO / top).rglob("*")) if p.is_file() and p.suffix in TEXT_SUFFIXES]
    return files


def outside_references(files: list[Path], root: Path = REPO) -> list[str]:
    """``path:line: text`` of each line of ``files`` (paths relative to ``root``) that names a file outside the
    repository."""
    bad = []
    for path in files:
        for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), start=1):
            if OUTSIDE.search(line):
                bad.append(f"{path.relative_to(root)}:{n}: {line.strip()}")
    return bad


def test_nothing_points_outside_the_repository():
    bad = outside_references(_scanned_files())
    assert not bad, "cite docs/design.md#SECTION (or the public source) instead:\n" + "\n".join(bad)


def test_the_scan_finds_an_outside_reference(tmp_path):
    """The pattern catches each way the code used to cite the notes beside the checkout, and not docs/design.md."""
    f = tmp_path / "x.py"
    f.write_text(
        'a\n"""Source: DESIGN.md "no silent no-ops"."""\n# ../shared/cases c09\n'
        "# STYLE.md errors\n# see docs/design.md#no-silent-no-ops\n"
    )
    hits = [hit.split(": ", 1)[0] for hit in outside_references([f], tmp_path)]
    assert hits == ["x.py:2", "x.py:3", "x.py:4"]


def slug(heading: str) -> str:
    """GitHub's anchor for a markdown heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", lambda m: m.group(1) or "", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(md: Path) -> set[str]:
    """Every anchor of ``md``: its headings' (repeated ones get GitHub's ``-1``, ``-2`` suffixes) and its
    ``<a id="...">`` tags."""
    seen: dict[str, int] = {}
    out = set(re.findall(r'<a id="([^"]+)"', md.read_text(encoding="utf-8")))
    fenced = False
    for line in md.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
            continue
        m = None if fenced else HEADING.match(line)
        if m:
            s = slug(m.group(2))
            out.add(s if s not in seen else f"{s}-{seen[s]}")
            seen[s] = seen.get(s, 0) + 1
    return out


def test_slug_matches_github():
    assert slug("Sweeps (`-m`, Hydra's launchers)") == "sweeps--m-hydras-launchers"
    assert slug("verl's whole tree") == "verls-whole-tree"
    assert slug("Unit tests on fakes, end to end where end to end is the point") == (
        "unit-tests-on-fakes-end-to-end-where-end-to-end-is-the-point"
    )


def broken_links(pages: list[Path], root: Path = REPO) -> list[str]:
    """``page: target`` of each relative link in ``pages`` (named relative to ``root``) whose file or ``#anchor``
    does not exist."""
    bad = []
    for page in pages:
        for target in LINK.findall(page.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target):  # https:, mailto:
                continue
            file_part, _, anchor = target.partition("#")
            dest = (page.parent / file_part).resolve() if file_part else page
            if not dest.exists():
                bad.append(f"{page.relative_to(root)}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                bad.append(f"{page.relative_to(root)}: {target} (no such heading)")
    return bad


def test_every_relative_link_resolves():
    pages = [README, *sorted(DOCS.glob("*.md"))]
    assert not broken_links(pages)


def test_a_broken_link_is_found(tmp_path):
    (tmp_path / "a.md").write_text("# A\n\n## Two words\n")
    page = tmp_path / "b.md"
    page.write_text("[ok](a.md#two-words) [gone](c.md) [bad](a.md#three) [web](https://example.org/x)\n")
    assert broken_links([page], tmp_path) == ["b.md: c.md (no such file)", "b.md: a.md#three (no such heading)"]


def test_readme_is_a_doorway():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    assert "bash scripts/setup.sh && .venv/bin/python -m fsdpcfg +recipe=qwen_grpo" in text
    assert "bash scripts/test.sh" in text
    assert "fsdpcfg check run.sh" in text


def test_readme_example_is_what_check_says():
    """The findings the README shows for docs/examples/run_grpo.sh are the ones ``fsdpcfg check`` reports."""
    from fsdpcfg.check.sources import check_run_script

    (checked,) = check_run_script(EXAMPLE, environ={})
    errors = sorted((f.rule, f.message) for f in checked.findings if f.severity == "error")
    assert [rule for rule, _ in errors] == ["FC101", "FC201", "FC204"]
    messages = " ".join(m for _, m in errors)
    fixes = " ".join(f.fix or "" for f in checked.findings)
    readme = " ".join(README.read_text(encoding="utf-8").split())
    for shown in (
        "did you mean actor_rollout_ref.rollout.gpu_memory_utilization=0.6?",
        "data.train_batch_size x actor_rollout_ref.rollout.n = 60 x 5 = 300",
        "over 8 data-parallel",
        "set actor_rollout_ref.actor.ppo_mini_batch_size=32: the smallest mini batch",
    ):
        assert shown in " ".join((messages + " " + fixes).split()), shown
        assert shown in readme, shown
    assert "check fails (3 errors, 0 warnings, 2 infos)" in readme
    assert len([f for f in checked.findings if f.severity == "info"]) == 2


@pytest.mark.parametrize("page", sorted(p.name for p in DOCS.glob("*.md")))
def test_every_doc_is_reachable_from_the_readme(page):
    """Each page of docs/ is one link away from the README (what the README dropped lives there)."""
    text = README.read_text(encoding="utf-8")
    assert f"(docs/{page})" in text or f"(docs/{page}#" in text


def test_the_readmes_rule_count_is_the_registrys():
    """The README's count of rules is the rule table's (it said 102 while the table held 114)."""
    import re

    from fsdpcfg.check.config import load_rule_modules
    from fsdpcfg.rules.registry import RULES

    load_rule_modules()
    m = re.search(r"static rules \((\d+),", README.read_text(encoding="utf-8"))
    assert m is not None and int(m.group(1)) == len(RULES)
