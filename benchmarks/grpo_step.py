"""GRPO step time, throughput and per-phase cost: the native engine (``python -m fsdpcfg +recipe=qwen_grpo``)
against TRL 1.16's ``GRPOTrainer``, both as 2 CPU processes under ``torchrun --nproc_per_node=2``, interleaved
(native, TRL, native, TRL, ...) on the same machine.

    python benchmarks/grpo_step.py [--model tiny-qwen2] [--steps 4] [--warmup 1] [--repeats 5] [--write]
    python benchmarks/grpo_step.py --only native --trl-compact-lm-head --repeats 3 --raw diag.json  # diagnostic

Matched work (TRL's defaults differ: bf16, gradient checkpointing, beta 0, logging every 10 steps, a linear
schedule, shuffling): the same model folder, the GSM8K prompts of ``fsdpcfg/data/datasets/gsm8k/train.jsonl`` in
file order (no shuffling), 4 prompts x 4 completions = 16 completions per step (8 per process, generated in one
``generate`` call on each side), 32 new tokens at most, sampling at temperature 1 (top-p 1, no top-k), KV cache on,
fp32 everywhere, no gradient checkpointing, the k3 (low-variance) KL penalty with beta 0.001 against a reference
model, reference log-probs in 2 micro-batches of 4 per process, learning rate 1e-5 constant, weight decay 0.01,
gradient clipping 1.0, one optimizer step per step of 2 micro-batches of 4 completions per process, the loss
averaged over the tokens of the whole step (native ``loss_agg_mode=token-mean``, TRL ``loss_type="dapo"``), rewards
normalised by the group's std (native ``norm_adv_by_std_in_grpo``, TRL ``scale_rewards="group"``), the GSM8K strict
reward, logging every step.

TRL as its maintainers recommend for this workload (GRPOConfig's documentation in 1.16): vLLM is their advice for
generation, but it needs a GPU, so generation is ``model.generate`` on the training model (no weight sync); one
generation per optimizer step (``steps_per_generation`` left at its default, ``gradient_accumulation_steps``; one
generation batch = the step's 8 completions per process); ``num_iterations=1`` (their default), so the completions
are on-policy and TRL skips the old log-prob pass (the importance ratio is ``exp(logp - logp.detach())``);
``loss_type="dapo"`` and ``scale_rewards="group"`` (their defaults); ``disable_dropout=True`` (their advice with a
reference model; the tiny model has no dropout, so no work changes); ``use_cache=True`` in generation.

Differences in the work done that remain (this list is copied into benchmarks/RESULTS.md by ``--write``):

1. old log-probs: the native loop always runs a no-grad forward of the actor over the step's sequences (and takes
   the entropy there); TRL skips it on-policy and takes the entropy in its training forward. The "equal work"
   ratio leaves the native ``old_log_prob`` phase out.
2. LM-head positions: the native forwards run the LM head on the last ``R + 1`` positions only
   (``logits_to_keep``); TRL's chunked log-prob head (``fused_lm_head=True``, trl/trainer/utils.py
   ``add_fused_lm_head``) keeps only the completion positions on Triton devices but scores every position of the
   padded prompt + completion elsewhere, CPU included (the counts are in the line under the phase table), and
   its backward recomputes the logits tile by tile (trl/kernels/chunked_logprob.py: memory for time), one more
   LM-head matmul per update forward than the native backward. With tiny-qwen2 (hidden 64, vocab 151936) the LM
   head is nearly all of a forward's arithmetic, so this dominates the ref and update phases; no GRPOConfig
   setting changes it. ``--trl-compact-lm-head`` adds a diagnostic TRL run with the CUDA path forced
   (``trl.trainer.utils._use_triton`` patched in the worker), to measure what this difference costs.
3. weight sync: the native rollout is a separate unsharded replica (``rollout.name=hf``) fed by a bucketed weight
   stream from the FSDP2 actor every step; TRL (no vLLM) generates with the training model itself: 0 s.
4. parallelism: native FSDP2 (parameters sharded, all-gathered per forward and backward, gradients
   reduce-scattered); TRL DDP (full replica per process, gradients all-reduced).
5. padding: native responses are padded to 32 tokens for every log-prob and update forward; TRL pads to the
   longest completion of its batch (the same when any completion reaches 32 tokens, as with the tiny model).
6. text: TRL renders the chat template and tokenises the prompts each step and decodes the completions inside
   ``_generate``; the native loop reads pre-tokenised prompts and decodes in its reward phase.
7. KL term: TRL multiplies the per-token KL by the importance ratio (``use_bias_correction_kl``, default True;
   1.0 on-policy, a few element-wise ops).

Measured on every rank, per step: wall seconds (``time.perf_counter``) and CPU seconds of the process
(``time.process_time``: all its threads; a rank waiting in a collective uses none) per phase. Native: its loop's
own ``timing_s/*`` phases (``fsdpcfg.train.loop``'s ``timed`` wrapped by the worker to add CPU time). TRL, from
outside (methods of the trainer instance wrapped, nothing edited): generation ``_generate_single_turn``, reward
``_calculate_rewards``, old / ref log-probs ``_get_per_token_logps_and_entropies`` (the reference model, or the
policy under ``no_grad``), the experience phase ``_prepare_inputs``, the step ``on_step_begin`` to
``on_step_end``; update = step minus experience (forward, backward, clipping, optimizer); "adv" = experience minus
gen, reward, old and ref (advantages, prompt tokenisation, decoding, gathers, metrics). Tokens per step: prompt +
completion tokens over both processes (native ``perf/total_num_tokens``, TRL's ``num_tokens`` increments). Per run:
medians over the steps after ``--warmup``; wall is the mean over ranks, CPU the sum. Over runs: the ratio of each
interleaved pair, median and min-max. CPU seconds are the load-robust number: the headline uses tokens per CPU
second. ``--write`` records the tables in benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from fsdpcfg.launch.torchrun import torchrun_argv  # noqa: E402 (the repository root is put on sys.path above)

PROMPTS, N, RESPONSE, LR, BETA, MICRO = 4, 4, 32, 1e-5, 0.001, 4
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
COMPACT_ENV = "FSDPCFG_BENCH_TRL_COMPACT_LM_HEAD"  # set: the diagnostic TRL run (--trl-compact-lm-head)
#: the phases of a step, in the native loop's order and verl's ``timing_s/*`` names
PHASES = ("update_weights", "gen", "reward", "old_log_prob", "ref", "adv", "update_actor", "step")
NOTES = {
    "update_weights": "TRL generates with the training model: nothing to sync",
    "gen": "native: its replica's `generate`; TRL: `_generate_single_turn` (the training model's `generate`)",
    "reward": "TRL's wall includes its gather of the rewards over processes (waiting for the slower rank)",
    "old_log_prob": "TRL skips it on-policy (num_iterations=1, one generation per optimizer step)",
    "ref": "2 no-grad micro-batches of 4 on both; TRL's LM head scores every position (difference 2)",
    "adv": "TRL: the rest of `_prepare_inputs` (chat template, tokenisation, decoding, gathers, metrics)",
    "update_actor": "2 micro-batches of 4 fwd+bwd, clip, AdamW; native FSDP2, TRL DDP; difference 2 again",
    "step": "",
}


class PhaseClock:
    """Wall and CPU seconds per phase name, summed over the ``with clock(name)`` blocks since :meth:`take`."""

    def __init__(self) -> None:
        self.wall: dict[str, float] = {}
        self.cpu: dict[str, float] = {}

    @contextlib.contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            yield
        finally:
            self.wall[name] = self.wall.get(name, 0.0) + time.perf_counter() - t0
            self.cpu[name] = self.cpu.get(name, 0.0) + time.process_time() - c0

    def take(self) -> dict[str, dict[str, float]]:
        """The phases so far (``{"wall": {...}, "cpu": {...}}``), and start afresh."""
        out = {"wall": self.wall, "cpu": self.cpu}
        self.wall, self.cpu = {}, {}
        return out


def _rank() -> int:
    return int(os.environ.get("RANK", "0"))


def native_worker(config: str, out: str) -> int:
    """One torchrun rank of the native loop on ``config``, its ``timed`` phases clocked in CPU seconds too;
    writes ``<out>/native.rank<R>.json`` (one ``{"wall", "cpu"}`` record per step)."""
    import fsdpcfg.train.loop as loop
    from fsdpcfg.train.entry import run_rank

    clock, records, orig = PhaseClock(), [], loop.timed

    @contextlib.contextmanager
    def timed(name: str, timing: dict[str, float]) -> Iterator[None]:
        with clock(name), orig(name, timing):
            yield
        if name == "step":
            records.append(clock.take())

    loop.timed = timed
    rc = run_rank("fsdpcfg.train.loop", [config], "grpo_step.py --native-worker")
    Path(out, f"native.rank{_rank()}.json").write_text(json.dumps(records))
    return rc


def native(model_path: str, steps: int, run_dir: Path) -> list[dict]:
    """Run the native loop (its config composed by ``python -m fsdpcfg --dry-run``, then torchrun on
    :func:`native_worker`); return per-step records ``{"ranks": [{"wall", "cpu"}, ...], "tokens"}``."""
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
        "--dry-run",
    ]
    _run([sys.executable, "-m", "fsdpcfg", *ovs], "native config")
    _run(_torchrun("--native-worker", str(run_dir / "config.yaml"), str(run_dir)), "native run")
    recs = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines() if x.strip()]
    tokens = [r["perf/total_num_tokens"] for r in recs if "timing_s/step" in r]  # training steps only
    ranks = [json.loads((run_dir / f"native.rank{r}.json").read_text()) for r in range(2)]
    return [{"ranks": list(rk), "tokens": t} for *rk, t in zip(*ranks, tokens, strict=True)]


def trl_worker(model_path: str, steps: int, out: str) -> None:
    """One torchrun rank of TRL's GRPOTrainer with the matched settings, its phases clocked from outside;
    writes ``<out>/trl.rank<R>.json`` (per step ``{"wall", "cpu"}``, and ``num_tokens`` on rank 0)."""
    import torch
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
        gradient_accumulation_steps=2,  # steps_per_generation defaults to it: one generation per optimizer step
        num_generations=N,
        max_completion_length=RESPONSE,
        temperature=1.0,
        top_p=1.0,
        top_k=0,
        generation_kwargs={"use_cache": True},
        beta=BETA,
        disable_dropout=True,
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
    if os.environ.get(COMPACT_ENV):  # the diagnostic: score only the label positions, as TRL does on CUDA
        import trl.trainer.utils

        trl.trainer.utils._use_triton = lambda device: True
    tok = AutoTokenizer.from_pretrained(model_path)
    model = AutoModelForCausalLM.from_pretrained(model_path, dtype="float32")
    clock, records, tokens, counts = PhaseClock(), [], [], {}

    class StepClock(TrainerCallback):
        def on_step_begin(self, a, state, control, **kw):
            clock.take()
            counts.clear()
            self.t, self.c = time.perf_counter(), time.process_time()

        def on_step_end(self, a, state, control, **kw):
            rec = clock.take()
            rec["wall"]["step"] = time.perf_counter() - self.t
            rec["cpu"]["step"] = time.process_time() - self.c
            rec["positions"] = dict(counts)  # log-prob forwards of this step on this process (ref + update)
            records.append(rec)

        def on_log(self, a, state, control, logs=None, **kw):
            if logs and "num_tokens" in logs:
                tokens.append(logs["num_tokens"])

    trainer = GRPOTrainer(
        model=model,
        reward_funcs=gsm8k_reward,
        args=args,
        train_dataset=ds,
        processing_class=tok,
        callbacks=[StepClock()],
    )

    def wrap(attr: str, phase: Callable[..., str]) -> None:
        inner = getattr(trainer, attr)

        def clocked(*a: Any, **kw: Any) -> Any:
            with clock(phase(*a, **kw)):
                return inner(*a, **kw)

        setattr(trainer, attr, clocked)  # an instance attribute: TRL's `self.<attr>(...)` calls find it first

    def logps_phase(model: Any, input_ids: Any, attention_mask: Any, logits_to_keep: int, *a: Any, **kw: Any) -> str:
        # LM-head positions: TRL's chunked log-prob head scores every position off Triton devices (CPU)
        counts["lm_head"] = counts.get("lm_head", 0) + input_ids.numel()
        counts["completion"] = counts.get("completion", 0) + input_ids.shape[0] * logits_to_keep
        if model is trainer.ref_model:
            return "ref"
        return "update_forward" if torch.is_grad_enabled() else "old_log_prob"

    wrap("_prepare_inputs", lambda *a, **kw: "experience")
    wrap("_generate_single_turn", lambda *a, **kw: "gen")
    wrap("_calculate_rewards", lambda *a, **kw: "reward")
    wrap("_get_per_token_logps_and_entropies", logps_phase)
    trainer.train()
    for rec in records:
        w, c = rec["wall"], rec["cpu"]
        for d in (w, c):
            d["update_weights"] = 0.0
            d["update_actor"] = d["step"] - d.get("experience", 0.0)
            d["adv"] = d.get("experience", 0.0) - sum(d.get(k, 0.0) for k in ("gen", "reward", "old_log_prob", "ref"))
    prev = 0.0
    for rec, n in zip(records, tokens, strict=False):
        rec["tokens"], prev = n - prev, n
    Path(out, f"trl.rank{_rank()}.json").write_text(json.dumps(records))


def trl(model_path: str, steps: int, tmp: Path, compact: bool = False) -> list[dict]:
    """Run TRL's GRPOTrainer under torchrun (2 processes); return per-step records as :func:`native`'s.
    ``compact``: the diagnostic run whose LM head scores completion positions only (see :func:`trl_worker`)."""
    tmp.mkdir(parents=True, exist_ok=True)
    _run(_torchrun("--trl-worker", model_path, str(steps), str(tmp)), "TRL run", {COMPACT_ENV: "1"} if compact else {})
    ranks = [json.loads((tmp / f"trl.rank{r}.json").read_text()) for r in range(2)]
    return [{"ranks": list(rk), "tokens": rk[0]["tokens"]} for rk in zip(*ranks, strict=True)]


def _torchrun(*args: str) -> list[str]:
    return torchrun_argv([__file__, *args], nproc_per_node=2)


def _run(cmd: list[str], what: str, env: dict[str, str] | None = None) -> None:
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env={**ENV, **(env or {})})
    if p.returncode:
        raise SystemExit(f"{what} failed ({p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")


def summarise(recs: list[dict], warmup: int) -> dict:
    """One run's medians over the steps after ``warmup``: per phase wall s (mean over ranks) and CPU s (sum over
    ranks), tokens per step, tokens per wall second and per CPU second (the whole step, and without the
    ``old_log_prob`` phase: the equal-work figure)."""
    kept = recs[warmup:] or recs

    def wall(r: dict, k: str) -> float:
        return statistics.mean(rk["wall"].get(k, 0.0) for rk in r["ranks"])

    def cpu(r: dict, k: str) -> float:
        return sum(rk["cpu"].get(k, 0.0) for rk in r["ranks"])

    med = statistics.median
    return {
        "wall": {k: med(wall(r, k) for r in kept) for k in PHASES},
        "cpu": {k: med(cpu(r, k) for r in kept) for k in PHASES},
        "tokens": med(r["tokens"] for r in kept),
        "tok_s": med(r["tokens"] / wall(r, "step") for r in kept),
        "tok_cpu_s": med(r["tokens"] / cpu(r, "step") for r in kept),
        "tok_cpu_s_eq": med(r["tokens"] / (cpu(r, "step") - cpu(r, "old_log_prob")) for r in kept),
        "tok_s_eq": med(r["tokens"] / (wall(r, "step") - wall(r, "old_log_prob")) for r in kept),
        "steps": len(kept),
        "positions": med(sum(rk.get("positions", {}).get("lm_head", 0) for rk in r["ranks"]) for r in kept),
        "completion_positions": med(
            sum(rk.get("positions", {}).get("completion", 0) for rk in r["ranks"]) for r in kept
        ),
    }


def _busy(rs: list[dict]) -> str:
    busy = [r["cpu"]["step"] / (2 * r["wall"]["step"]) for r in rs]
    return f"{min(busy):.0%}-{max(busy):.0%}"


def _spread(xs: list[float]) -> str:
    if len(xs) == 1:
        return f"{xs[0]:.2f}x (1 pair)"
    return f"median {statistics.median(xs):.2f}x, min-max {min(xs):.2f}-{max(xs):.2f}x over {len(xs)} pairs"


def _differences() -> str:
    """The docstring's numbered list of the differences in work (one source for the script and RESULTS.md)."""
    doc = __doc__ or ""
    body = doc[doc.index("Differences in the work done") : doc.index("Measured on every rank")]
    return body.split("\n", 2)[2].strip()


