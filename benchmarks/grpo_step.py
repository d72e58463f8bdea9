"""GRPO step time and throughput: the native engine (``python -m fsdpcfg +recipe=qwen_grpo``) against TRL 1.16's
``GRPOTrainer``, both as 2 CPU processes under ``torchrun --nproc_per_node=2``, on the same machine in one run.

    python benchmarks/grpo_step.py [--model tiny-qwen2] [--steps 6] [--write]

Matched settings (TRL's defaults differ: bf16, gradient checkpointing, beta 0, logging every 10 steps, a linear
schedule, shuffling): the same model folder, the GSM8K prompts of ``fsdpcfg/data/datasets/gsm8k/train.jsonl`` in
file order (no shuffling), 4 prompts x 4 completions = 16 completions per step, 32 new tokens at most, sampling
at temperature 1 (top-p 1, no top-k), fp32 everywhere, no gradient checkpointing, the k3 (low-variance) KL
penalty with beta 0.001 against a reference model, learning rate 1e-5 constant, weight decay 0.01, gradient
clipping 1.0, one optimizer step per step of 2 micro-batches of 4 completions per process, rewards normalised by
the group's std, the GSM8K strict reward, logging every step.

Measured: per step, wall time (the native loop's ``timing_s/step``; TRL: ``on_step_begin`` to ``on_step_end`` on
rank 0) and tokens (prompt + completion tokens over both processes: the native ``perf/total_num_tokens``, TRL's
``num_tokens`` increments). The first ``--warmup`` steps are left out; the table gives medians.
``--write`` records the table in benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

PROMPTS, N, RESPONSE, LR, BETA, MICRO = 4, 4, 32, 1e-5, 0.001, 4
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}


def native(model_path: str, steps: int, run_dir: Path) -> list[dict]:
    """Run the native loop; return its per-step records from ``metrics.jsonl``."""
    ovs = [
        "+recipe=qwen_grpo",
        f"actor_rollout_ref.model.path={model_path}",
        f"trainer.total_training_steps={steps}",
        f"data.train_batch_size={PROMPTS}",
        f"actor_rollout_ref.rollout.n={N}",
        f"data.max_response_length={RESPONSE}",
        f"actor_rollout_ref.actor.ppo_mini_batch_size={PROMPTS}",
        f"actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu={MICRO}",
        f"actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu={MICRO}",
        f"actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu={MICRO}",
        "actor_rollout_ref.actor.use_kl_loss=true",
        f"actor_rollout_ref.actor.kl_loss_coef={BETA}",
        "actor_rollout_ref.actor.kl_loss_type=low_var_kl",
        f"actor_rollout_ref.actor.optim.lr={LR}",
        "actor_rollout_ref.actor.optim.weight_decay=0.01",
        "data.shuffle=false",
        "trainer.save_freq=-1",
        f"trainer.default_local_dir={run_dir}/ckpt",
        f"fsdpcfg.run_dir={run_dir}",
        "trainer.logger=[console]",
        "trainer.val_before_train=false",  # the step is timed, not validation
        "trainer.test_freq=-1",
        "trainer.resume_mode=disable",
    ]
    p = subprocess.run([sys.executable, "-m", "fsdpcfg", *ovs], capture_output=True, text=True, cwd=ROOT, env=ENV)
    if p.returncode:
        raise SystemExit(f"native run failed ({p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    recs = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines() if x.strip()]
    recs = [r for r in recs if "timing_s/step" in r]  # training steps only
    return [
        {
            "step_s": r["timing_s/step"],
            "tokens": r["perf/total_num_tokens"],
            "gen_s": r.get("timing_s/gen"),
            "update_s": r.get("timing_s/update_actor"),
        }
        for r in recs
    ]


def trl_worker(model_path: str, steps: int, out: str) -> None:
    """One torchrun rank of TRL's GRPOTrainer with the matched settings; rank 0 writes per-step records."""
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from fsdpcfg.rewards.gsm8k import compute_score
    from fsdpcfg.train.data import read_rows

    rows = read_rows(str(ROOT / "fsdpcfg/data/datasets/gsm8k/train.jsonl"), max_samples=PROMPTS * (steps + 2))
    ds = Dataset.from_list([{"prompt": r["prompt"], "ground_truth": r["reward_model"]["ground_truth"]} for r in rows])

    def gsm8k_reward(completions, ground_truth, **_):
        texts = [c[0]["content"] if isinstance(c, list) else c for c in completions]
        return [float(compute_score(t, g)) for t, g in zip(texts, ground_truth, strict=True)]

    world = int(os.environ.get("WORLD_SIZE", "1"))
    per_device = PROMPTS * N // world // 2  # two micro-batches per process, as the native run
    args = GRPOConfig(
        output_dir=str(Path(out) / "trl"),
        use_cpu=True,
        bf16=False,
        fp16=False,
        gradient_checkpointing=False,
        per_device_train_batch_size=per_device,
        gradient_accumulation_steps=2,
        num_generations=N,
        max_completion_length=RESPONSE,
        temperature=1.0,
        top_p=1.0,
        top_k=0,
        beta=BETA,
        learning_rate=LR,
        lr_scheduler_type="constant",
        weight_decay=0.01,
        max_grad_norm=1.0,
        num_iterations=1,
        scale_rewards="group",
        loss_type="dapo",
        shuffle_dataset=False,
        logging_steps=1,
        max_steps=steps,
        save_strategy="no",
        report_to="none",
        seed=42,
        disable_tqdm=True,
        dataloader_num_workers=0,
    )
    tok = AutoTokenizer.from_pretrained(model_path)
    model = AutoModelForCausalLM.from_pretrained(model_path, dtype="float32")
    records: list[dict] = []

    class Timer(TrainerCallback):
        def on_step_begin(self, a, state, control, **kw):
            self.t = time.perf_counter()

        def on_step_end(self, a, state, control, **kw):
            records.append({"step_s": time.perf_counter() - self.t})

        def on_log(self, a, state, control, logs=None, **kw):
            if logs and "num_tokens" in logs and records:
                records[-1]["num_tokens"] = logs["num_tokens"]

    trainer = GRPOTrainer(
        model=model, reward_funcs=gsm8k_reward, args=args, train_dataset=ds, processing_class=tok, callbacks=[Timer()]
    )
    trainer.train()
    if trainer.accelerator.is_main_process:
        prev = 0.0
        for r in records:
            r["tokens"], prev = r.get("num_tokens", prev) - prev, r.get("num_tokens", prev)
        Path(out, "trl.json").write_text(json.dumps(records))


