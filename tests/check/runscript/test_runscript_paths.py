"""Every path of a run script (fsdpcfg.check.runscript.fork): variants where the script branches on what the check
cannot know, key names judged when values are not, and the share of keys judged (issue 20 items 3 and 4)."""

from __future__ import annotations

import json
import textwrap

from fsdpcfg.check.runscript import evaluate_variants
from fsdpcfg.check.sources import check_run_script

ENV = {"HOME": "/home/u"}

DEVICE_PROBE = """\
DEVICE=${DEVICE:-$(python3 -c 'import torch_npu' 2>/dev/null && echo npu || echo gpu)}
case "$DEVICE" in
    gpu) TP=2; N=8 ;;
    npu) TP=4; N=16 ;;
    *) exit 1 ;;
esac
[ -d repo ] || git clone https://example.com/repo
python3 -m verl.trainer.main_ppo \\
    algorithm.adv_estimator=grpo \\
    data.train_files=/d/train.parquet \\
    data.train_batch_size=64 \\
    actor_rollout_ref.model.path=Qwen/Qwen2.5-0.5B-Instruct \\
    actor_rollout_ref.actor.ppo_mini_batch_size=16 \\
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=$N \\
    actor_rollout_ref.rollout.name=vllm \\
    actor_rollout_ref.rollout.n=4 \\
    actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=8 \\
    actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=8 \\
    actor_rollout_ref.rollout.tensor_model_parallel_size=$TP \\
    trainer.n_gpus_per_node=8 "$@"
"""


def _tp(ev):
    [c] = [c for c in ev.commands if any(w.text == "verl.trainer.main_ppo" for w in c.argv)]
    return [w.text for w in c.argv if "tensor_model_parallel_size" in w.text]


def test_a_device_probe_gives_one_variant_per_device_and_a_needless_branch_none():
    vs = evaluate_variants(DEVICE_PROBE, environ=ENV)
    assert [v.label for v in vs] == ["DEVICE=npu", "DEVICE=gpu"]  # `[ -d repo ] || git clone` changes nothing
    assert [_tp(v.evaluation) for v in vs] == [
        ["actor_rollout_ref.rollout.tensor_model_parallel_size=4"],
        ["actor_rollout_ref.rollout.tensor_model_parallel_size=2"],
    ]
    [v] = evaluate_variants(DEVICE_PROBE, environ=dict(ENV, DEVICE="gpu"))  # given: one path, no label
    assert v.label == "" and _tp(v.evaluation) == ["actor_rollout_ref.rollout.tensor_model_parallel_size=2"]


def test_each_variant_is_checked_and_labelled(tmp_path):
    f = tmp_path / "run.sh"
    f.write_text(DEVICE_PROBE)
    results = check_run_script(f, environ=ENV)
    assert [r.label for r in results] == [f"{f}:8 [DEVICE=npu]", f"{f}:8 [DEVICE=gpu]"]
    # npu: 16 micro > 16 mini x 4 / 8 ranks = 8 per rank (FC205); gpu: 8 fits
    errors = [[x.rule for x in r.findings if x.severity == "error"] for r in results]
    assert errors == [["FC205"], []]
    assert [r.keys_judged for r in results] == [(12, 12), (12, 12)]


def test_an_argument_loop_without_arguments_runs_zero_times():
    script = textwrap.dedent("""\
        LR=1e-6
        EPOCHS=3
        while [[ $# -gt 0 ]]; do
            case "$1" in
                --lr) LR=$2; shift 2 ;;
                --epochs) EPOCHS=$2; shift 2 ;;
                *) shift ;;
            esac
        done
        python3 -m verl.trainer.main_ppo actor_rollout_ref.actor.optim.lr=$LR trainer.total_epochs=$EPOCHS
    """)
    vs = evaluate_variants(script, environ=ENV)
    assert vs[0].label == "no arguments"
    [c] = vs[0].evaluation.commands
    assert [(w.text, w.known) for w in c.argv[3:]] == [
        ("actor_rollout_ref.actor.optim.lr=1e-6", True),
        ("trainer.total_epochs=3", True),
    ]
    # with arguments the loop may set them: unknown there (the second variant)
    assert vs[1].label == "with arguments" and not all(w.known for w in vs[1].evaluation.commands[0].argv)
    [v] = evaluate_variants(script, args=["--lr", "2e-6"], environ=ENV)  # given: bash's one path
    assert v.evaluation.commands[0].argv[3].text == "actor_rollout_ref.actor.optim.lr=2e-6"


