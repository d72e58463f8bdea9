"""The SFT tree through the checker: the recipe passes, the SFT rules report batch arithmetic and native-launcher
limits with numbers, the SFT schema has verl's defaults, and RL rules never run on an SFT config (nor SFT rules
on an RL config)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from fsdpcfg import verlref
from fsdpcfg.check import check_overrides


def _rules(findings, severity="error"):
    return [f.rule for f in findings if f.severity == severity]


def test_recipe_passes_and_only_sft_rules_run():
    findings = check_overrides(["+recipe=qwen_sft"])
    assert [f for f in findings if f.severity != "info"] == [], [f.message for f in findings]
    assert not any(f.rule == "FC000" for f in findings)
    for strategy in ("fsdp", "fsdp2"):
        assert _rules(check_overrides(["+recipe=qwen_sft", f"engine={strategy}"])) == []


def test_rl_recipe_runs_no_sft_rule():
    from fsdpcfg.rules.registry import RULES

    assert {r.kinds for r in RULES.values() if r.id.startswith(("FC150", "FC25"))} == {("sft",)}
    assert not any(f.rule in ("FC150", "FC250", "FC251", "FC252") for f in check_overrides(["+recipe=qwen_grpo"]))


@pytest.mark.parametrize(
    "overrides, numbers",
    [
        (
            ["data.train_batch_size=6"],
            ["3 sequences (6 / 2 ranks)", "micro_batch_size_per_gpu 2", "dp 2 x micro 2 = 4"],
        ),
        (["data.train_batch_size=7"], ["7 does not split over 2 data-parallel ranks"]),
        (["trainer.n_gpus_per_node=4", "data.micro_batch_size_per_gpu=4"], ["2 sequences (8 / 4 ranks)"]),
    ],
)
def test_batch_split_rule_reports_the_numbers(overrides, numbers):
    findings = [f for f in check_overrides(["+recipe=qwen_sft", *overrides]) if f.rule == "FC250"]
    assert len(findings) == 1 and findings[0].severity == "error"
    for n in numbers:
        assert n in findings[0].message, findings[0].message
    assert "data.train_batch_size" in findings[0].keys


def test_batch_split_with_dynamic_bsz_only_needs_the_dp_split():
    f = check_overrides(["+recipe=qwen_sft", "launcher=verl", "data.use_dynamic_bsz=true", "data.train_batch_size=6"])
    assert "FC250" not in _rules(f)


def test_native_limits_and_schema_errors():
    assert _rules(check_overrides(["+recipe=qwen_sft", "data.use_dynamic_bsz=true"])) == ["FC251"]
    assert _rules(check_overrides(["+recipe=qwen_sft", "engine.ulysses_sequence_parallel_size=2"])) == ["FC252"]
    verl_sp = ["+recipe=qwen_sft", "launcher=verl", "engine.ulysses_sequence_parallel_size=2"]
    assert _rules(check_overrides(verl_sp)) == []
    # wandb and mlflow are sinks of the native trainers (fsdpcfg/train/trackers.py); swanlab only verl has
    assert "FC804" not in _rules(check_overrides(["+recipe=qwen_sft", "trainer.logger=[console,wandb,mlflow]"]))
    assert _rules(check_overrides(["+recipe=qwen_sft", "trainer.logger=[console,swanlab]"])) == ["FC804"]
    assert "FC804" not in _rules(check_overrides(["+recipe=qwen_sft", "launcher=verl", "trainer.logger=[swanlab]"]))
    assert _rules(check_overrides(["+recipe=qwen_grpo", "trainer.logger=[console,clearml]"])) == ["FC804"]
    f = [x for x in check_overrides(["+recipe=qwen_sft", "+optim.lrr=1e-4"]) if x.rule == "FC150"]
    assert len(f) == 1 and "did you mean optim.lr?" in f[0].message
    f = [x for x in check_overrides(["+recipe=qwen_sft", "engine.strategy=fsdp3"]) if x.rule == "FC150"]
    assert len(f) == 1 and "engine.strategy" in f[0].keys and "'fsdp', 'fsdp2' or 'fsdp_turbo'" in f[0].message
    f = [x for x in check_overrides(["+recipe=qwen_sft", "data.micro_batch_size_per_gpu=two"]) if x.severity == "error"]
    assert [x.rule for x in f] == ["FC150"]  # the batch rule does not crash on a string


def test_schema_defaults_are_verls():
    from fsdpcfg.rules.sft_rules import _schema_defaults

    verl = verlref.defaults("sft_trainer_engine")
    ours = _schema_defaults()
    compared = [k for k in ours if k in verl]
    assert len(compared) > 70
    assert {k: (ours[k], verl[k]) for k in compared if ours[k] != verl[k]} == {}
    # keys the schema has that verl's sft_trainer_engine does not: fsdpcfg's section and the wrap class
    extra = sorted(k for k in ours if k not in verl)
    assert all(k.startswith("fsdpcfg.") for k in extra if k != "engine.wrap_policy.transformer_layer_cls_to_wrap")


@pytest.mark.slow  # end to end: a fresh Python process
def test_check_cli_exit_codes():
    ok = subprocess.run(
        [sys.executable, "-m", "fsdpcfg", "check", "+recipe=qwen_sft"], capture_output=True, text=True, timeout=120
    )
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "grad_accum: 2 = batch_per_rank 4 / data.micro_batch_size_per_gpu 2" in ok.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "fsdpcfg", "check", "+recipe=qwen_sft", "data.train_batch_size=6"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode != 0 and "FC250" in bad.stdout + bad.stderr and "Traceback" not in bad.stderr


def test_validation_keys_under_the_native_sft_trainer_are_errors():
    assert _rules(check_overrides(["+recipe=qwen_sft", "trainer.test_freq=2"]), "error") == ["FC253"]
    found = [f for f in check_overrides(["+recipe=qwen_sft", "data.val_files=/tmp/val.jsonl"]) if f.rule == "FC253"]
    assert found and found[0].keys == ["data.val_files"]
    # verl's SFT trainer validates: no finding there
    assert not [
        f for f in check_overrides(["+recipe=qwen_sft", "launcher=verl", "trainer.test_freq=2"]) if f.rule == "FC253"
    ]


@pytest.mark.parametrize(
    "overrides, key, text",
    [
        (["data.train_batch_size=7"], "data.train_batch_size", "7 does not split over 2 data-parallel ranks (FC250"),
        (["data.use_dynamic_bsz=true"], "data.use_dynamic_bsz", "not by the native SFT trainer (FC251)"),
        (["engine.ulysses_sequence_parallel_size=2"], "engine.ulysses_sequence_parallel_size", "(FC252)"),
    ],
)
def test_sft_plan_refuses_through_the_rules(overrides, key, text):
    """The plan asks the same rules ``fsdpcfg check`` runs: the error names the rule."""
    from fsdpcfg.compose import compose
    from fsdpcfg.errors import ConfigError
    from fsdpcfg.plan.sft import make_sft_plan

    assert make_sft_plan(compose(["+recipe=qwen_sft"]).to_container()).grad_accum == 2
    with pytest.raises(ConfigError) as e:
        make_sft_plan(compose(["+recipe=qwen_sft", *overrides]).to_container())
    assert e.value.key == key and text in e.value.message, e.value.message


def test_sft_on_verls_other_engines_is_checked_by_the_engine_independent_rules():
    """engine=megatron / automodel (verl's engine=X optim=X): FC111 info and no error under launcher=verl; the
    native SFT trainer refuses them (FC254); the batch split judges Megatron's data-parallel group."""
    verl = ["+recipe=qwen_sft", "launcher=verl", "trainer=gpu_8x", "data.train_batch_size=32"]
    for engine in ("megatron", "automodel", "veomni", "torchtitan"):
        findings = check_overrides([*verl, f"engine={engine}"])
        assert _rules(findings) == [] and _rules(findings, "warning") == [], [f.message for f in findings]
        [info] = [f for f in findings if f.rule == "FC111"]
        assert f"engine={engine}" in info.message and "--verl" in info.fix
    # the native SFT trainer runs fsdp/fsdp2 only
    [refusal] = [f for f in check_overrides(["+recipe=qwen_sft", "engine=megatron"]) if f.rule == "FC254"]
    assert refusal.severity == "error" and "launcher=verl" in refusal.fix and "engine=fsdp2" in refusal.fix
    # 8 GPUs / tensor parallel 4 = 2 data-parallel ranks: 32 / 2 = 16 per rank, micro 2 divides it
    mp = [*verl, "engine=megatron", "engine.tensor_model_parallel_size=4", "data.micro_batch_size_per_gpu=2"]
    assert _rules(check_overrides(mp)) == []
    # 8 data-parallel ranks (tp 1): 32 / 8 = 4 per rank, not a multiple of micro 8
    [fc250] = [
        f for f in check_overrides([*verl, "engine=megatron", "data.micro_batch_size_per_gpu=8"]) if f.rule == "FC250"
    ]
    assert "4 sequences (32 / 8 ranks)" in fc250.message and "engine.tensor_model_parallel_size" in fc250.keys
    # an FSDP key under Megatron is named, with the engine it belongs to
    [fc113] = [f for f in check_overrides([*verl, "engine=megatron", "+engine.fsdp_size=2"]) if f.rule == "FC113"]
    assert fc113.keys == ["engine.fsdp_size"] and "sft_trainer_engine" in fc113.message


@pytest.mark.parametrize("key", ["trainer.save_freq", "trainer.test_freq"])
def test_after_each_epoch_is_a_frequency_as_in_verls_sft_trainer(key):
    """verl 0.9.1's ``verl/trainer/sft_trainer.py`` reads ``after_each_epoch`` in both keys as one epoch's steps
    (verl's examples/sft/gsm8k scripts write it): not an FC150 error."""
    assert _rules(check_overrides(["+recipe=qwen_sft", f"{key}=after_each_epoch"])) == []
    bad = [f for f in check_overrides(["+recipe=qwen_sft", f"{key}=each_epoch"]) if f.severity == "error"]
    assert [(f.rule, f.keys) for f in bad] == [("FC150", [key])]  # one finding, named by the key, not a union member
    assert bad[0].message == (
        f"{key}='each_epoch': Input should be a valid integer; or Input should be 'after_each_epoch'"
    )


def test_the_native_sft_trainer_saves_after_each_epoch_as_verl():
    """``after_each_epoch`` is one epoch's steps: rows // data.train_batch_size (verl's dataloader drops the last
    partial batch); an int is taken as it is."""
    from types import SimpleNamespace

    from fsdpcfg.train.sft.trainer import SFTTrainer

    def every(freq, rows=100, batch=8):
        fake = SimpleNamespace(
            cfg=SimpleNamespace(trainer=SimpleNamespace(save_freq=freq)),
            dataset=range(rows),
            plan=SimpleNamespace(train_batch_size=batch),
        )
        return SFTTrainer.save_every(fake)  # type: ignore[arg-type]

    assert every("after_each_epoch") == 12
    assert every("after_each_epoch", rows=96) == 12
    assert every(5) == 5 and every(-1) == -1


def test_fsdp_turbo_is_verls_fsdp_config_and_not_the_native_trainers():
    # verl 0.9.1's FSDPEngineConfig takes strategy fsdp_turbo (verl/workers/engine/fsdp/fsdp_turbo_impl.py)
    verl = check_overrides(["+recipe=qwen_sft", "launcher=verl", "engine.strategy=fsdp_turbo"])
    assert _rules(verl) == []  # was a false FC150 ("Input should be 'fsdp' or 'fsdp2'")
    native = [f for f in check_overrides(["+recipe=qwen_sft", "engine.strategy=fsdp_turbo"]) if f.severity == "error"]
    assert [(f.rule, f.keys) for f in native] == [("FC254", ["engine.strategy", "fsdpcfg.launcher"])]
    assert "engine.strategy=fsdp_turbo is verl's fsdp_turbo engine, run by launcher=verl" in native[0].message
    assert _rules(check_overrides(["+recipe=qwen_sft", "engine.strategy=fsdp_turbox"])) == ["FC150"]
