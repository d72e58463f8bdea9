"""The doctor stops at the right stage and names the right boundary (fast: stage 0 or 1, no torchrun).

Cases from issue 6: a model that needs remote code (the config-only Qwen-7B asset), one without a chat template
(tiny Llama-2 base), one whose wrap class cannot be found; plus the same wrap-class error raised at run time by
the engine, classified from its traceback.
"""

from __future__ import annotations

import json
import shutil

import pytest

from fsdpcfg.doctor import CONFIG, MODEL, ROLLOUT, STATE, TRANSFER, run_doctor
from fsdpcfg.doctor.boundaries import boundary_of_frames, boundary_of_rule, failure_from_exception

RECIPE = "+recipe=qwen_grpo"


def _path(tiny_model, name):
    return f"actor_rollout_ref.model.path={tiny_model(name)}"


def test_remote_code_model_stops_at_the_static_check(tiny_model):
    report = run_doctor([RECIPE, _path(tiny_model, "qwen-v1-config")])
    f = report.failure
    assert (f.stage, f.failure.boundary) == (0, MODEL)
    assert f.failure.rules[0] == "FC402" and "trust_remote_code" in f.failure.fix
    assert [r.stage for r in report.results] == [0]  # nothing heavier ran


def test_remote_code_trusted_but_absent_stops_at_load(tiny_model, tmp_path):
    template = "'{% for m in messages %}{{ m.content }}{% endfor %}'"
    # the config-only asset with a weights file beside it (FC421 would stop the static check first): what stops
    # it now is the remote code that is not there
    model = tmp_path / "qwen-v1"
    shutil.copytree(tiny_model("qwen-v1-config"), model)
    (model / "model.safetensors").write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{}      ")
    report = run_doctor(
        [
            RECIPE,
            f"actor_rollout_ref.model.path={model}",
            "actor_rollout_ref.model.trust_remote_code=true",
            f"actor_rollout_ref.model.custom_chat_template={template}",
        ]
    )
    f = report.failure
    assert [r.stage for r in report.results] == [0, 1]
    assert (f.stage, f.failure.boundary) == (1, MODEL)
    assert "configuration_qwen.py" in f.failure.message  # transformers looked for the remote code
    assert ".py files" in f.failure.fix


def test_model_without_chat_template_stops_at_the_static_check(tiny_model):
    report = run_doctor([RECIPE, _path(tiny_model, "tiny-llama2")])
    f = report.failure
    assert (f.stage, f.failure.boundary, f.failure.rules) == (0, MODEL, ("FC403",))
    assert "custom_chat_template" in f.failure.fix


def test_wrap_class_not_found_stops_at_the_static_check():
    report = run_doctor(
        [RECIPE, "actor_rollout_ref.actor.fsdp_config.wrap_policy.transformer_layer_cls_to_wrap=[NotAClass]"]
    )
    f = report.failure
    assert (f.stage, f.failure.boundary, f.failure.rules) == (0, STATE, ("FC405",))
    assert "Qwen2DecoderLayer" in f.failure.fix


def test_wrap_class_error_at_run_time_is_a_training_state_failure(tiny_model):
    """The engine's own error (what stage 3/4 would meet if the static check could not see it) maps to the same
    boundary through its traceback, and keeps the engine's fix."""
    from fsdpcfg.errors import ConfigError
    from fsdpcfg.schema.model import ModelSection
    from fsdpcfg.train.engine.fsdp import decoder_layer_classes
    from fsdpcfg.train.model import load_model

    cfg = ModelSection(path=str(tiny_model("tiny-qwen2")))
    import torch

    model = load_model(cfg, torch.float32)
    with pytest.raises(ConfigError) as e:
        decoder_layer_classes(model, ["NotAClass"])
    failure = failure_from_exception(e.value, CONFIG)
    assert failure.boundary == STATE
    assert "Qwen2DecoderLayer" in failure.message and failure.key.endswith("transformer_layer_cls_to_wrap")


def test_frames_map_to_boundaries():
    assert (
        boundary_of_frames(
            [
                ("fsdpcfg.doctor.stage_grpo", "run_grpo"),
                ("fsdpcfg.train.loop", "step"),
                ("fsdpcfg.train.rollout.hf", "update_weights"),
            ],
            STATE,
        )
        == TRANSFER
    )
    assert (
        boundary_of_frames(
            [
                ("fsdpcfg.train.loop", "step"),
                ("fsdpcfg.train.rollout.hf", "generate"),
                ("transformers.generation.utils", "generate"),
            ],
            STATE,
        )
        == ROLLOUT
    )
    assert (
        boundary_of_frames(
            [
                ("fsdpcfg.train.loop", "__init__"),
                ("fsdpcfg.train.model", "load_model"),
                ("transformers.modeling_utils", "from_pretrained"),
            ],
            STATE,
        )
        == MODEL
    )
    assert (
        boundary_of_frames(
            [
                ("fsdpcfg.train.loop", "save"),
                ("fsdpcfg.train.checkpoint", "save_checkpoint"),
                ("fsdpcfg.train.engine.fsdp", "iter_full_params"),
            ],
            ROLLOUT,
        )
        == TRANSFER
    )
    assert (
        boundary_of_frames(
            [
                ("fsdpcfg.train.sft.trainer", "__init__"),
                ("fsdpcfg.train.sft.dataset", "__init__"),
                ("transformers.tokenization_utils_base", "apply_chat_template"),
            ],
            STATE,
        )
        == MODEL
    )
    assert boundary_of_frames([("fsdpcfg.doctor.worker", "main")], ROLLOUT) == ROLLOUT  # nothing known: default
    assert [boundary_of_rule(r) for r in ("FC402", "FC405", "FC406", "FC201")] == [MODEL, STATE, ROLLOUT, CONFIG]


def test_cli_json_names_stage_and_boundary(tiny_model, capsys):
    from fsdpcfg.cli.main import main

    rc = main(["doctor", RECIPE, _path(tiny_model, "tiny-llama2"), "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 1 and out["ok"] is False
    assert out["stopped_at"]["stage"] == 0 and out["stopped_at"]["boundary"] == MODEL
    assert out["not_run"] == ["load", "patches", "sft", "grpo", "match"]


def test_cli_table_and_usage_errors(tiny_model, capsys):
    from fsdpcfg.cli.main import main

    assert main(["doctor", RECIPE, _path(tiny_model, "qwen-v1-config")]) == 1
    out = capsys.readouterr().out
    assert "FAILED at stage 0 check; boundary: model construction" in out and "not run" in out
    assert main(["doctor", RECIPE, "--format", "xml"]) == 2
    assert main(["doctor", RECIPE, "--engines", "fsdp3"]) == 2
    assert main(["doctor"]) == 2
    assert main(["doctor", "+recipe=qwen_sft"]) == 2  # the doctor takes a GRPO recipe
    assert main(["doctor", RECIPE, "actor_rollout_ref.actor.no_such_key=1"]) == 1  # a stage-0 failure, no traceback
    assert "stage 0" in capsys.readouterr().out
