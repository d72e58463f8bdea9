"""Units of the doctor: the patch comparison (and that it can fail), merging the ranks' events, the report."""

from __future__ import annotations

import pytest

from fsdpcfg.doctor import MODEL, ROLLOUT, STATE, Report, StageResult, render_json, render_table
from fsdpcfg.doctor.boundaries import Failure
from fsdpcfg.doctor.runner import merge_rank_events


@pytest.mark.slow  # end to end: a fresh Python process
def test_patch_stage_passes_for_the_native_patches(tiny_model):
    from fsdpcfg.compose import compose
    from fsdpcfg.doctor.stage_patches import run_patches

    cfg = compose(
        ["+recipe=qwen_grpo", "patches=remove_padding", "actor_rollout_ref.model.enable_gradient_checkpointing=true"]
    ).to_container(resolve=True)
    r = run_patches(cfg)
    assert r.status == "pass", r.failure
    assert set(r.data) == {"remove_padding", "gradient_checkpointing", "remove_padding+gradient_checkpointing"}
    assert all(d["max_logp_diff"] <= 5e-5 and d["max_rel_grad_diff"] <= 1e-4 for d in r.data.values())


@pytest.mark.slow  # end to end: a fresh Python process
def test_patch_comparison_detects_a_changed_model(tiny_model):
    """Ablation: a 'patch' that changes one weight slightly is caught by the forward and backward comparison."""
    import torch

    from fsdpcfg.doctor.compare import compare_patched, probe_batch
    from fsdpcfg.schema.model import ModelSection
    from fsdpcfg.train.model import load_model

    mcfg = ModelSection(path=str(tiny_model("tiny-qwen2")))
    plain, other = load_model(mcfg, torch.float32), load_model(mcfg, torch.float32)
    ids, mask, resp = probe_batch(plain.config.vocab_size)
    assert compare_patched(plain, other, ids, mask, resp).ok  # identical copies agree
    with torch.no_grad():
        other.model.layers[0].mlp.down_proj.weight.mul_(1.01)
    cmp = compare_patched(plain, other, ids, mask, resp)
    assert not cmp.ok and cmp.max_rel_grad_diff > cmp.grad_tol


def _ev(event, stage, variant, status="pass", failure=None):
    d = {"event": event, "stage": stage, "variant": variant}
    if event == "result":
        d.update(
            status=status, seconds=1.0, detail="", data={}, failure=failure.to_json() if failure else None, name="x"
        )
    return d


def test_merge_takes_a_failure_from_any_rank_and_stops():
    bad = Failure(ROLLOUT, "diff 0.3", "check the replica")
    r0 = [_ev("start", 3, "fsdp"), _ev("result", 3, "fsdp"), _ev("start", 5, "fsdp"), _ev("result", 5, "fsdp")]
    r1 = [
        _ev("start", 3, "fsdp"),
        _ev("result", 3, "fsdp"),
        _ev("start", 5, "fsdp"),
        _ev("result", 5, "fsdp", "FAIL", bad),
    ]
    merged = merge_rank_events([r0, r1], returncode=3)
    assert [(m.stage, m.status) for m in merged] == [(3, "pass"), (5, "FAIL")]
    assert merged[-1].failure.boundary == ROLLOUT and merged[-1].failure.message == "diff 0.3"


def test_merge_reports_an_interrupted_stage_with_its_default_boundary():
    r0 = [_ev("start", 4, "fsdp2")]
    r1 = [_ev("start", 4, "fsdp2")]
    merged = merge_rank_events([r0, r1], returncode=None, timed_out=True, timeout=60)
    assert merged[0].status == "FAIL" and merged[0].failure.boundary == STATE
    assert "timeout of 60s" in merged[0].failure.message
    crashed = merge_rank_events([r0, r1], returncode=-9, tail="...\nKilled")
    assert "exit code -9" in crashed[0].failure.message and "Killed" in crashed[0].failure.message


def test_merge_reports_a_launch_that_never_started():
    merged = merge_rank_events([], returncode=1, tail="ModuleNotFoundError: No module named 'x'")
    assert merged[0].status == "FAIL" and "No module named" in merged[0].failure.message


def test_report_renders_the_first_failure_and_the_stages_not_run():
    rep = Report(model="/m", recipe="qwen_grpo", overrides=[])
    rep.results = [
        StageResult(0, "", "pass", 0.5, "ok"),
        StageResult(
            1,
            "",
            "FAIL",
            2.0,
            "",
            failure=Failure(MODEL, "cannot load", "set trust_remote_code", error_type="ValueError"),
        ),
    ]
    text = render_table(rep)
    assert "FAILED at stage 1 load; boundary: model construction" in text
    assert "ValueError: cannot load" in text and "-> set trust_remote_code" in text
    assert text.count("not run") == 4
    js = rep.to_json()
    assert js["stopped_at"]["boundary"] == MODEL and js["not_run"] == ["patches", "sft", "grpo", "match"]
    assert '"ok": false' in render_json(rep)


@pytest.mark.parametrize("text,ok", [("fsdp", True), ("fsdp2+lora", True), ("fsdp3", False), ("fsdp+qlora", False)])
def test_variant_parse(text, ok):
    from fsdpcfg.doctor import Variant
    from fsdpcfg.errors import UsageError

    if ok:
        assert Variant.parse(text).name == text
    else:
        with pytest.raises(UsageError):
            Variant.parse(text)


def test_a_failed_comparison_is_a_fail_with_its_boundary_and_survives_json():
    r = StageResult.failed(
        4, "fsdp2", 1.5, "grad norm 0", STATE, "the GRPO steps gave no gradient", "check dtypes", {"n": 2}
    )
    assert (r.stage, r.variant, r.status, r.seconds, r.detail, r.data) == (
        4,
        "fsdp2",
        "FAIL",
        1.5,
        "grad norm 0",
        {"n": 2},
    )
    assert r.failure == Failure(STATE, "the GRPO steps gave no gradient", "check dtypes")
    back = StageResult.from_json(r.to_json())
    assert back.failure == r.failure and back.status == "FAIL" and back.name == "grpo"
