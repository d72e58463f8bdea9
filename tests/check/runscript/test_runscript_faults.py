"""Run scripts that fault before or while reaching the trainer (issue 20): an arithmetic error abandons the
statement that holds it (bash's behaviour, held against bash in tests/check/test_bash_oracle.py), 64-bit arithmetic
wraps as bash's does, and a value or an array doubled each time round a loop is bounded, with a clear reason."""

from __future__ import annotations

import time

from fsdpcfg.check.runscript import evaluate
from fsdpcfg.check.runscript.words import MAX_VALUE, TOO_LONG, TOO_MANY
from fsdpcfg.check.sources import check_run_script

TRAINER = "python3 -m verl.trainer.main_ppo data.train_batch_size=64 trainer.experiment_name="


def _argv(text: str) -> list[tuple[str, tuple[str, ...]]]:
    ev = evaluate(text, environ={})
    [cmd] = ev.commands
    return [(w.text, w.unknown) for w in cmd.argv]


def test_arithmetic_wraps_at_64_bits_and_costs_what_bashs_does():
    t0 = time.perf_counter()
    argv = _argv(
        f"A=$(( 2 ** 1000000000 ))\nB=$(( 1 << 100000 ))\nC=$(( 9223372036854775807 + 1 ))\n{TRAINER}$A.$B.$C\n"
    )
    assert argv[-1] == ("trainer.experiment_name=0.4294967296.-9223372036854775808", ())  # bash prints the same
    assert time.perf_counter() - t0 < 5


def test_an_arithmetic_error_abandons_its_statement_and_bash_goes_on():
    ev = evaluate(f"N=0\nfor i in 1 2; do\n  X=$((i / N))\ndone\n{TRAINER}${{X:-none}}\n", environ={})
    [cmd] = ev.commands  # the loop is abandoned, the trainer runs with X unset
    assert cmd.argv[-1].text == "trainer.experiment_name=none"
    [note] = [n for n in ev.notes if n.kind == "aborted"]
    assert (note.line, note.end_line) == (2, 4)
    assert (
        note.message == "`i / N`: division by 0 (line 3): bash abandons the statement at lines 2-4 and goes on after it"
    )


def test_a_string_doubled_in_a_loop_is_bounded_with_its_reason(tmp_path):
    loop = " ".join(str(i) for i in range(1, 41))  # 2**40 characters, were it followed
    script = tmp_path / "run.sh"
    script.write_text(f"#!/bin/bash\nx=a\nfor i in {loop}; do x=$x$x; done\n{TRAINER}$x trainer.n_gpus_per_node=8\n")
    t0 = time.perf_counter()
    [r] = check_run_script(script, environ={})
    assert time.perf_counter() - t0 < 30
    [f] = [f for f in r.findings if f.rule == "FC107"]
    assert f.keys == ["trainer.experiment_name"] and TOO_LONG in f.message
    assert f"past {MAX_VALUE:,} characters" in f.message


def test_an_array_doubled_in_a_loop_is_bounded_with_its_reason():
    loop = " ".join(str(i) for i in range(1, 31))
    argv = _argv(f'A=(x)\nfor i in {loop}; do A+=("${{A[@]}}"); done\n{TRAINER}${{#A[@]}}\n')
    assert TOO_MANY in argv[-1][1]


def test_a_script_that_stops_before_its_trainer_fails_also_as_pre_commit_runs_it(capsys):
    # was a usage error ("no verl command found"), and with --skip-unrelated an FC131 skip: the commit passed
    import json
    from pathlib import Path

    from fsdpcfg.cli.main import main

    script = Path(__file__).parents[1] / "scripts" / "unreached" / "die_before.sh"
    rc = main(["check", "--format", "json", "--no-plan", "--skip-unrelated", str(script)])
    report = json.loads(capsys.readouterr().out)
    assert rc == 1
    [f] = report["findings"]
    assert (f["rule"], f["severity"], f["line"]) == ("FC134", "error", 9)
    assert f["message"].endswith("the verl command is never reached: the script stops at line 5 before it (`exit 1`)")


def test_a_script_nested_past_the_stack_or_not_utf8_is_a_usage_message(tmp_path, capsys):
    """Break-it pass: ``${A:-`` nested 5,000 deep tracebacked (RecursionError) in ``check``, ``import`` and ``show``;
    a Latin-1 script got a message without a fix. Both are usage errors naming the file and the fix."""
    from fsdpcfg.cli.main import main

    deep = tmp_path / "deep.sh"
    deep.write_text("python3 -m verl.trainer.main_ppo data.x=" + "${A:-" * 5000 + "x" + "}" * 5000 + "\n")
    latin = tmp_path / "latin.sh"
    latin.write_bytes("# caf\xe9\npython3 -m verl.trainer.main_ppo data.train_batch_size=8\n".encode("latin-1"))
    for f, words in ((deep, "its expansions nest too deep to read"), (latin, "not UTF-8 text (byte 5)")):
        for argv in (["check", "--no-plan", str(f)], ["import", str(f), "-o", str(tmp_path / "r.yaml")]):
            assert main(argv) == 2, argv
            err = capsys.readouterr().err
            assert words in err and "\n  -> " in err and "Traceback" not in err, err
    assert not (tmp_path / "r.yaml").exists()
