"""Every finding at once (issue 20 item 2): an override Hydra refuses (a key not in the tree, ``~`` of a missing key, an
unknown group option) is reported with its own finding, dropped, and the rest is still composed and checked, on the
command line, in a recipe file and in a run script; the run refuses to start on any of them and prints them all."""

from __future__ import annotations

from pathlib import Path

from fsdpcfg.check import check_overrides, compose_for_check, has_errors
from fsdpcfg.check.sources import check_run_script, check_yaml_file
from fsdpcfg.cli.main import main

BASE = ["+recipe=qwen_grpo"]
#: three overrides Hydra refuses, each alone ended the compose before (one finding for the first, none else)
REFUSED = ["trainer.nnode=2", "rollout=bogus", "~nope.key"]
#: a rule that only runs when the rest composes: 4 prompts is not a multiple of a mini batch of 3 (FC202)
LATER = "actor_rollout_ref.actor.ppo_mini_batch_size=3"


def _by_key(findings):
    return {k: f for f in findings for k in f.keys[:1]}


def test_each_refused_override_has_its_own_finding_and_the_rest_is_checked():
    findings = check_overrides(BASE + REFUSED + [LATER])
    got = _by_key(findings)
    assert got["trainer.nnode"].rule == "FC101" and got["trainer.nnode"].severity == "error"
    assert got["trainer.nnode"].fix == "did you mean trainer.nnodes=2?"
    assert got["trainer.nnode"].provenance["trainer.nnode"] == "command line `trainer.nnode=2`"
    assert got["rollout"].message.startswith("no option `bogus` in group `rollout`; available: hf, sglang, vllm")
    assert got["nope.key"].message == "nope.key: cannot delete a key that is not in the config"
    # the override after the refused ones was applied and judged
    assert [f.rule for f in findings if "actor_rollout_ref.actor.ppo_mini_batch_size" in f.keys][:1] == ["FC202"]


def test_the_refused_overrides_are_dropped_and_recorded_on_the_composed_config():
    composed, failed = compose_for_check(BASE + REFUSED + ["data.train_batch_size=8"])
    assert failed == []
    assert [f.keys[0] for f in composed.refused] == ["trainer.nnode", "rollout", "nope.key"]
    assert composed.cfg.data.train_batch_size == 8
    assert "nnode" not in composed.cfg.trainer
    assert composed.choices["rollout"] != "bogus"


def test_plus_fixes_and_refusals_together():
    findings = check_overrides(
        BASE
        + [
            "+actor_rollout_ref.actor.ppo_epochs=2",  # FC112: verl's tree has it
            "actor_rollout_ref.actor.fsdp_config.mixed_precision.param_dtype=bf16",  # FC105: needs `+`
            "rollout.n=64",  # FC101: not in the tree
        ]
    )
    assert {f.rule for f in findings if f.severity == "error"} >= {"FC101", "FC105", "FC112"}


def test_an_unknown_recipe_still_stops_the_compose():
    composed, failed = compose_for_check(["+recipe=no_such_recipe", "trainer.nnode=2"])
    assert composed is None
    assert [f.keys for f in failed] == [["recipe"]]  # the rest has no tree to be judged against


def test_a_recipe_files_unknown_group_option_is_reported_at_its_line_and_the_rest_checked(tmp_path):
    f = tmp_path / "mine.yaml"
    f.write_text("defaults:\n  - qwen_grpo\n  - override /rollout: bogus\n  - _self_\ntrainer:\n  nnode: 2\n")
    checked = check_yaml_file(f)
    assert checked.composed is not None
    got = _by_key(checked.findings)
    assert got["rollout"].location == (str(f), 3)
    assert "no option `bogus` in group `rollout` (chosen in a recipe's defaults list)" in got["rollout"].message
    assert got["trainer.nnode"].rule == "FC101"  # the file's own unknown key, found after the group error


SCRIPT = """#!/bin/bash
python3 -m verl.trainer.main_ppo \\
    data.train_files=$HOME/data/train.parquet \\
    +actor_rollout_ref.actor.ppo_epochs=2 \\
    ~trainer.nope \\
    actor_rollout_ref.actor.ppo_mini_batch_size=3 \\
    data.train_batch_size=4
"""


def test_a_run_scripts_refused_words_are_each_reported_at_their_line(tmp_path):
    f = tmp_path / "run.sh"
    f.write_text(SCRIPT)
    [checked] = check_run_script(f)
    assert checked.composed is not None  # composed with `+` dropped and without the refused deletion
    got = _by_key(checked.findings)
    assert got["actor_rollout_ref.actor.ppo_epochs"].rule == "FC112"  # verl refuses `+` on its own key
    assert got["trainer.nope"].message == "trainer.nope: cannot delete a key that is not in the config"
    assert got["trainer.nope"].provenance["trainer.nope"] == f"{f}:5"
    assert "FC202" in {f.rule for f in checked.findings}  # a rule that needs the composed config ran


def test_the_run_refuses_and_prints_every_refused_override(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rc = main([*BASE, *REFUSED, "--dry-run"])
    err = capsys.readouterr().err
    assert rc == 1
    assert "trainer.nnode" in err and "no option `bogus`" in err and "nope.key" in err
    assert "3 error(s) in the config; nothing was started" in err
    assert not (Path(tmp_path) / "runs").exists()
    assert has_errors(check_overrides(BASE + REFUSED))  # the same verdict from check
