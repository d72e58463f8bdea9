"""What cannot work is refused (issue 14 item 7): the memory gate (FC450), ranges of numeric keys (FC103), a
deleted key the run reads (FC140), corrupt config.json fields (FC451) and broken chat templates (FC452), in
``check`` and in the run's ``--dry-run``."""

from __future__ import annotations

import json
import shutil

import pytest

from fsdpcfg.check import check_overrides
from fsdpcfg.cli.main import main
from fsdpcfg.schema import _base as B

R = ["+recipe=qwen_grpo"]


def _errors(overrides, rule=None):
    found = [f for f in check_overrides(R + list(overrides)) if f.severity == "error"]
    return [f for f in found if rule is None or f.rule == rule]


def _dry_run(capsys, overrides) -> tuple[int, str]:
    rc = main(R + list(overrides) + ["--dry-run"])
    out = capsys.readouterr()
    assert "Traceback" not in out.out + out.err
    return rc, out.out + out.err


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


# -- FC450: the memory estimate gates -----------------------------------------------------------------------------
def test_a_model_whose_estimate_is_far_past_the_device_is_an_error(in_tmp, capsys):
    over = ["fsdpcfg.device_memory_gb=0.01"]  # the tiny model's ~0.6 GiB peak on a 10 MiB device
    (f,) = _errors(over, "FC450")
    assert "past the margin of fsdpcfg.memory_margin=0.25" in f.message and "0.01 GiB" in f.message
    assert "fsdpcfg.memory_margin" in f.fix
    rc, out = _dry_run(capsys, over)
    assert rc == 1 and "FC450" in out and "nothing was started" in out


def test_ten_thousand_gib_on_a_twelve_gib_device(in_tmp):
    """The issue's case: a real 0.5B model with batches and lengths whose own estimate is ~10,000 GiB."""
    over = [
        "model=qwen2_5_0_5b_instruct",
        "trainer=gpu_1x",
        "fsdpcfg.device_memory_gb=12",
        "data.max_prompt_length=65536",
        "data.max_response_length=65536",
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=64",
    ]
    found = [f for f in check_overrides(R + over) if f.rule == "FC450"]
    assert found and found[0].severity == "error", [(f.rule, f.message) for f in check_overrides(R + over)]
    assert "12.00 GiB one rank may use (fsdpcfg.device_memory_gb)" in found[0].message


def test_near_the_device_is_a_warning_and_within_the_margin_too(in_tmp):
    from fsdpcfg.check import resolve
    from fsdpcfg.compose import compose
    from fsdpcfg.estimate.memory import estimate_memory

    peak = estimate_memory(resolve(compose(R))[0], suggest=False).peak_bytes / 2**30
    for device in (peak / 0.95, peak / 1.1):  # 95% of the device; 10% over it (within the 25% margin)
        found = [f for f in check_overrides(R + [f"fsdpcfg.device_memory_gb={device:.6f}"]) if f.rule == "FC450"]
        assert [f.severity for f in found] == ["warning"], (device, found)
    assert not [f for f in check_overrides(R + [f"fsdpcfg.device_memory_gb={peak * 2:.6f}"]) if f.rule == "FC450"]


def test_memory_margin_null_turns_the_error_into_a_warning_and_the_run_goes_on(in_tmp, capsys):
    over = ["fsdpcfg.device_memory_gb=0.01", "fsdpcfg.memory_margin=null"]
    found = [f for f in check_overrides(R + over) if f.rule == "FC450"]
    assert [f.severity for f in found] == ["warning"]
    rc, out = _dry_run(capsys, over)
    assert rc == 0 and "torch.distributed.run" in out
    assert _errors(["fsdpcfg.device_memory_gb=0.01", "fsdpcfg.memory_margin=100"], "FC450") == []


