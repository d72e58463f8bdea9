"""Config files as verl reads them, and findings located in the user's own file (issue 20 items 8 and 9):
YAML values by OmegaConf's rules (``lr: 1e-6`` is a float, as Hydra and verl read it), ``null`` where verl's
dataclass annotation allows it and verl reads it, a dump's engine from its strategy when ``model_engine`` is
absent, and every finding's ``file``/``line`` in the user's file, never in a file of fsdpcfg's tree."""

from __future__ import annotations

import importlib.util
import json

import pytest
import yaml

from fsdpcfg import verlref, yamlio
from fsdpcfg.check import check_overrides
from fsdpcfg.check.sources import check_run_script, check_yaml_file
from fsdpcfg.cli.check import json_report
from fsdpcfg.cli.main import main


def _dump(tmp_path, composition: str, edit, name: str = "dump.yaml"):
    """A full verl config of ``composition`` (verl 0.9.1's defaults), edited, as a dump of it reads."""
    tree = verlref.tree(composition)
    tree["actor_rollout_ref"]["model"]["path"] = str(tmp_path / "model")
    tree["actor_rollout_ref"]["rollout"]["name"] = "vllm"
    text = edit(yaml.safe_dump(tree, sort_keys=False), tree)
    f = tmp_path / name
    f.write_text(text)
    return f


def _rules(findings, key):
    return [(f.rule, f.severity) for f in findings if key in f.keys and f.severity != "info"]


def test_yaml_reads_scientific_notation_as_omegaconf_does():
    assert yamlio.load("lr: 1e-6\nwd: 1E-2\nn: 1_000\nd: 2024-01-01\n") == {
        "lr": 1e-6,
        "wd": 0.01,
        "n": 1000,
        "d": "2024-01-01",  # no timestamps in OmegaConf's loader
    }


def test_a_dumped_float_in_scientific_notation_is_no_type_error(tmp_path):
    def edit(text, _tree):
        return text.replace("lr: 1.0e-06", "lr: 1e-6").replace("clip_ratio: 0.2", "clip_ratio: 2e-1")

    f = _dump(tmp_path, "ppo_trainer", edit)
    assert "lr: 1e-6" in f.read_text() and "clip_ratio: 2e-1" in f.read_text()
    findings = check_yaml_file(f).findings
    assert _rules(findings, "actor_rollout_ref.actor.optim.lr") == []
    assert _rules(findings, "actor_rollout_ref.actor.clip_ratio") == []


def test_a_dump_without_model_engine_takes_its_engine_from_the_strategy(tmp_path):
    def edit(text, _tree):
        return "\n".join(line for line in text.splitlines() if not line.startswith("model_engine:")) + "\n"

    f = _dump(tmp_path, "ppo_megatron_trainer", edit)
    checked = check_yaml_file(f)
    assert not [f.keys for f in checked.findings if f.rule == "FC113"]  # megatron keys are megatron's
    assert any(f.rule == "FC111" for f in checked.findings)  # the engine-independent rules ran, FC111 says so


def test_null_min_lr_ratio_is_what_verl_reads_as_zero():
    base = ["+recipe=qwen_grpo", "actor_rollout_ref.actor.optim.lr_scheduler_type=cosine"]
    got = check_overrides(base + ["actor_rollout_ref.actor.optim.min_lr_ratio=null"])
    assert not [f for f in got if "actor_rollout_ref.actor.optim.min_lr_ratio" in f.keys and f.severity == "error"]
    bad = check_overrides(base + ["actor_rollout_ref.actor.optim.min_lr_ratio=2"])
    assert _rules(bad, "actor_rollout_ref.actor.optim.min_lr_ratio") == [("FC103", "error")]


@pytest.mark.slow
@pytest.mark.verl
@pytest.mark.skipif(importlib.util.find_spec("verl") is None, reason="verl 0.9.1 is not installed")
def test_verl_reads_null_min_lr_ratio_as_zero():
    import torch
    from verl.utils.torch_functional import get_cosine_schedule_with_warmup

    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    sched = get_cosine_schedule_with_warmup(opt, num_warmup_steps=0, num_training_steps=10, min_lr_ratio=None)
    for _ in range(10):
        opt.step()
        sched.step()
    assert sched.get_last_lr() == [pytest.approx(0.0)]


RECIPE = """# @package _global_
defaults:
  - qwen_grpo
  - _self_
actor_rollout_ref:
  actor:
    ppo_mini_batch_size: 3
  rollout:
    n: 1
"""


def test_no_finding_points_at_a_file_of_fsdpcfgs_tree(tmp_path):
    f = tmp_path / "mine.yaml"
    f.write_text(RECIPE)
    checked = check_yaml_file(f)
    doc = json_report([checked])
    located = [(x["rule"], x["file"], x["line"]) for x in doc["findings"]]
    assert located and all(file == str(f) for _, file, _ in located), located
    # a finding on the user's own key is at that key's line
    assert ("FC202", str(f), 7) in located
    # FC205 on the old log-prob batch names only keys the shipped recipe and the group options set: it is located
    # at the line of the user's defaults list that brings them in (`- qwen_grpo`), not in recipes/qwen_grpo.yaml
    log_prob = [
        x for x in doc["findings"] if "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu" in x["keys"]
    ]
    assert log_prob and all((x["file"], x["line"]) == (str(f), 3) for x in log_prob)


def test_a_command_line_finding_points_at_no_file(capsys):
    assert main(["check", "--no-plan", "--format", "json", "+recipe=qwen_grpo", "actor_rollout_ref.rollout.n=1"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["findings"] and all(x["file"] is None for x in doc["findings"]), doc["findings"]


def test_a_scripts_finding_points_at_the_script(tmp_path):
    f = tmp_path / "run.sh"
    f.write_text(
        "#!/bin/bash\npython3 -m verl.trainer.main_ppo \\\n    actor_rollout_ref.rollout.n=1 \\\n    ~trainer.nope\n"
    )
    [checked] = check_run_script(f)
    doc = json_report([checked])
    files = {x["file"] for x in doc["findings"] if x["severity"] == "error"}
    assert files == {str(f)}, doc["findings"]
    [gone] = [x for x in doc["findings"] if "trainer.nope" in x["keys"]]
    assert gone["line"] == 4
