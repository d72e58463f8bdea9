"""``fsdpcfg import SCRIPT``: a verl run script as a declarative recipe (issue 24).

Equality: for every trainer command of ``tests/check/scripts/*.sh`` and ``tests/check/scripts/corpus/*.sh`` (each
path of the script) that the check reads with no FC107/FC108 note, the imported recipe composed as
``+recipe=FILE`` gives the config ``compose(translation.overrides)`` gives (OmegaConf containers, unresolved,
without ``hydra``). The commands that cannot be equal, and why:

* a key whose value is ``???`` (OmegaConf's "no value"; verl 0.9.1's default of ``actor_rollout_ref.rollout.name``,
  which most corpus scripts leave unset, so verl refuses them): merged from a recipe, ``???`` keeps the value below
  (fsdpcfg's ``rollout=hf``), so a recipe cannot write it. The recipe lists the key in its header ("NOT in this
  recipe") and the test compares every other key (the listed keys are the only difference).
* ``sft_megatron_bad.sh``, ``corpus/config_name_{0,1}.sh``: the translation itself does not compose (the check
  reports the error: ``optim=fsdp`` with ``engine=megatron``; a Megatron key where ``--config-path`` cannot be read
  and verl's ``ppo_trainer`` stands in); there is no config to be equal to. ``fsdpcfg check`` of the recipe reports
  an error too.
* commands with an FC107 note (``unknowns.sh``, ``sft_torchrun.sh``, ``corpus/required_var_*.sh``,
  ``corpus/nvidia_count_*.sh``, ``corpus/torchrun_sft_slice_0.sh``, ``corpus/usage_check.sh``, the
  "with arguments" paths of ``corpus/arg_loop*.sh`` and ``corpus/until_loop.sh``, ...): the check stands verl's
  default in for the value it cannot know; the recipe leaves the key out (and lists it), so fsdpcfg's value stands.
* FC108 (``mlite_actor.sh``, ``sft_mlite.sh``, ...): a group option fsdpcfg does not model is not written (listed).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from fsdpcfg.check.runscript.to_recipe import import_command
from fsdpcfg.check.sources import check_run_script, check_yaml_file, read_run_script
from fsdpcfg.cli.main import main
from fsdpcfg.compose import compose
from fsdpcfg.errors import ConfigError, UsageError
from fsdpcfg.verlref import flatten

SCRIPTS = Path(__file__).resolve().parents[1] / "check" / "scripts"
ALL = sorted(SCRIPTS.glob("*.sh")) + sorted((SCRIPTS / "corpus").glob("*.sh"))


def _tree(overrides: list[str]) -> dict:
    cfg = OmegaConf.to_container(compose(overrides).cfg, resolve=False)
    assert isinstance(cfg, dict)
    cfg.pop("hydra", None)
    return cfg


def _commands(script: Path):
    read = read_run_script(script)
    for label, ev, cmds in read.kept:
        for vc in cmds:
            if vc.kind in ("ppo", "sft") or vc.entry.startswith("verl.trainer.fsdp_sft"):
                yield label, ev, vc


@pytest.mark.slow  # a corpus of 89 scripts, two composes of each command (~3 min on one core)
@pytest.mark.parametrize("script", ALL, ids=lambda p: str(p.relative_to(SCRIPTS)))
def test_imported_recipe_composes_to_the_checked_config(script, tmp_path):
    compared = 0
    for n, (label, ev, vc) in enumerate(_commands(script)):
        rec = import_command(vc, ev, script, variant=label)
        if {f.rule for f in rec.translation.notes} & {"FC107", "FC108"}:
            continue
        f = tmp_path / f"imported_{n}.yaml"
        f.write_text(rec.text)
        try:
            expected = _tree(rec.translation.overrides)
        except ConfigError:  # `fsdpcfg check SCRIPT` reports it; checking the recipe reports an error too
            assert any(x.severity == "error" for x in check_yaml_file(f).findings)
            continue
        got = _tree([f"+recipe={f}"])
        unset = {d.split(":", 1)[0] for d in rec.dropped if " is ??? (no value" in d}
        assert len(unset) == len(rec.dropped), rec.dropped  # nothing else was left out of these commands
        if not unset:
            assert got == expected, f"{script}:{vc.line} [{label}]"
        else:
            flat_got, flat_expected = flatten(got), flatten(expected)
            for key in unset:
                assert flat_expected[key] == "???"
                flat_got[key] = "???"
            assert flat_got == flat_expected, f"{script}:{vc.line} [{label}]"
        compared += 1
    if script.name in ("grpo_arrays.sh", "megatron.sh", "sft_megatron.sh", "stage_dispatch_0.sh"):
        assert compared  # the equality was checked on these


@pytest.mark.parametrize("name", ["grpo_arrays_bad.sh", "sft_bad.sh", "ray_submit_bad.sh", "megatron.sh"])
def test_checking_the_recipe_finds_no_more_errors_than_checking_the_script(name, tmp_path):
    script = SCRIPTS / name
    checked = [c for c in check_run_script(script) if c.composed is not None]
    (label, ev, vc), *_ = list(_commands(script))
    f = tmp_path / "imported.yaml"
    f.write_text(import_command(vc, ev, script, variant=label).text)
    errors = [x for x in check_yaml_file(f).findings if x.severity == "error"]
    script_errors = [x for x in checked[0].findings if x.severity == "error"]
    assert len(errors) <= len(script_errors), [x.message for x in errors]


def test_import_writes_the_recipe_and_says_how_to_run_it(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", "/home/u")
    assert main(["import", str(SCRIPTS / "grpo_arrays.sh")]) == 0
    out = capsys.readouterr().out
    f = Path("recipes/grpo_arrays.yaml")
    text = f.read_text()
    assert f"wrote {f}" in out and f"fsdpcfg check {f}" in out and f"python -m fsdpcfg +recipe={f}" in out
    assert text.startswith("# @package _global_\n")
    assert "grpo_arrays.sh, line 41: python -m verl.trainer.main_ppo" in text
    assert "  - override /launcher: verl\n" in text and "  - override /rollout: vllm\n" in text
    assert "    ppo_mini_batch_size: 64  # grpo_arrays.sh:24 (script: ${MINI_BS})\n" in text
    assert "train_files: /home/u/data/gsm8k/train.parquet  # grpo_arrays.sh:15" in text
    assert "$HOME from the environment (HOME=/home/u)" in text
    assert "  logger: [console]  # grpo_arrays.sh:36\n" in text
    assert "experiment_name: gsm8k  # verl's default" in text
    # never overwritten
    assert main(["import", str(SCRIPTS / "grpo_arrays.sh")]) == 2
    assert "recipes/grpo_arrays.yaml exists" in capsys.readouterr().err
    assert f.read_text() == text


def test_one_file_per_path_and_per_command(tmp_path, capsys):
    out = tmp_path / "r" / "probe.yaml"
    assert main(["import", str(SCRIPTS / "corpus" / "arrays_device_probe_0.sh"), "-o", str(out)]) == 0
    assert sorted(p.name for p in out.parent.iterdir()) == ["probe_DEVICE_gpu.yaml", "probe_DEVICE_npu.yaml"]
    assert "[DEVICE=npu]" in (out.parent / "probe_DEVICE_npu.yaml").read_text()
    assert main(["import", str(SCRIPTS / "functions_env.sh"), "-o", str(tmp_path / "f.yaml")]) == 0
    assert (tmp_path / "f.yaml").is_file() and (tmp_path / "f_2.yaml").is_file()
    printed = capsys.readouterr().out
    assert "probe_DEVICE_gpu.yaml" in printed and "f_2.yaml" in printed


def test_usage_errors_write_nothing(tmp_path, capsys):
    assert main(["import", str(tmp_path / "missing.sh"), "-o", str(tmp_path / "x.yaml")]) == 2
    assert "no such file" in capsys.readouterr().err
    plain = tmp_path / "plain.sh"
    plain.write_text("echo hello\nls -l\n")
    assert main(["import", str(plain), "-o", str(tmp_path / "x.yaml")]) == 2
    assert "no verl command found" in capsys.readouterr().err
    other = SCRIPTS / "other_entries.sh"
    assert main(["import", str(other), "-o", str(tmp_path / "x.yaml")]) == 2
    assert "no verl trainer command fsdpcfg imports" in capsys.readouterr().err
    # one of several files exists: none is written
    (tmp_path / "p_DEVICE_gpu.yaml").write_text("x: 1\n")
    probe = SCRIPTS / "corpus" / "arrays_device_probe_0.sh"
    assert main(["import", str(probe), "-o", str(tmp_path / "p.yaml")]) == 2
    assert not (tmp_path / "p_DEVICE_npu.yaml").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p_DEVICE_gpu.yaml", "plain.sh"]


def test_what_a_recipe_cannot_hold_is_listed_and_printed(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("MY_API_KEY", "s3cr3t-value")
    script = tmp_path / "run.sh"
    script.write_text(
        "#!/bin/bash\n"
        "python3 -m verl.trainer.main_ppo \\\n"
        "    actor_rollout_ref.model.path=Qwen/Qwen2.5-0.5B-Instruct \\\n"
        "    actor_rollout_ref.rollout.name=vllm \\\n"
        "    trainer.n_gpus_per_node=$(nproc) \\\n"
        "    ~trainer.val_before_train \\\n"
        "    hydra.run.dir=/tmp/x \\\n"
        "    reward_model.reward_manager=naive \\\n"
        "    +trainer.note=$MY_API_KEY \\\n"
        "    data.train_batch_size=64  # tuned for 8 GPUs\n"
    )
    out = tmp_path / "run.yaml"
    assert main(["import", str(script), "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    text = out.read_text()
    head = text.split("defaults:", 1)[0]
    for what in ("$(nproc)", "~trainer.val_before_train", "hydra.run.dir"):
        assert what in head and what in printed, what
    assert "reward_model.reward_manager -> reward.reward_manager.name" in head
    assert "migrated: run.sh:8 reward_model.reward_manager -> reward.reward_manager.name" in printed
    assert "    name: naive  # run.sh:8" in text
    assert "  note: ${oc.env:MY_API_KEY}  # run.sh:9" in text and "s3cr3t" not in text
    assert "  train_batch_size: 64  # run.sh:10; tuned for 8 GPUs" in text
    assert "n_gpus_per_node" not in text.split("defaults:", 1)[1]


def test_a_shell_script_given_as_a_recipe_points_at_import(tmp_path):
    script = tmp_path / "run.sh"
    script.write_text("python3 -m verl.trainer.main_ppo data.train_batch_size=8\n")
    with pytest.raises(UsageError, match="shell script") as e:
        compose([f"+recipe={script}"])
    assert e.value.fix is not None and f"fsdpcfg import {script}" in e.value.fix


@pytest.mark.slow
def test_run_with_a_shell_script_recipe_is_a_usage_error(tmp_path):
    script = tmp_path / "run.sh"
    script.write_text("python3 -m verl.trainer.main_ppo data.train_batch_size=8\n")
    p = subprocess.run(
        [sys.executable, "-m", "fsdpcfg", f"+recipe={script}"], capture_output=True, text=True, timeout=300
    )
    assert p.returncode == 2, p.stderr
    assert f"fsdpcfg import {script}" in p.stderr