def trl(model_path: str, steps: int, tmp: Path) -> list[dict]:
    """Run TRL's GRPOTrainer under torchrun (2 processes); return its per-step records."""
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node",
        "2",
        __file__,
        "--trl-worker",
        model_path,
        str(steps),
        str(tmp),
    ]
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=ENV)
    if p.returncode:
        raise SystemExit(f"TRL run failed ({p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return json.loads((tmp / "trl.json").read_text())


def summarise(recs: list[dict], warmup: int) -> dict:
    """Median step time (s) and tokens/s over the steps after ``warmup``."""
    kept = recs[warmup:] or recs
    return {
        "step_s": statistics.median(r["step_s"] for r in kept),
        "tok_s": statistics.median(r["tokens"] / r["step_s"] for r in kept),
        "tokens": statistics.median(r["tokens"] for r in kept),
        "steps": len(kept),
    }


def main(argv: list[str] | None = None) -> int:
    """Run both sides and print (``--write``: record) the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="tiny-qwen2", help="an fsdpcfg asset name (see `fsdpcfg assets list`)")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--only", choices=("native", "trl"), help="run one side only (for profiling)")
    ap.add_argument("--label", default="", help="a note for the table row (e.g. before/after a fix)")
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--trl-worker", nargs=3, metavar=("MODEL", "STEPS", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.trl_worker:
        trl_worker(args.trl_worker[0], int(args.trl_worker[1]), args.trl_worker[2])
        return 0
    from fsdpcfg import assets

    path = str(assets.ensure(args.model))
    load0 = os.getloadavg()[0]
    res = {}
    with tempfile.TemporaryDirectory(prefix="fsdpcfg-grpo-") as tmp:
        if args.only != "trl":
            res["native"] = summarise(native(path, args.steps, Path(tmp) / "native"), args.warmup)
        if args.only != "native":
            res["trl"] = summarise(trl(path, args.steps, Path(tmp)), args.warmup)
    load1 = os.getloadavg()[0]
    from importlib.metadata import PackageNotFoundError, version

    import torch
    import transformers

    try:
        trl_version = version("trl")
    except PackageNotFoundError:
        trl_version = "(not installed)"
    names = {"native": "fsdpcfg native (FSDP2, hf replica rollout)", "trl": f"TRL {trl_version} GRPOTrainer (DDP)"}
    table = ["| engine | median step s | median tokens/s | tokens/step | steps timed |", "|---|---|---|---|---|"]
    for k, r in res.items():
        table.append(
            f"| {names[k]}{' ' + args.label if args.label else ''} | {r['step_s']:.3f} | {r['tok_s']:.0f} "
            f"| {r['tokens']:.0f} | {r['steps']} |"
        )
    ratio = ""
    if len(res) == 2:
        ratio = (
            f"\n\nnative / TRL: {res['native']['tok_s'] / res['trl']['tok_s']:.2f}x tokens/s, step time "
            f"{res['trl']['step_s'] / res['native']['step_s']:.2f}x shorter (goal: >= 1.5x)."
        )
    text = (
        "\n".join(table)
        + ratio
        + (
            f"\n\nModel {args.model}, {PROMPTS} prompts x {N} completions, <= {RESPONSE} new tokens, 2 processes "
            f"(torchrun, gloo, OMP_NUM_THREADS=1), {args.steps} steps, first {args.warmup} not timed. torch "
            f"{torch.__version__}, transformers {transformers.__version__}, Python {platform.python_version()}, "
            f"{os.cpu_count()} CPUs, load average {load0:.1f} before / {load1:.1f} after, "
            f"{time.strftime('%Y-%m-%d %H:%M')}. "
            f"Reproduce: `python benchmarks/grpo_step.py --write`."
        )
    )
    print(text)
    if args.write:
        from check_latency import _write_section

        _write_section(ROOT / "benchmarks" / "RESULTS.md", "GRPO step: native engine vs TRL", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