# -- ranges on numeric keys -----------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "override, words",
    [
        ("actor_rollout_ref.rollout.n=1000000000000000000000000000000", f"less than or equal to {B.MAX_SAMPLES}"),
        ("actor_rollout_ref.rollout.n=1e30", "valid integer"),
        ("actor_rollout_ref.model.lora_rank=1000000000000", f"less than or equal to {B.MAX_LORA_RANK}"),
        ("data.max_prompt_length=100000000", f"less than or equal to {B.MAX_TOKENS}"),
        ("data.train_batch_size=2147483648", f"less than or equal to {B.MAX_SIZE}"),
        ("actor_rollout_ref.rollout.response_length=100000000", f"less than or equal to {B.MAX_TOKENS}"),
        ("trainer.n_gpus_per_node=100000", f"less than or equal to {B.MAX_RANKS_PER_NODE}"),
        ("trainer.nnodes=1000000", f"less than or equal to {B.MAX_NODES}"),
        ("data.seed=-1", "greater than or equal to 0"),
        ("actor_rollout_ref.rollout.seed=4294967296", f"less than or equal to {B.MAX_SEED}"),
        ("actor_rollout_ref.actor.optim.lr=inf", "finite number"),
        ("actor_rollout_ref.actor.entropy_coeff=nan", "finite number"),
        ("trainer.save_freq=-10000000000", "greater than or equal to -2147483647"),
        ("data.dataloader_num_workers=100000", f"less than or equal to {B.MAX_WORKERS}"),
        ("fsdpcfg.memory_margin=-1", "greater than or equal to 0"),
        # torch.optim.AdamW: "Invalid beta parameter at index 1: 1.0" at the first step (issue 22 item 5)
        ("actor_rollout_ref.actor.optim.betas=[0.9,1.0]", "[0.9, 1.0]: input should be less than 1"),
        (
            "actor_rollout_ref.actor.optim.betas=[-0.1,0.999]",
            "[-0.1, 0.999]: input should be greater than or equal to 0",
        ),
    ],
)
def test_values_that_cannot_work_are_range_errors(in_tmp, capsys, override, words):
    key = override.split("=", 1)[0]
    found = [f for f in _errors([override]) if f.rule == "FC103" and key in f.keys]
    assert found and words in found[0].message, [(f.rule, f.message) for f in _errors([override])]
    rc, out = _dry_run(capsys, [override])
    assert rc == 1 and "nothing was started" in out


def test_values_at_the_bounds_are_accepted():
    for o in (
        "actor_rollout_ref.rollout.n=4096",
        "actor_rollout_ref.model.lora_rank=65536",
        "data.seed=4294967295",
        "trainer.save_freq=-1",
        "actor_rollout_ref.rollout.top_k=-1",
        "actor_rollout_ref.actor.optim.betas=[0,0.999999]",
    ):
        assert not [f for f in _errors([o]) if f.rule == "FC103"], o


def test_sft_adamw_betas_in_zero_one():
    """The SFT tree's ``optim.betas`` takes what torch.optim.AdamW takes: each in [0, 1)."""
    from fsdpcfg.check import check_overrides

    def errors(o):
        return [f"{f.rule} {f.message}" for f in check_overrides(["+recipe=qwen_sft", o]) if f.severity == "error"]

    assert errors("optim.betas=[0.9,1.5]") == ["FC150 optim.betas=[0.9, 1.5]: Input should be less than 1"]
    assert errors("optim.betas=[-0.5,0.9]") == [
        "FC150 optim.betas=[-0.5, 0.9]: Input should be greater than or equal to 0"
    ]
    assert errors("optim.betas=[0.0,0.99]") == []


# -- FC140: ~key of a key the run reads -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "deleted", ["~fsdpcfg", "~data.train_batch_size", "~trainer.default_local_dir", "~fsdpcfg.run_dir"]
)
def test_deleting_a_key_the_run_reads_is_refused_by_check_and_by_the_run(in_tmp, capsys, deleted):
    found = _errors([deleted])
    assert any(f.rule in ("FC140", "FC104") and deleted[1:] in f.keys for f in found), found
    rc, out = _dry_run(capsys, [deleted])
    assert rc == 1 and "Traceback" not in out


# -- FC451: config.json fields ----------------------------------------------------------------------------------------
@pytest.fixture
def model_with(tiny_model_path, tmp_path):
    def make(**fields):
        d = tmp_path / "model"
        shutil.rmtree(d, ignore_errors=True)
        shutil.copytree(tiny_model_path, d)
        cfg = json.loads((d / "config.json").read_text())
        cfg.update(fields)
        (d / "config.json").write_text(json.dumps(cfg))  # NaN is written as NaN, as json.dumps does
        return d

    return make


