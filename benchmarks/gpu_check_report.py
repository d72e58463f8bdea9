"""The GPU check's numbers and report: medians, MFU, the bf16 log-prob bound and the Markdown tables
(benchmarks/gpu_check.py has the formulas and their sources). Pure Python: no torch.
"""

from __future__ import annotations

#: dense bf16 peak FLOP/s by GPU name substring (NVIDIA datasheets, dense, no sparsity: H100/H200 SXM 989.4).
PEAK_BF16 = (("h200", 989e12), ("h100", 989e12), ("b200", 2250e12), ("a100", 312e12))
#: steps left out of the medians (they carry the log-prob probes and the first CUDA/NCCL warm-up).
WARMUP = 2


def peak_flops(device: str | None) -> float | None:
    """The dense bf16 peak of ``device`` (by name), FLOP/s, or ``None`` when not in :data:`PEAK_BF16`."""
    for sub, flops in PEAK_BF16:
        if device and sub in device.lower():
            return flops
    return None


def logprob_bound(max_abs_logprob: float) -> float:
    """4 bf16 ulps (2^-7 relative each) at ``max(|log-prob|, 1)`` (see the module docstring)."""
    return 4 * 2.0**-7 * max(1.0, max_abs_logprob)


def _median(xs: list[float]) -> float | None:
    xs = sorted(xs)
    return (xs[len(xs) // 2] if len(xs) % 2 else (xs[len(xs) // 2 - 1] + xs[len(xs) // 2]) / 2) if xs else None


def summarise(
    rec: dict, *, n_params: int, estimate: dict, check_errors: list, use_ref: bool, model: str, warmup: int = WARMUP
) -> dict:
    """Medians over the steps after ``warmup`` of each phase, tokens/s, MFU, memory and the log-prob probes of one
    GRPO part's worker record ``rec`` (the model has ``n_params`` parameters)."""
    steps = rec["steps"][warmup:] or rec["steps"]
    keys = [
        "timing_s/update_weights",
        "timing_s/gen",
        "timing_s/old_log_prob",
        "timing_s/ref",
        "timing_s/update_actor",
        "timing_s/step",
    ]
    med = {k: _median([s[k] for s in steps if k in s]) for k in keys}
    tokens = _median([s["perf/total_num_tokens"] for s in steps])
    step_s = med["timing_s/step"]
    flops = {
        "update": 6 * n_params * tokens,
        "old_log_prob": 2 * n_params * tokens,
        "ref": 2 * n_params * tokens if use_ref else 0.0,
        "gen": 2 * n_params * tokens,
    }
    peak = peak_flops(rec.get("device"))
    mfu = None
    if peak and step_s:
        mfu = {
            "step": sum(flops.values()) / (step_s * peak),
            "update": flops["update"] / (med["timing_s/update_actor"] * peak) if med["timing_s/update_actor"] else None,
            "gen": flops["gen"] / (med["timing_s/gen"] * peak) if med["timing_s/gen"] else None,
        }
    probes = rec.get("probes", [])
    for pr in probes:
        pr["bound"] = logprob_bound(pr["max_abs_logprob"])
        pr["within_bound"] = pr["max_abs_diff"] <= pr["bound"]
    return {
        "model": model,
        "device": rec.get("device"),
        "steps": len(rec["steps"]),
        "warmup": warmup,
        "median_s": med,
        "tokens_per_step": tokens,
        "tokens_per_s": tokens / step_s if step_s else None,
        "n_params": n_params,
        "flops_per_step": flops,
        "peak_flops": peak,
        "mfu": mfu,
        "memory": {
            "max_allocated_bytes": rec["max_allocated"],
            "phases_bytes": rec["phase_peaks"],
            "estimate": estimate,
        },
        "logprob_probes": probes,
        "check_errors": check_errors,
        "per_step": rec["steps"],
    }


def _gib(b) -> str:
    return "-" if b is None else f"{b / 2**30:.2f} GiB"


def _f(x, fmt=".2f") -> str:
    return "-" if x is None else format(x, fmt)


def render_markdown(report: dict, *, model: str, doctor_models: tuple[str, ...], smoke: bool = False) -> str:
    """The GPU section: environment, one row per part, the GRPO table on ``model``, the log-prob probes, the doctor
    rows of ``doctor_models`` (``smoke``: the CPU smoke run's headings)."""
    parts = report["parts"]
    env = parts.get("env", {})
    lines = [
        f"# GPU check ({report['date']}, {report.get('seconds', 0):.0f} s)",
        "",
        f"{env.get('device', '?')}, torch {env.get('torch', '?')} (CUDA {env.get('cuda', '?')}), transformers "
        f"{env.get('transformers', '?')}, peft {env.get('peft', '?')}, Python {env.get('python', '?')}.",
        "",
        "| part | status | seconds | error |",
        "|---|---|---|---|",
    ]
    for n, p in parts.items():
        err = (p.get("error") or "").replace("\n", " ").replace("|", "/")[-300:]
        lines.append(f"| {n} | {p.get('status')} | {p.get('seconds', '-')} | {err} |")
    model = next((parts[n].get("model") for n in ("grpo_fsdp2", "grpo_fsdp") if parts.get(n, {}).get("model")), model)
    lines += [
        "",
        f"## GRPO on {model} (random weights), "
        + ("CPU smoke settings" if smoke else "trainer=gpu_1x, 16 prompts x 4 samples, responses up to 128 tokens"),
        "",
        "| engine | step s | gen s | old log-prob s | ref s | update s | sync s | tokens/s | MFU step | "
        "MFU update | MFU gen | peak allocated | estimate (phase) |",
        "|---|" + "---|" * 12,
    ]
    for engine in ("fsdp2", "fsdp"):
        g = parts.get(f"grpo_{engine}", {})
        if g.get("status") != "ok":
            lines.append(f"| {engine} | {g.get('status', 'not run')} |" + " |" * 11)
            continue
        m, mfu, mem = g["median_s"], g.get("mfu") or {}, g["memory"]
        lines.append(
            f"| {engine} | {_f(m['timing_s/step'])} | {_f(m['timing_s/gen'])} | "
            f"{_f(m['timing_s/old_log_prob'])} | {_f(m['timing_s/ref'])} | {_f(m['timing_s/update_actor'])} | "
            f"{_f(m['timing_s/update_weights'])} | {_f(g['tokens_per_s'], '.0f')} | "
            f"{_f(mfu.get('step'), '.1%')} | {_f(mfu.get('update'), '.1%')} | {_f(mfu.get('gen'), '.1%')} | "
            f"{_gib(mem['max_allocated_bytes'])} | {_gib(mem['estimate']['peak_bytes'])} "
            f"({mem['estimate']['peak_phase']}) |"
        )
    lines += [
        "",
        "Medians over steps 3-10 (steps 1-2 carry the log-prob probes). MFU: 6N (update) + 2N (old "
        "log-prob) + 2N (ref) + 2N (generation) FLOPs per real token, N the parameter count, over the dense "
        "bf16 peak (H200: 989 TFLOP/s).",
        "",
        "## Actor vs rollout replica log-probs (bf16)",
        "",
        "| engine | sync | tokens | max abs diff | mean abs diff | max abs log-prob | bound | within | actor moved |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for engine in ("fsdp2", "fsdp"):
        for pr in parts.get(f"grpo_{engine}", {}).get("logprob_probes", []):
            lines.append(
                f"| {engine} | {pr['sync']} | {pr['tokens']} | {pr['max_abs_diff']:.3g} | "
                f"{pr['mean_abs_diff']:.3g} | {pr['max_abs_logprob']:.2f} | {pr['bound']:.3g} | "
                f"{'yes' if pr['within_bound'] else '**no**'} | {_f(pr.get('moved_since_previous'), '.3g')} |"
            )
    lines += [
        "",
        "## fsdpcfg doctor " + ("(CPU smoke)" if smoke else "on CUDA (trainer=gpu_1x)"),
        "",
        "| model | result | stages | conditions |",
        "|---|---|---|---|",
    ]
    for m in doctor_models:
        d = parts.get(f"doctor_{m}", {})
        if "stages" not in d:
            lines.append(f"| {m} | {d.get('status', 'not run')} | | |")
            continue
        failed = next((s for s in d["stages"] if s["status"] == "FAIL"), None)
        result = (
            "all stages passed"
            if d["ok"]
            else (
                f"stopped at stage {failed['stage']} {failed['name']} "
                f"[{failed['variant']}]: {failed['failure']['message'][:200]}"
                if failed
                else "failed"
            )
        )
        lines.append(f"| {m} | {result} | {len(d['stages'])} | {'; '.join(d['conditions']) or 'none'} |")
    return "\n".join(lines) + "\n"
