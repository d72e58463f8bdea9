"""The doctor's five stages end to end on the tiny Qwen2 model (2 CPU ranks under torchrun, both engines), with
the remove_padding patch on so that stage 2 compares something and the GRPO actor runs packed while the rollout
replica runs padded."""

from __future__ import annotations

import pytest

from fsdpcfg.doctor import run_doctor


@pytest.mark.slow
@pytest.mark.distributed
def test_five_stages_on_tiny_qwen2(tiny_model_path, tmp_path):
    report = run_doctor(
        [
            "+recipe=qwen_grpo",
            f"actor_rollout_ref.model.path={tiny_model_path}",
            "actor_rollout_ref.model.use_remove_padding=true",
        ],
        work_dir=tmp_path,
        timeout=600,
    )
    assert report.ok, report.failure and report.failure.to_json()
    ran = [(r.stage, r.variant, r.status) for r in report.results]
    assert ran == [
        (0, "", "pass"),
        (1, "", "pass"),
        (2, "", "pass"),
        (3, "fsdp", "pass"),
        (3, "fsdp2", "pass"),
        (4, "fsdp", "pass"),
        (5, "fsdp", "pass"),
        (4, "fsdp2", "pass"),
        (5, "fsdp2", "pass"),
    ]
    by = {(r.stage, r.variant): r for r in report.results}
    assert by[(2, "")].data["remove_padding"]["max_logp_diff"] <= 5e-5
    for v in ("fsdp", "fsdp2"):
        sft, grpo, match = by[(3, v)].data, by[(4, v)].data, by[(5, v)].data
        assert len(sft["losses"]) == 2 and sft["param_change"] > 0
        assert len(grpo["steps"]) == 2 and len(grpo["replica_fingerprints"]) == 2
        assert any(s["actor/grad_norm"] > 0 for s in grpo["steps"])
        assert match["rollout_max_abs_diff"] <= match["tolerance"] == 5e-5
        assert match["checkpoint_max_abs_diff"] <= 5e-5 and match["optimizer_state_restored"]
        assert not match["bad_keys"]
        assert (tmp_path / f"grpo-{v}" / "ckpt" / "global_step_2" / "model.safetensors").is_file()
