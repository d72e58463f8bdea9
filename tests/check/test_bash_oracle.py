"""Bash is the oracle for reading run scripts (issue 20 item 1): each script of tests/check/scripts/corpus/ is
run by real ``bash`` in a scratch folder where every external command a run script calls (python3, python,
torchrun, ray, nvidia-smi, git, ...) is a stub on PATH that records its argv and runs nothing; fsdpcfg's
reading of every trainer call must equal the argv bash gave it.

Header lines of a corpus script: ``# oracle-args: ...`` (its positional arguments), ``# oracle-env: K=V ...``
(its environment), ``# oracle-variant: LABEL`` (which of fsdpcfg's paths the stubs pin: the stub python3 fails
``-c 'import torch_npu'``, the stub nvidia-smi succeeds; the path without arguments when none are given),
``# oracle-unknown: N`` (words fsdpcfg cannot know, such as nvidia-smi's output: compared by position only).
Disagreements: none (:data:`DISAGREEMENTS` lists any left, one by one, with the reason). The scripts of
tests/check/scripts/unreached/ stop or abandon a statement before a trainer command they write: what bash never
runs, the check reports as never reached (FC134).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from fsdpcfg.check.runscript import evaluate_variants
from fsdpcfg.check.runscript.verl_cmd import parse_command

CORPUS = Path(__file__).parent / "scripts" / "corpus"
SCRIPTS = sorted(CORPUS.glob("*.sh"))
#: script name -> why fsdpcfg's reading differs from bash's (none left).
DISAGREEMENTS: dict[str, str] = {}

#: the external commands a corpus script calls (mkdir, cat, dirname ... run for real in the scratch folder);
#: each records ``name<US>arg<US>...<RS>`` in $ORACLE_LOG
STUBS = ("python3", "python", "torchrun", "ray", "nvidia-smi", "npu-smi", "git", "pip", "nohup", "tee")
STUB = """#!/bin/bash
rec=$(printf '%s\\037' "$(basename "$0")" "$@")
printf '%s\\036' "$rec" >> "$ORACLE_LOG"  # one write: a pipeline's stubs run at the same time
case "$(basename "$0")" in
    python3|python) [ "$1" = -c ] && exit 1 ;;  # `python3 -c 'import torch_npu'`: not an Ascend machine
    nvidia-smi) [ "$1" = --list-gpus ] && printf 'GPU 0\\nGPU 1\\n' ;;
    nohup) shift 0 ;;
esac
exit 0
"""


def header(path: Path) -> dict[str, str]:
    out = {}
    for line in path.read_text().splitlines():
        if line.startswith("# oracle-"):
            tag, _, value = line[len("# oracle-") :].partition(":")
            out[tag.strip()] = value.strip()
    return out


def _is_trainer(argv: list[str]) -> bool:
    return any("verl.trainer." in a or "verl/trainer/" in a for a in argv)


def bash_calls(path: Path, tmp: Path, args: list[str], env: dict[str, str]) -> list[list[str]]:
    """Run ``path`` with bash among stubs; return the argv of each trainer call, in order."""
    stubs = tmp / "stubs"
    stubs.mkdir()
    for name in STUBS:
        (stubs / name).write_text(STUB)
        (stubs / name).chmod(0o755)
    log = tmp / "calls.log"
    log.write_bytes(b"")
    subprocess.run(
        ["bash", str(path), *args],
        cwd=tmp,
        env={**env, "PATH": f"{stubs}:/usr/bin:/bin", "ORACLE_LOG": str(log)},
        capture_output=True,
        timeout=30,
    )
    calls = [r.split("\x1f")[:-1] for r in log.read_text().split("\x1e") if r]
    return [c for c in calls if _is_trainer(c)]


def fsdpcfg_calls(path: Path, args: list[str] | None, env: dict[str, str], variant: str | None):
    """fsdpcfg's reading of the trainer calls along the path named ``variant`` (the only one when None)."""
    vs = evaluate_variants(path.read_text(), args=args, environ=env, script_path=str(path))
    labels = [v.label for v in vs]
    if variant is None:
        assert len(vs) == 1, f"several paths {labels}: name one with `# oracle-variant:`"
        [v] = vs
    else:
        assert variant in labels, labels
        v = vs[labels.index(variant)]
    return [c.argv for c in v.evaluation.commands if parse_command(c) is not None]