def report(
    runs: dict[str, list[dict]], loads: list[float], args: argparse.Namespace, diag_loads: list[float] | None = None
) -> str:
    """The markdown tables: per engine (medians over runs), the ratios of the interleaved pairs, the phases.
    ``runs["native_diag"]``, when there: the native runs interleaved with the ``trl_compact`` ones (a separate
    set, load averages ``diag_loads``)."""
    from importlib.metadata import PackageNotFoundError, version

    import torch
    import transformers

    try:
        trl_version = version("trl")
    except PackageNotFoundError:
        trl_version = "(not installed)"
    names = {
        "native": "fsdpcfg native (FSDP2, hf replica rollout)",
        "trl": f"TRL {trl_version} GRPOTrainer (DDP)",
        "trl_compact": f"TRL {trl_version} GRPOTrainer (DDP), diagnostic: compact LM head (patched)",
        "native_diag": "fsdpcfg native, the diagnostic set",
    }
    med = statistics.median
    label = f" {args.label}" if args.label else ""
    out = [
        "| engine | runs | step s (wall) | step CPU s (2 ranks) | tokens/step | tokens/s (wall) | tokens per CPU s |",
        "|---|---|---|---|---|---|---|",
    ]
    for k, rs in runs.items():
        out.append(
            f"| {names[k]}{label} | {len(rs)} | {med(r['wall']['step'] for r in rs):.3f} "
            f"| {med(r['cpu']['step'] for r in rs):.3f} | {med(r['tokens'] for r in rs):.0f} "
            f"| {med(r['tok_s'] for r in rs):.1f} | {med(r['tok_cpu_s'] for r in rs):.1f} |"
        )
    both = "native" in runs and "trl" in runs

    def ratio(key: str, other: str = "trl", base: str = "native") -> str:
        return _spread([n[key] / t[key] for n, t in zip(runs[base], runs[other], strict=False)])

    if both:
        out += [
            "",
            f"**native / TRL, tokens per CPU second (headline, load-robust): {ratio('tok_cpu_s')}.** "
            f"Equal work (native without its old log-prob pass, which TRL skips): {ratio('tok_cpu_s_eq')}.",
            f"Tokens per wall second (depends on the load): {ratio('tok_s')}; equal work {ratio('tok_s_eq')}.",
            "Share of its core each rank got (step CPU s / (2 x step wall s)), min-max over runs: "
            + ", ".join(f"{k} {_busy(runs[k])}" for k in ("native", "trl"))
            + ": the wall ratio carries how much of the shared machine each run happened to get.",
        ]
    if both and "trl_compact" in runs:
        tc, base = runs["trl_compact"], "native_diag" if "native_diag" in runs else "native"
        where = ""
        if diag_loads:
            lo, hi = min(diag_loads), max(diag_loads)
            where = f" (a separate interleaved set after the main one, load average {lo:.1f}-{hi:.1f})"
        out += [
            "",
            "**Diagnostic of difference 2** (not a setting TRL offers): TRL with its LM head made to score only the "
            "completion positions, the path it takes on CUDA (`trl.trainer.utils._use_triton` patched to return "
            f"True in the worker): {med(r['completion_positions'] for r in tc):.0f} positions per step; ref "
            f"{med(r['cpu']['ref'] for r in tc):.3f} CPU s, update {med(r['cpu']['update_actor'] for r in tc):.3f} "
            f"CPU s, step {med(r['cpu']['step'] for r in tc):.3f} CPU s; native / this, tokens per CPU second{where}: "
            f"{ratio('tok_cpu_s', 'trl_compact', base)}; equal work {ratio('tok_cpu_s_eq', 'trl_compact', base)}.",
        ]
    cols = [k for k in ("native", "trl") if k in runs]
    diag = both and "trl_compact" in runs
    head = " | ".join(f"{k} wall s | {k} CPU s" for k in cols)
    out += [
        "",
        "Per phase, seconds per step (medians over runs of each run's median; CPU summed over the 2 ranks)"
        + (", ratio TRL / native of the CPU seconds" if both else "")
        + ":",
        "",
        f"| phase | {head} |"
        + (" CPU ratio TRL / native |" if both else "")
        + (" diagnostic: TRL compact LM head CPU s |" if diag else "")
        + " notes |",
        "|---|" + "---|---|" * len(cols) + ("---|" if both else "") + ("---|" if diag else "") + "---|",
    ]
    for ph in PHASES:
        vals = {k: (med(r["wall"][ph] for r in runs[k]), med(r["cpu"][ph] for r in runs[k])) for k in cols}
        row = f"| {ph} | " + " | ".join(f"{w:.3f} | {c:.3f}" for w, c in vals.values()) + " |"
        if both:
            n, t = vals["native"][1], vals["trl"][1]
            row += f" {t / n:.2f} |" if n > 0.0005 else " - |"
        if diag:
            row += f" {med(r['cpu'][ph] for r in runs['trl_compact']):.3f} |"
        out.append(row + f" {NOTES[ph]} |")
    if "trl" in runs:
        per = PROMPTS * N * (RESPONSE + 1)  # the native loop's LM head: logits_to_keep = R + 1 per row
        out += [
            "",
            f"LM-head positions scored per step (both processes, ref + update forwards): TRL "
            f"{med(r['positions'] for r in runs['trl']):.0f} (every position of the padded prompt + completion: "
            "its chunked log-prob head keeps only the scored positions on Triton devices, not on CPU), of which "
            f"{med(r['completion_positions'] for r in runs['trl']):.0f} are completion positions; native {2 * per} "
            f"({RESPONSE + 1} per row, `logits_to_keep`), and {per} more in its old log-prob pass. With tiny-qwen2 "
            "(hidden 64, vocab 151936, tied) the LM head is almost all of a forward's arithmetic.",
        ]
    out += ["", "Differences in the work done (benchmarks/grpo_step.py's docstring):", "", _differences()]
    lo = f"{min(loads):.1f}-{max(loads):.1f} (median {med(loads):.1f})" if loads else "?"
    out += [
        "",
        f"Model {args.model}, {PROMPTS} prompts x {N} completions, <= {RESPONSE} new tokens, 2 processes "
        f"(torchrun, gloo, OMP_NUM_THREADS=1), {args.steps} steps per run, first {args.warmup} not timed, "
        f"{args.repeats} interleaved repeat(s) ({', '.join(cols)} in turn). torch {torch.__version__}, "
        f"transformers {transformers.__version__}, Python {platform.python_version()}, {os.cpu_count()} CPUs "
        f"shared with other jobs, 1-minute load average {lo} at the start of each run, "
        f"{getattr(args, 'when', None) or time.strftime('%Y-%m-%d %H:%M')}. The work each side does, and what "
        "still differs, is listed in benchmarks/grpo_step.py's docstring. Reproduce: "
        "`python benchmarks/grpo_step.py --write`"
        + (
            "; with the diagnostic: `python benchmarks/grpo_step.py --raw main.json`, `python benchmarks/grpo_step.py "
            "--only native --trl-compact-lm-head --repeats 3 --raw diag.json`, then `python benchmarks/grpo_step.py "
            "--from-raw main.json diag.json --write`."
            if "trl_compact" in runs
            else "."
        ),
    ]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    """Run both sides ``--repeats`` times, interleaved, and print (``--write``: record) the tables."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="tiny-qwen2", help="an fsdpcfg asset name (see `fsdpcfg assets list`)")
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=5, help="runs of each engine, interleaved")
    ap.add_argument("--only", choices=("native", "trl"), help="run one side only (for profiling)")
    ap.add_argument("--label", default="", help="a note for the table rows (e.g. before/after a fix)")
    ap.add_argument("--write", action="store_true")
    ap.add_argument(
        "--trl-compact-lm-head",
        action="store_true",
        help="also run TRL with its LM head patched to score completion positions only (a diagnostic)",
    )
    ap.add_argument("--raw", type=Path, help="save the per-run summaries to this JSON file")
    ap.add_argument(
        "--from-raw",
        type=Path,
        nargs="+",
        metavar=("MAIN", "DIAGNOSTIC"),
        help="report the runs saved with --raw instead of running; a second file: a diagnostic set (its native "
        "runs pair with its trl_compact runs)",
    )
    ap.add_argument("--native-worker", nargs=2, metavar=("CONFIG", "OUT"), help=argparse.SUPPRESS)
    ap.add_argument("--trl-worker", nargs=3, metavar=("MODEL", "STEPS", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.native_worker:
        return native_worker(*args.native_worker)
    if args.trl_worker:
        trl_worker(args.trl_worker[0], int(args.trl_worker[1]), args.trl_worker[2])
        return 0
    if args.from_raw:
        saved = [json.loads(f.read_text()) for f in args.from_raw]
        runs = dict(saved[0]["runs"])
        for extra in saved[1:]:
            runs["native_diag"] = extra["runs"]["native"]
            runs["trl_compact"] = extra["runs"]["trl_compact"]
        shown = argparse.Namespace(**{**vars(args), **saved[0]["args"]})
        return _finish(report(runs, saved[0]["loads"], shown, [x for s in saved[1:] for x in s["loads"]]), args)
    from fsdpcfg import assets

    path = str(assets.ensure(args.model))
    engines = [e for e in ("native", "trl") if args.only in (None, e)]
    if args.trl_compact_lm_head:
        engines.append("trl_compact")
    runs: dict[str, list[dict]] = {e: [] for e in engines}
    loads: list[float] = []
    args.when = time.strftime("%Y-%m-%d %H:%M")  # the start of the runs
    with tempfile.TemporaryDirectory(prefix="fsdpcfg-grpo-") as tmp:
        for i in range(args.repeats):
            for e in engines:
                loads.append(os.getloadavg()[0])
                where = Path(tmp) / f"{e}{i}"
                if e == "native":
                    recs = native(path, args.steps, where)
                else:
                    recs = trl(path, args.steps, where, compact=e == "trl_compact")
                runs[e].append(summarise(recs, args.warmup))
                r = runs[e][-1]
                print(
                    f"[{e} {i + 1}/{args.repeats}] load {loads[-1]:.1f}: step {r['wall']['step']:.2f} s wall, "
                    f"{r['cpu']['step']:.2f} CPU s, {r['tok_cpu_s']:.1f} tokens per CPU s",
                    file=sys.stderr,
                    flush=True,
                )
                if args.raw:  # after every run: a run cut short keeps what it measured
                    keep = {k: getattr(args, k) for k in ("model", "steps", "warmup", "repeats", "label", "when")}
                    args.raw.write_text(json.dumps({"runs": runs, "loads": loads, "args": keep}))
    return _finish(report(runs, loads, args), args)


def _finish(text: str, args: argparse.Namespace) -> int:
    print(text)
    if args.write:
        from check_latency import _write_section

        _write_section(ROOT / "benchmarks" / "RESULTS.md", "GRPO step: native engine vs TRL", text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