def _check(tmp_path, body: str, **kw):
    f = tmp_path / "run.sh"
    f.write_text(body)
    return f, check_run_script(f, environ=ENV, **kw)


BASE = (
    "algorithm.adv_estimator=grpo data.train_files=/d/t.parquet data.train_batch_size=64 "
    "actor_rollout_ref.model.path=Qwen/Qwen2.5-0.5B-Instruct actor_rollout_ref.actor.ppo_mini_batch_size=16 "
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2 actor_rollout_ref.rollout.name=vllm "
    "actor_rollout_ref.rollout.n=4 actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=8 "
    "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=8 trainer.n_gpus_per_node=8"
)


def test_a_key_is_judged_even_when_its_value_is_unknown(tmp_path):
    _, [r] = _check(tmp_path, f"python3 -m verl.trainer.main_ppo {BASE} trainer.nnode=$(cat nodes.txt)\n")
    rules = {(x.rule, x.severity) for x in r.findings if "trainer.nnode" in x.keys}
    assert ("FC101", "error") in rules  # the unknown value does not hide the unknown key
    assert r.keys_judged == (11, 12)


def test_a_script_token_keeps_its_own_plus(tmp_path):
    # `+` on a key verl's tree has: Hydra refuses it (FC112), from a script as on the command line
    _, [r] = _check(tmp_path, f"python3 -m verl.trainer.main_ppo {BASE} +actor_rollout_ref.actor.optim.lr=$LR\n")
    assert [(x.rule, x.keys) for x in r.findings if x.severity == "error"] == [
        ("FC112", ["actor_rollout_ref.actor.optim.lr"])
    ]
    # no `+` on a key below a free mapping: Hydra refuses it (FC105); the value is known here
    _, [r] = _check(
        tmp_path,
        f"python3 -m verl.trainer.main_ppo {BASE} "
        "actor_rollout_ref.rollout.engine_kwargs.vllm.enable_expert_parallel=true\n",
    )
    assert [x.rule for x in r.findings if x.severity == "error"] == ["FC105"]


def test_a_command_cut_by_a_comment_is_reported_with_its_line(tmp_path):
    f, [r] = _check(
        tmp_path,
        f"python3 -m verl.trainer.main_ppo {BASE} \\\n"
        "    trainer.total_epochs=2 \\ # two epochs\n"
        "    trainer.nnodes=1\n",
    )
    [cut] = [x for x in r.findings if x.rule == "FC132"]
    assert cut.severity == "error" and cut.location == (str(f), 2) and "' #'" in cut.message


def test_a_command_named_by_an_unset_variable_is_checked_from_its_keys(tmp_path):
    _, [r] = _check(tmp_path, f"$COMMAND {BASE}\n")
    assert r.composed is not None and r.composed.kind == "ppo"
    assert any(x.rule == "FC124" and "`$COMMAND`" in x.message for x in r.findings)


def test_the_share_of_keys_judged_is_printed_and_in_the_json(tmp_path, capsys):
    from fsdpcfg.cli.main import main

    f = tmp_path / "run.sh"
    f.write_text(f"python3 -m verl.trainer.main_ppo {BASE} trainer.nnodes=$NODES\n")
    main(["check", "--no-plan", str(f)])
    assert "keys judged: 11 of the 12 the script sets (91%)" in capsys.readouterr().out
    main(["check", "--format", "json", str(f)])
    doc = json.loads(capsys.readouterr().out)
    assert doc["inputs"][0]["keys"] == {"set": 12, "judged": 11, "share": 0.917}
