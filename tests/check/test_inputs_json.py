"""``fsdpcfg check`` as CI runs it: several inputs at once, kept apart in ``--format json`` with each finding's file
and line; YAML that is not a config skipped (FC130) in every mode; scripts with no verl command skipped only with
``--skip-unrelated`` (FC131); usage errors as JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fsdpcfg.cli.main import main
from fsdpcfg.compose.config_file import classify, read

GOOD = "# @package _global_\ndefaults:\n  - qwen_grpo\n  - _self_\ndata:\n  train_batch_size: 8\n"
BAD = (
    "# @package _global_\ndefaults:\n  - qwen_grpo\n  - _self_\nactor_rollout_ref:\n  actor:\n"
    "    strategy: fsdp3\n    ppo_mini_batch_size: 3\n"
)
WORKFLOW = "name: ci\non: [push]\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n      - run: pytest\n"


def _json(capsys, *args: str) -> tuple[int, dict]:
    rc = main(["check", "--format", "json", *args])
    return rc, json.loads(capsys.readouterr().out)


def test_two_files_stay_apart_with_file_and_line(tmp_path: Path, capsys):
    (tmp_path / "good.yaml").write_text(GOOD)
    (tmp_path / "bad.yaml").write_text(BAD)
    good, bad = str(tmp_path / "good.yaml"), str(tmp_path / "bad.yaml")
    rc, doc = _json(capsys, bad, good)
    assert rc == 1 and doc["exit_code"] == 1
    assert [i["input"] for i in doc["inputs"]] == [bad, good]
    b, g = doc["inputs"]
    assert (
        g["status"] == "passes"
        and g["counts"]["error"] == 0
        and not any(f["severity"] == "error" for f in g["findings"])
    )
    assert b["status"] == "fails" and b["counts"]["error"] == sum(f["severity"] == "error" for f in b["findings"])
    strategy = next(f for f in b["findings"] if f["rule"] == "FC103")
    assert strategy["keys"] == ["actor_rollout_ref.actor.strategy"]
    assert Path(strategy["file"]).name == "bad.yaml" and strategy["line"] == 7
    batch = next(f for f in b["findings"] if f["rule"] == "FC202")  # the recipe's 4 prompts in mini batches of 3
    assert batch["keys"][0] == "actor_rollout_ref.actor.ppo_mini_batch_size"
    assert Path(batch["file"]).name == "bad.yaml" and batch["line"] == 8
    # the flat list holds the same findings, each naming its input
    assert [f["input"] for f in doc["findings"]] == [bad] * len(b["findings"]) + [good] * len(g["findings"])
    assert [{k: v for k, v in f.items() if k != "input"} for f in doc["findings"]] == b["findings"] + g["findings"]


def test_a_value_from_a_group_file_or_the_command_line(capsys):
    rc, doc = _json(capsys, "+recipe=qwen_grpo", "data.train_batch_size=6")
    assert rc == 1
    [one] = doc["inputs"]
    f = next(f for f in one["findings"] if f["rule"] == "FC202")
    # keys: the mini batch (set in recipes/qwen_grpo.yaml) first, then the command-line train batch; a finding
    # never points at a file of fsdpcfg's tree (issue 20 item 9): the user wrote no file, so it has none
    assert f["keys"][0] == "actor_rollout_ref.actor.ppo_mini_batch_size"
    assert (f["file"], f["line"]) == (None, None)
    rc, doc = _json(capsys, "+recipe=qwen_grpo", "actor_rollout_ref.actor.strategy=fsdp3")
    f = next(f for f in doc["findings"] if f["rule"] == "FC103")
    assert (f["file"], f["line"]) == (None, None)  # set on the command line: no file


def test_yaml_syntax_error_has_its_line(tmp_path: Path, capsys):
    p = tmp_path / "broken.yaml"
    p.write_text("# @package _global_\ndata:\n  train_batch_size: [8\n")
    rc, doc = _json(capsys, str(p))
    assert rc == 1
    [f] = doc["inputs"][0]["findings"]
    assert f["rule"] == "FC100" and f["file"] == str(p) and f["line"] == 4  # libyaml's mark: the end of the list


UNRELATED = {
    "ci.yml": WORKFLOW,
    "docker-compose.yml": "version: '3'\nservices:\n  web:\n    image: nginx\n",
    "k8s.yaml": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: Service\n",
    "one-pod.yaml": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\nspec:\n  containers: []\n",
    # a ConfigMap has `data:`, and an ML tool's config `model:`/`trainer:`: generic names beside foreign keys
    "trainer-config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: t\ndata:\n  LR: '1e-6'\n",
    "lightning.yaml": "seed_everything: 1\nmodel:\n  lr: 0.1\ntrainer:\n  max_epochs: 3\n",
    "playbook.yml": "- hosts: all\n  tasks: []\n",
    "chart.yaml": "apiVersion: v2\nname: {{ .Chart.Name }}\nversion: {{ .Chart.Version }}\n",
}


@pytest.mark.parametrize("name", sorted(UNRELATED))
def test_unrelated_yaml_is_an_info_in_every_mode(name, tmp_path: Path, capsys):
    p = tmp_path / name
    p.write_text(UNRELATED[name])
    assert read(p)[1].kind == "unrelated"
    for flags in ([], ["--skip-unrelated"]):
        rc, doc = _json(capsys, *flags, str(p))
        assert rc == 0 and doc["inputs"][0]["status"] == "skipped", doc
        [f] = doc["findings"]
        assert (f["rule"], f["severity"], f["file"], f["line"]) == ("FC130", "info", str(p), None)
    assert main(["check", str(p)]) == 0
    assert "check skipped (0 errors, 0 warnings, 1 info)" in capsys.readouterr().out


def test_script_without_verl_command(tmp_path: Path, capsys):
    s = tmp_path / "build.sh"
    s.write_text("#!/bin/bash\nmake -j8\n")
    (tmp_path / "good.yaml").write_text(GOOD)
    # alone, without the flag: a usage error, as a script named on the command line is meant to be a run script
    assert main(["check", str(s)]) == 2
    assert "no verl command found" in capsys.readouterr().err
    rc, doc = _json(capsys, str(s))
    assert rc == 2 and doc["exit_code"] == 2 and doc["inputs"] == [] and "command found" in doc["error"]["message"]
    # as a hook passes it, among other files: skipped
    rc, doc = _json(capsys, "--skip-unrelated", str(s), str(tmp_path / "good.yaml"))
    assert rc == 0 and [i["status"] for i in doc["inputs"]] == ["skipped", "passes"]
    assert doc["inputs"][0]["findings"][0]["rule"] == "FC131"
    # a missing file is still a usage error with the flag
    rc, doc = _json(capsys, "--skip-unrelated", str(tmp_path / "nope.sh"))
    assert rc == 2 and "no such file" in doc["error"]["message"]


@pytest.mark.parametrize(
    "args",
    [
        ["--bogus"],
        ["a=["],
        ["missing.yaml"],
        ["x.yaml", "data.train_batch_size=4"],
        ["--plan", "--no-plan"],
        ["-m", "+recipe=qwen_grpo"],
    ],
)
def test_usage_errors_are_json_with_exit_2(args):
    out = subprocess.run(
        [sys.executable, "-m", "fsdpcfg", "check", "--format=json", *args], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 2 and out.stderr == "", out.stderr
    doc = json.loads(out.stdout)
    assert doc["exit_code"] == 2 and doc["error"]["message"] and doc["inputs"] == [] == doc["findings"]


def test_help_documents_exit_codes_and_json(capsys):
    with pytest.raises(SystemExit):
        main(["check", "--help"])
    text = capsys.readouterr().out
    assert "exit codes:" in text and "  2  a usage error" in text and '"file"' in text and "--skip-unrelated" in text


@pytest.mark.parametrize(
    "data, kind, tree",
    [
        ({"actor_rollout_ref": {}, "data": {}, "trainer": {}, "algorithm": {}}, "full", "ppo"),
        (
            {"model": {}, "engine": {}, "optim": {}, "data": {}, "trainer": {}, "fsdpcfg": {"kind": "sft"}},
            "full",
            "sft",
        ),
        ({"model": {}, "engine": {}, "optim": {}, "data": {}, "trainer": {}, "checkpoint": {}}, "full", "sft"),
        (
            {
                "defaults": ["ppo_trainer", "_self_"],
                "hydra": {"searchpath": ["pkg://verl.trainer.config"]},
                "data": {"train_batch_size": 8},
            },
            "verl",
            "ppo",
        ),
        ({"defaults": ["sft_trainer_engine", "_self_"], "model": {"path": "x"}}, "verl", "sft"),
        ({"defaults": ["qwen_grpo", "_self_"], "data": {"train_batch_size": 8}}, "recipe", "ppo"),
        ({"data": {"train_batch_size": 8}}, "recipe", "ppo"),
        ({"trainer": {"nnodes": 2}}, "recipe", "ppo"),
        ({"services": {"a": {}}}, "unrelated", "ppo"),
        ({"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "b"}}, "unrelated", "ppo"),
        # another Hydra project: its defaults name its own options; an object node (_target_) is a fragment
        ({"defaults": [{"data": "mnist"}, {"model": "mnist"}, "_self_"], "task_name": "train"}, "unrelated", "ppo"),
        ({"_target_": "verl.workers.config.FSDPActorConfig", "strategy": "fsdp"}, "unrelated", "ppo"),
        ({"defaults": [{"override /engine": "fsdp"}], "task_name": "x"}, "recipe", "ppo"),
        # a section only verl has makes it a config even beside a mistyped section (reported, not skipped)
        ({"actor_rollout_ref": {}, "trainr": {}}, "recipe", "ppo"),
        ({"defaults": ["qwen_grpo"], "trainr": {}}, "recipe", "ppo"),
        ([1, 2], "unrelated", "ppo"),
    ],
)
def test_classify(data, kind, tree):
    info = classify(data)
    assert (info.kind, info.tree) == (kind, tree)