@pytest.mark.parametrize(
    "fields, words",
    [
        ({"hidden_size": "sixty-four"}, 'hidden_size = "sixty-four": must be an integer'),
        ({"num_hidden_layers": -2}, "num_hidden_layers = -2: must be from 1"),
        ({"num_attention_heads": 0}, "num_attention_heads = 0: must be from 1"),
        ({"rope_theta": float("nan")}, "rope_theta = NaN: must be a finite number"),
        ({"vocab_size": 1.5}, "vocab_size = 1.5: must be an integer"),
        ({"tie_word_embeddings": "yes"}, 'tie_word_embeddings = "yes": must be true or false'),
        ({"num_key_value_heads": 3}, "num_attention_heads = 4 is not a multiple of num_key_value_heads = 3"),
        ({"intermediate_size": True}, "intermediate_size = true: must be an integer"),
    ],
)
def test_corrupt_config_json_is_an_error_naming_the_file_field_and_value(in_tmp, capsys, model_with, fields, words):
    d = model_with(**fields)
    over = [f"actor_rollout_ref.model.path={d}"]
    found = _errors(over, "FC451")
    assert found and words in found[0].message and str(d / "config.json") in found[0].message, found
    assert not [f for f in check_overrides(R + over) if f.rule == "FC000"]  # no rule crashed on it
    rc, out = _dry_run(capsys, over)
    assert rc == 1 and "FC451" in out


def test_a_bad_override_config_value_is_an_error_on_its_key(in_tmp):
    (f,) = _errors(["+actor_rollout_ref.model.override_config.num_attention_heads=0"], "FC451")
    assert f.keys == ["actor_rollout_ref.model.override_config"] and "num_attention_heads = 0" in f.message


# -- FC452: chat templates --------------------------------------------------------------------------------------------
BROKEN = "{% for m in messages %}\n{{ m['content'] }\n{% endfor %}"


def test_a_broken_chat_template_in_tokenizer_config_names_the_file_and_line(in_tmp, capsys, model_with):
    d = model_with()
    tc = json.loads((d / "tokenizer_config.json").read_text())
    tc["chat_template"] = BROKEN
    (d / "tokenizer_config.json").write_text(json.dumps(tc))
    over = [f"actor_rollout_ref.model.path={d}"]
    (f,) = _errors(over, "FC452")
    assert f"{d / 'tokenizer_config.json'} chat_template: line 2 of the chat template" in f.message
    assert "unexpected '}'" in f.message
    rc, out = _dry_run(capsys, over)
    assert rc == 1 and "FC452" in out


def test_a_broken_chat_template_jinja_file_and_custom_template(in_tmp, model_with):
    d = model_with()
    (d / "chat_template.jinja").write_text("{% if x %}\nno end")
    (f,) = _errors([f"actor_rollout_ref.model.path={d}"], "FC452")
    assert f"{d / 'chat_template.jinja'}: line 2" in f.message
    (f,) = _errors(["actor_rollout_ref.model.custom_chat_template='{{ x '"], "FC452")
    assert f.keys == ["actor_rollout_ref.model.custom_chat_template"]


def test_the_shipped_templates_parse():
    assert not [f for f in check_overrides(R) if f.rule in ("FC451", "FC452")]


@pytest.mark.parametrize("deep", ["[" * 100_000 + "]" * 100_000, '{"a":' * 100_000 + "1" + "}" * 100_000])
def test_a_config_json_nested_100000_deep_is_fc401_in_check_and_the_dry_run(in_tmp, capsys, model_with, deep):
    """json.loads recursed into a RecursionError: a traceback in `check`, FC000 warnings in the dry run (issue 22
    item 5)."""
    d = model_with()
    (d / "config.json").write_text(deep)
    over = [f"actor_rollout_ref.model.path={d}"]
    found = [(f.rule, f.message) for f in _errors(over)]
    assert found == [
        (
            "FC401",
            f"actor_rollout_ref.model.path = {d} cannot be used: config.json is nested too deeply to be read "
            "(json.loads: RecursionError)",
        )
    ]
    rc, out = _dry_run(capsys, over)
    assert rc == 1 and "nothing was started" in out and "Traceback" not in out and "FC000" not in out


def test_a_recipe_file_with_an_integer_past_4300_digits_is_an_error_not_a_traceback(in_tmp, capsys, tmp_path):
    from fsdpcfg.cli.main import main

    f = tmp_path / "big.yaml"
    f.write_text(f"# @package _global_\ndefaults:\n  - /recipe/qwen_grpo\ntrainer:\n  seed: {'9' * 4400}\n")
    rc = main(["check", str(f)])
    out = capsys.readouterr()
    assert rc == 1 and "Traceback" not in out.out + out.err
    assert f"FC100 {f}:5 {f}:5: an integer of 4,400 digits, more than Python converts (4,300" in out.out
    rc = main([f"+recipe={f}", "--dry-run"])
    out = capsys.readouterr()
    assert rc == 1 and "an integer of 4,400 digits" in out.err + out.out and "Traceback" not in out.err + out.out