@pytest.mark.parametrize("path", SCRIPTS, ids=[p.name for p in SCRIPTS])
def test_the_reader_gives_the_argv_bash_gives(path, tmp_path):
    h = header(path)
    home = tmp_path / "home"
    home.mkdir()
    work = tmp_path / "corpus"
    shutil.copytree(CORPUS, work)
    script = work / path.name
    env = {"HOME": str(home), "PWD": str(tmp_path)}
    env.update(dict(kv.split("=", 1) for kv in h.get("env", "").split()))
    args = h["args"].split() if "args" in h else None
    theirs = bash_calls(script, tmp_path, args or [], env)
    cwd = os.getcwd()
    os.chdir(tmp_path)  # bash ran there: a relative `source` resolves the same way
    try:
        ours = fsdpcfg_calls(script, args, dict(env, PATH="/usr/bin:/bin"), h.get("variant"))
    finally:
        os.chdir(cwd)
    assert theirs, "bash made no trainer call"
    assert len(ours) == len(theirs), ([[w.text for w in a] for a in ours], theirs)
    unknown = 0
    got = []
    for argv in ours:
        row = []
        for w in argv:
            if w.known:
                row.append(w.text)
            else:
                unknown += 1
                row.append(None)
        got.append(row)
    assert unknown == int(h.get("unknown", 0)), [[(w.text, w.unknown) for w in a if not w.known] for a in ours]
    expected = [[os.path.basename(c[0])] + c[1:] for c in theirs]
    got = [[os.path.basename(r[0]) if r[0] else r[0]] + r[1:] for r in got]
    # a word fsdpcfg cannot know (counted above) stands for whatever bash gave at its place
    got = [
        [e if g is None else g for g, e in zip(r, x, strict=False)] + r[len(x) :]
        for r, x in zip(got, expected, strict=True)
    ]
    if path.name in DISAGREEMENTS:
        assert got != expected, f"{path.name} now agrees with bash: drop it from DISAGREEMENTS"
        return
    assert got == expected


UNREACHED = sorted((Path(__file__).parent / "scripts" / "unreached").glob("*.sh"))


@pytest.mark.parametrize("path", UNREACHED, ids=[p.name for p in UNREACHED])
def test_a_trainer_command_bash_never_runs_is_reported_never_reached(path, tmp_path):
    """Scripts that stop (``exit``) or abandon a statement (an arithmetic error) before a trainer command they
    write: bash runs fewer trainer commands than the script writes, and ``fsdpcfg check`` reports each one it
    does not run as never reached (FC134, an error), the others checked as bash runs them."""
    from fsdpcfg.check.sources import check_run_script

    env = {"HOME": str(tmp_path), "PWD": str(tmp_path)}
    script = tmp_path / path.name
    shutil.copy(path, script)
    theirs = bash_calls(script, tmp_path, [], env)
    written = sum(1 for line in path.read_text().splitlines() if "-m verl.trainer." in line)
    results = check_run_script(script, environ=dict(env, PATH="/usr/bin:/bin"))
    never = [f for r in results for f in r.findings if f.rule == "FC134"]
    assert len(theirs) < written
    assert len(never) == written - len(theirs), [(f.rule, f.message) for r in results for f in r.findings]
    assert all(f.severity == "error" and "never reached" in f.message for f in never)
    reached = [r for r in results if not any(f.rule == "FC134" for f in r.findings)]
    assert len(reached) == len(theirs)
