"""Signs that learning has stopped (fsdpcfg/runinfo/learning.py, issue 23 item 3): warned during the run once
they held 3 steps, named in the closing summary, with why a random-init model earns no reward."""

from __future__ import annotations

import json

from fsdpcfg import assets
from fsdpcfg.runinfo.learning import PATIENCE, LearningWatch, stalled_spans, why_zero_reward
from fsdpcfg.runinfo.summary import closing_summary

LIVE = {
    "critic/advantages/max": 1.5,
    "critic/advantages/min": -0.7,
    "critic/rewards/mean": 0.25,
    "critic/rewards/max": 1.0,
    "actor/grad_norm": 0.4,
    "response_length/mean": 2.0,
    "actor/entropy": 1.3,
    "timing_s/step": 1.0,
}
# the main job on the random-init model: every reward 0, so every advantage and the gradient are 0
DEAD = {**LIVE, "critic/advantages/max": 0.0, "critic/advantages/min": 0.0, "critic/rewards/mean": 0.0,
        "critic/rewards/max": 0.0, "actor/grad_norm": 0.0}  # fmt: skip
# the collapse of arith_grpo at lr 1e-2: one-token answers, a policy sure of one token
COLLAPSED = {**LIVE, "response_length/mean": 1.0, "actor/entropy": 0.002}


def test_a_sign_warns_once_after_patience_steps_and_rearms():
    watch = LearningWatch(why_zero="WHY.")
    said = [watch.update(s, DEAD if s >= 2 else LIVE) for s in range(1, 8)]
    assert [len(x) for x in said] == [0, 0, 0, 2, 0, 0, 0]  # steps 2, 3, 4: the third in a row warns, once
    adv, grad = said[3]
    assert adv.startswith("fsdpcfg: warning: steps 2-4: every advantage is 0")
    assert "(critic/rewards/mean = 0)" in adv and " WHY. Try: rewards all 0" in adv
    assert grad.startswith("fsdpcfg: warning: steps 2-4: the gradient norm is 0 (no parameter moves)")
    assert "(actor/grad_norm = 0)" in grad
    assert watch.update(8, LIVE) == [] and watch.update(9, DEAD) == [] and watch.update(10, DEAD) == []
    assert len(watch.update(11, DEAD)) == 2  # came back for 3 steps: said again


def test_collapse_signs_and_a_healthy_run():
    watch = LearningWatch()
    said = [w for s in range(1, PATIENCE + 1) for w in watch.update(s, COLLAPSED)]
    assert [w.split(": ", 3)[3].split(" (")[0] for w in said] == [
        "the responses have collapsed to a token or less",
        "the policy's entropy is under 0.01 nats",
    ]
    assert "(response_length/mean = 1)" in said[0] and "actor_rollout_ref.actor.optim.lr" in said[0]
    assert not [w for s in range(1, 20) for w in LearningWatch().update(s, LIVE)]
    # an SFT run's rows have none of these metrics: nothing to say
    assert not [w for s in range(1, 9) for w in LearningWatch().update(s, {"train/loss": 0.0})]


def test_stalled_spans_name_every_span_of_three_or_more():
    rows = [{"step": 0, "val-core/x": 0.0}]
    rows += [{"step": s, **(DEAD if s in (2, 3, 4, 7, 8, 10, 11, 12, 13) else LIVE)} for s in range(1, 14)]
    assert stalled_spans(rows) == [
        "every advantage is 0 (each prompt's samples got the same reward, so the policy gradient is 0): "
        "steps 2-4, 10-13",
        "the gradient norm is 0 (no parameter moves): steps 2-4, 10-13",
    ]


def test_the_summary_says_why_a_random_init_model_earns_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("FSDPCFG_HOME", str(tmp_path / "home"))
    model = assets.asset_path("tiny-qwen2")  # random init, no warm start
    assert assets.random_init(model) == "tiny-qwen2"
    assert assets.random_init(assets.asset_path("tiny-qwen2-arith")) is None  # warm-started
    assert assets.random_init(tmp_path / "tiny-qwen2") is None  # not the asset folder
    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.jsonl").write_text("".join(json.dumps({"step": s, **DEAD}) + "\n" for s in range(1, 6)))
    cfg = {
        "fsdpcfg": {"run_dir": str(run)},
        "trainer": {"default_local_dir": str(tmp_path / "ck"), "total_training_steps": 5},
        "actor_rollout_ref": {"model": {"path": str(model)}},
    }
    text = closing_summary(cfg, ["+recipe=qwen_grpo"])
    assert "  stalled      every advantage is 0" in text and "steps 1-5" in text
    why = [line for line in text.splitlines() if line.startswith("  why ")]
    assert why == [f"  why          {why_zero_reward(str(model))}"]
    assert "random-init tiny-qwen2" in why[0] and "+recipe=arith_grpo_sft" in why[0]
    cfg["actor_rollout_ref"]["model"]["path"] = str(tmp_path / "my-model")
    assert "  why " not in closing_summary(cfg, ["+recipe=qwen_grpo"])
