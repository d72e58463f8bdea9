"""The GPU check: fsdpcfg's CUDA path measured in one command on a machine with one CUDA GPU and its own PyTorch.

    python benchmarks/gpu_check.py prepare [--dry-run]         # here (PyPI reachable): the wheel folder .whl/
    python benchmarks/gpu_check.py run RESULTS_DIR [--dry-run]  # there (scripts/gpu_check.sh calls this)

``prepare`` downloads, for CPython 3.12 on manylinux x86_64, the wheels the GPU machine lacks (:data:`PACKAGES`:
Hydra, OmegaConf, its ANTLR runtime, Pydantic and its core; their versions are the ones installed here) into
``.whl/`` (git-ignored; the ``run`` tool carries it). ``antlr4-python3-runtime`` 4.9.3 exists only as a source
archive on PyPI: its pure-Python wheel is built here with ``pip wheel``.

``run`` does, each part under its own time limit (:data:`PARTS`) and all of them under :data:`BUDGET_S`, a failing
part recorded with its error text without stopping the others:

1. ``install``: ``pip install --no-index --find-links .whl --target <work>/pylib`` (``--target`` installs beside the
   machine's packages without touching them; a wheel is unzipped directly when pip is missing).
2. ``env``: torch, CUDA, the GPU and its bf16 support.
3. ``assets``: the full-size random Qwen2.5-0.5B-Instruct architecture (``qwen2.5-0.5b-random``, built from the
   real config.json on the GPU) and tiny-qwen2, tiny-llama3, tiny-mixtral.
4. ``grpo_fsdp2``, ``grpo_fsdp``: the native GRPO loop with ``trainer=gpu_1x`` (torchrun, 1 rank, NCCL, bf16
   compute over fp32 master weights, bf16 rollout) on the 0.5B model, 10 steps (:data:`GRPO_OVERRIDES`): per-phase
   step times, tokens/s, MFU, ``torch.cuda.max_memory_allocated`` per phase beside fsdpcfg's estimate
   (:func:`fsdpcfg.plan.memory.estimate_memory`) of the same config, and actor vs rollout-replica log-probs after
   the first and the second weight synchronisation (an optimizer step in between).
5. ``doctor_<asset>``: ``fsdpcfg doctor`` stages 0-5 with ``trainer=gpu_1x`` (fsdp, fsdp2, fsdp2+lora), the
   remedies of the compatibility matrix applied.

Output: ``RESULTS_DIR/gpu_check.json`` (everything), ``gpu_check.md`` (the tables) and ``gpu_check.log`` (the
tails of the parts' logs). ``--dry-run`` prints the commands with their limits and checks what can be checked
without a GPU (the wheel folder, that each command's script and module exist).

MFU: model FLOPs of a step over (step time x the GPU's dense bf16 peak, :data:`PEAK_BF16`; H200 SXM: 989 TFLOP/s,
the H100/H200 SXM datasheet figure without sparsity). Model FLOPs count matrix multiplies with the parameter count
N (the tied LM head once, as :func:`fsdpcfg.plan.param_count.count_parameters`): 6·N per token of the actor update
(forward + backward), 2·N per token of each forward-only pass (old log-probs, reference log-probs) and 2·N per
token of generation (prompt prefill and each new token); tokens are the real ones (``perf/total_num_tokens``:
prompt + response, no padding). Attention's score FLOPs (about 4·layers·seq·hidden per token, ~4% here) are left
out, so the MFU is a slight under-estimate.

Log-prob bound (bf16): both sides compute the same graph in bf16 from the same bf16-rounded weights (the FSDP
mixed-precision cast of the fp32 master and the replica's cast on arrival are the same rounding), so they differ
only through reduction order (batch shape, padding, kernels). The logits leave the LM head in bf16 (8 significant
bits: relative rounding 2^-8, one ulp 2^-7 relative) and are upcast before the log-softmax, so one ulp of a logit
of magnitude |z| is up to 2^-7·|z|; a log-prob ``z_t - logsumexp(z)`` of magnitude |lp| ~ 12 (151,936 words,
random weights: nearly uniform) is bounded here by :func:`logprob_bound` = 4 ulps at max(|lp|, 1): 4·2^-7·12 =
0.375 for the largest, against 0.0 measured on the CPU in fp32 (tests/train/test_logprob_sync.py).

The one command a later session runs (tool ``run``, results under ``$OUT``)::

    run(command="bash scripts/gpu_check.sh $OUT", carry=[".whl"], timeout_s=540)
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WHEELS = ROOT / ".whl"
#: what the GPU machine lacks (NOTES.md "The GPU machine"): fsdpcfg's core dependencies but PyYAML, which it has, and
#: typing-extensions at the version pydantic was tested with here (its floor may be above the machine's; newer is
#: backward compatible for torch).
PACKAGES = ("hydra-core", "omegaconf", "antlr4-python3-runtime", "pydantic", "pydantic-core", "typing-inspection",
            "annotated-types", "typing-extensions")
#: source-only on PyPI: built into a py3-none-any wheel by ``pip wheel``.
SDIST_ONLY = ("antlr4-python3-runtime",)
TARGET = {"python_version": "3.12", "platform": "manylinux2014_x86_64", "implementation": "cp", "abi": "cp312"}
MAX_WHEEL_BYTES = 64 * 2**20
#: dense bf16 peak FLOP/s by GPU name substring (datasheets, no sparsity).
PEAK_BF16 = (("h200", 989e12), ("h100", 989e12), ("b200", 2250e12), ("a100", 312e12))
BUDGET_S = 450.0
STEPS, WARMUP = 10, 2
#: the 0.5B GRPO run: 16 prompts x 4 samples, responses up to 128 tokens, 4 micro-batches of 16 per update.
GRPO_OVERRIDES = ["+recipe=qwen_grpo", "trainer=gpu_1x", f"trainer.total_training_steps={STEPS}",
                  "data.train_batch_size=16", "actor_rollout_ref.rollout.n=4", "data.max_response_length=128",
                  "actor_rollout_ref.actor.ppo_mini_batch_size=16",
                  "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=16",
                  "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=16",
                  "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=16", "trainer.save_freq=-1",
                  "trainer.resume_mode=disable", "fsdpcfg.metrics.tensorboard=false"]
GRPO_MODEL = "qwen2.5-0.5b-random"
DOCTOR_MODELS = ("tiny-qwen2", "tiny-llama3", "tiny-mixtral")
#: ``--cpu-smoke`` (the CPU test of this harness, tests/benchmarks/test_gpu_check.py): the same parts on this
#: machine's CPU, 1 gloo rank, fp32, tiny-qwen2, 3 steps, 8 tokens; no install part (the wheels are for 3.12).
SMOKE = {"GPU_CHECK_SMOKE": "1"}
SMOKE_OVERRIDES = ["trainer=cpu", "trainer.n_gpus_per_node=1", "trainer.total_training_steps=3",
                   "data.train_batch_size=2", "actor_rollout_ref.rollout.n=2", "data.max_response_length=8",
                   "actor_rollout_ref.actor.ppo_mini_batch_size=2",
                   "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4",
                   "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4",
                   "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=4"]


#: the CPU smoke run's limits: 2 shared cores under load import torch in tens of seconds; only the GPU run has to
#: fit 8 minutes.
SMOKE_LIMIT_S, SMOKE_BUDGET_S = 400, 1500


def limit_of(part: str) -> float:
    """The part's time limit, seconds (:data:`PARTS`; :data:`SMOKE_LIMIT_S` in the CPU smoke run)."""
    return SMOKE_LIMIT_S if smoke() else PARTS[part]


def smoke() -> bool:
    """True in the CPU smoke run of this harness (``run --cpu-smoke`` sets ``GPU_CHECK_SMOKE=1`` for its parts)."""
    return os.environ.get("GPU_CHECK_SMOKE") == "1"


#: part -> time limit, seconds.
PARTS = {"install": 90, "env": 60, "assets": 150, "grpo_fsdp2": 170, "grpo_fsdp": 170,
         **{f"doctor_{m}": 100 for m in DOCTOR_MODELS}}


# -- preparation (here) ---------------------------------------------------------------------------------------------
def pinned() -> list[str]:
    """``name==version`` of :data:`PACKAGES` as installed in this environment."""
    from importlib.metadata import version

    return [f"{p}=={version(p)}" for p in PACKAGES]


def prepare_commands(wheels: Path = WHEELS) -> list[list[str]]:
    """The pip commands that fill ``wheels``: one ``pip download`` of every binary wheel for the GPU machine's
    Python, then one ``pip wheel`` per source-only package."""
    binary = [p for p in pinned() if p.split("==")[0] not in SDIST_ONLY]
    source = [p for p in pinned() if p.split("==")[0] in SDIST_ONLY]
    cmds = [[sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
             "--python-version", TARGET["python_version"], "--platform", TARGET["platform"],
             "--implementation", TARGET["implementation"], "--abi", TARGET["abi"], "-d", str(wheels), *binary]]
    cmds += [[sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(wheels), p] for p in source]
    return cmds


def check_wheels(wheels: Path = WHEELS) -> dict:
    """What the folder holds against :data:`PACKAGES`: ``{"files", "bytes", "missing", "wrong_tag"}``."""
    files = sorted(wheels.glob("*.whl")) if wheels.is_dir() else []
    names = {f.name.split("-")[0].lower().replace("_", "-"): f.name for f in files}
    missing = [p for p in PACKAGES if p not in names]
    wrong = [f.name for f in files if not (f.name.endswith("-none-any.whl") or "cp312" in f.name)]
    return {"files": [f.name for f in files], "bytes": sum(f.stat().st_size for f in files), "missing": missing,
            "wrong_tag": wrong}


def prepare(dry_run: bool) -> int:
    cmds = prepare_commands()
    for c in cmds:
        print("$ " + shlex.join(c))
    if not dry_run:
        WHEELS.mkdir(exist_ok=True)
        for c in cmds:
            subprocess.run(c, check=True)
    state = check_wheels()
    print(json.dumps(state, indent=2))
    if state["bytes"] > MAX_WHEEL_BYTES:
        print(f"the wheel folder is {state['bytes'] / 2**20:.1f} MiB, over the {MAX_WHEEL_BYTES >> 20} MiB that "
              "travel", file=sys.stderr)
        return 1
    return 0 if dry_run or not (state["missing"] or state["wrong_tag"]) else 1


# -- the run (there) ------------------------------------------------------------------------------------------------
def plan_commands(results: Path, work: Path) -> dict[str, list[str]]:
    """part -> the command it runs (each a subprocess of this script, so an import failure is that part's)."""
    me = [sys.executable, str(Path(__file__).resolve())]
    cmds = {"install": me + ["part", "install", str(work)], "env": me + ["part", "env", str(work)],
            "assets": me + ["part", "assets", str(work)]}
    for engine in ("fsdp2", "fsdp"):
        cmds[f"grpo_{engine}"] = me + ["part", "grpo", str(work), engine]
    for m in doctor_models():
        cmds[f"doctor_{m}"] = me + ["part", "doctor", str(work), m]
    if smoke():
        del cmds["install"]
    return cmds


def part_env(work: Path) -> dict:
    """Per-part environment: the installed wheels and the checkout first on the path, a private asset home."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(work / "pylib"), str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["FSDPCFG_HOME"] = str(work / "home")
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    return env


def run_all(results: Path, dry_run: bool, only: list[str] | None = None, cpu_smoke: bool = False) -> int:
    """Run (or, with ``dry_run``, print) every part; write the JSON, the Markdown and the log tails."""
    if cpu_smoke:
        os.environ.update(SMOKE)
    work = Path(os.environ.get("GPU_CHECK_WORK", "/tmp/fsdpcfg-gpu-check"))
    cmds = plan_commands(results, work)
    unknown = sorted(set(only or []) - set(cmds))
    if unknown:
        raise SystemExit(f"unknown part(s) {unknown}; the parts are: {', '.join(cmds)}")
    names = [n for n in cmds if not only or n in only]
    if dry_run:
        for n in names:
            print(f"[{n}] timeout {limit_of(n):.0f}s: {shlex.join(cmds[n])}")
        for engine in ("fsdp2", "fsdp"):
            print(f"grpo_{engine} overrides: {shlex.join(grpo_overrides(engine, '$FSDPCFG_HOME/models/' + grpo_model()))}")
        print("doctor overrides: +recipe=qwen_grpo trainer=gpu_1x actor_rollout_ref.model.path=$FSDPCFG_HOME/models/"
              f"{{{','.join(doctor_models())}}} + the matrix's remedies (fsdpcfg.doctor.matrix.find_conditions)")
        print(f"env: PYTHONPATH={part_env(work)['PYTHONPATH']} FSDPCFG_HOME={work / 'home'}")
        print(f"wheels: {json.dumps(check_wheels())}")
        return 0
    results.mkdir(parents=True, exist_ok=True)
    (work / "parts").mkdir(parents=True, exist_ok=True)
    (work / "logs").mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    budget = SMOKE_BUDGET_S if smoke() else BUDGET_S
    report: dict = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "parts": {}}
    for n in names:
        left = budget - (time.monotonic() - start)
        limit = min(limit_of(n), left)
        if limit < 20:
            report["parts"][n] = {"status": "skipped", "error": f"the {budget:.0f}s budget was spent"}
            continue
        log = work / "logs" / f"{n}.log"
        t = time.monotonic()
        with log.open("w") as fh:
            try:
                rc = subprocess.run(cmds[n], stdout=fh, stderr=subprocess.STDOUT, env=part_env(work), cwd=ROOT,
                                    timeout=limit).returncode
            except subprocess.TimeoutExpired:
                rc = 124
        out = work / "parts" / f"{n}.json"
        rec = json.loads(out.read_text()) if out.is_file() else {}
        rec.update(seconds=round(time.monotonic() - t, 1), returncode=rc,
                   status="ok" if rc == 0 and out.is_file() else "failed")
        if rec["status"] != "ok":
            tail = log.read_text(errors="replace")[-3000:]
            rec["error"] = (f"timed out after {limit:.0f}s; " if rc == 124 else f"exit code {rc}; ") + tail
        report["parts"][n] = rec
        print(f"[{n}] {rec['status']} in {rec['seconds']}s", flush=True)
    report["seconds"] = round(time.monotonic() - start, 1)
    (results / "gpu_check.json").write_text(json.dumps(report, indent=2, default=str))
    (results / "gpu_check.md").write_text(render_markdown(report))
    with (results / "gpu_check.log").open("w") as fh:
        for n in names:
            log = work / "logs" / f"{n}.log"
            if log.is_file():
                fh.write(f"===== {n}\n{log.read_text(errors='replace')[-20000:]}\n")
    return 0 if all(p.get("status") == "ok" for p in report["parts"].values()) else 1


# -- the parts ------------------------------------------------------------------------------------------------------
def _write(work: Path, name: str, data: dict) -> None:
    (work / "parts" / f"{name}.json").write_text(json.dumps(data, indent=2, default=str))


def part_install(work: Path) -> dict:
    """Install the wheel folder into ``work/pylib`` (``pip --target``; unzip when pip is missing)."""
    lib = work / "pylib"
    lib.mkdir(parents=True, exist_ok=True)
    state = check_wheels()
    if state["missing"]:
        raise SystemExit(f"the wheel folder {WHEELS} lacks {state['missing']}: run `python benchmarks/gpu_check.py "
                         "prepare` where PyPI is reachable and carry .whl")
    cmd = [sys.executable, "-m", "pip", "install", "--no-index", "--no-deps", "--find-links", str(WHEELS),
           "--target", str(lib), "--upgrade", *[str(WHEELS / f) for f in state["files"]]]
    p = subprocess.run(cmd, capture_output=True, text=True)
    how = "pip"
    if p.returncode:
        how = f"unzip (pip failed: {(p.stderr or p.stdout).strip().splitlines()[-1:]})"
        for f in state["files"]:
            with zipfile.ZipFile(WHEELS / f) as z:
                z.extractall(lib)
    check = subprocess.run([sys.executable, "-c", "import hydra, omegaconf, pydantic, fsdpcfg.compose; "
                            "print(hydra.__version__, omegaconf.__version__, pydantic.VERSION)"],
                           capture_output=True, text=True, env=part_env(work), cwd=ROOT)
    if check.returncode:
        raise SystemExit(f"installed with {how}, but the imports fail: {check.stderr[-2000:]}")
    return {"how": how, "wheels": state, "versions": check.stdout.strip()}


def part_env_info(work: Path) -> dict:
    import torch
    import transformers

    cuda = torch.cuda.is_available()
    info = {"python": sys.version.split()[0], "torch": torch.__version__, "cuda": torch.version.cuda,
            "transformers": transformers.__version__, "cuda_available": cuda}
    if cuda:
        p = torch.cuda.get_device_properties(0)
        info.update(device=p.name, memory_gib=round(p.total_memory / 2**30, 1), capability=f"{p.major}.{p.minor}",
                    bf16=torch.cuda.is_bf16_supported(), devices=torch.cuda.device_count())
        try:
            v = torch.cuda.nccl.version()
            info["nccl"] = ".".join(map(str, v)) if isinstance(v, tuple) else str(v)
        except Exception as e:  # an informational field: its absence is not the part's failure
            info["nccl"] = f"unknown ({type(e).__name__})"
    for pkg in ("peft", "safetensors"):
        try:
            info[pkg] = __import__(pkg).__version__
        except ImportError:
            info[pkg] = "missing"
    return info


def part_assets(work: Path) -> dict:
    from fsdpcfg import assets

    out = {}
    for name in (grpo_model(), *doctor_models()):
        t = time.perf_counter()
        path = assets.ensure(name, verbose=False)
        out[name] = {"path": str(path), "seconds": round(time.perf_counter() - t, 1)}
    return out


def grpo_config(engine: str, work: Path) -> dict:
    """The resolved config of the 0.5B GRPO run for ``engine`` (absolute paths, as the native launcher writes it)."""
    from fsdpcfg import assets
    from fsdpcfg.compose import compose
    from fsdpcfg.launch.native import absolutise

    run_dir = work / f"grpo-{engine}"
    ovs = [*grpo_overrides(engine, assets.asset_path(grpo_model())), f"fsdpcfg.run_dir={run_dir}",
           f"trainer.default_local_dir={run_dir}/ckpt"]
    return absolutise(compose(ovs).to_container())


def grpo_model() -> str:
    """The GRPO part's asset: :data:`GRPO_MODEL`, tiny-qwen2 in the CPU smoke run."""
    return "tiny-qwen2" if smoke() else GRPO_MODEL


def doctor_models() -> tuple[str, ...]:
    """The doctor parts' assets (one in the CPU smoke run)."""
    return DOCTOR_MODELS[:1] if smoke() else DOCTOR_MODELS


def grpo_overrides(engine: str, model_path) -> list[str]:
    """The overrides of the GRPO part for ``engine`` on the model folder ``model_path``."""
    merged = {o.split("=", 1)[0]: o for o in GRPO_OVERRIDES}
    if smoke():  # the same keys, smaller values: replaced, not repeated (Hydra refuses a key given twice)
        merged.update({o.split("=", 1)[0]: o for o in SMOKE_OVERRIDES})
    return [*merged.values(), f"engine={engine}", f"actor_rollout_ref.model.path={model_path}"]


def part_grpo(work: Path, engine: str) -> dict:
    """Compose, check, estimate; run the worker under torchrun; summarise its records."""
    import yaml

    from fsdpcfg.check import check_overrides
    from fsdpcfg.plan.memory import estimate_memory
    from fsdpcfg.plan.param_count import count_parameters

    cfg = grpo_config(engine, work)
    cfg_path = work / f"grpo-{engine}.yaml"
    cfg_path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    model = cfg["actor_rollout_ref"]["model"]["path"]
    errors = [f.to_json() for f in check_overrides(grpo_overrides(engine, model)) if f.severity == "error"]
    est = estimate_memory(cfg)
    out_json = work / f"grpo-{engine}.out.json"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "1",
           str(Path(__file__).resolve()), "worker", str(cfg_path), str(out_json)]
    p = subprocess.run(cmd, text=True, capture_output=True)
    if p.returncode:
        raise SystemExit(f"torchrun failed ({p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    rec = json.loads(out_json.read_text())
    n_params = count_parameters(json.loads((Path(cfg["actor_rollout_ref"]["model"]["path"]) / "config.json")
                                           .read_text())).total
    return summarise(rec, n_params=n_params, estimate={"peak_bytes": est.peak_bytes, "peak_phase": est.peak_phase,
                                                        "phases": est.phases, "device_bytes": est.device_bytes},
                     check_errors=errors, use_ref=rec.get("use_reference", True))


def peak_flops(device: str | None) -> float | None:
    """The dense bf16 peak of ``device`` (by name), FLOP/s, or ``None`` when not in :data:`PEAK_BF16`."""
    for sub, flops in PEAK_BF16:
        if device and sub in device.lower():
            return flops
    return None


def logprob_bound(max_abs_logprob: float) -> float:
    """4 bf16 ulps (2^-7 relative each) at ``max(|log-prob|, 1)`` (see the module docstring)."""
    return 4 * 2.0 ** -7 * max(1.0, max_abs_logprob)


def _median(xs: list[float]) -> float | None:
    xs = sorted(xs)
    return (xs[len(xs) // 2] if len(xs) % 2 else (xs[len(xs) // 2 - 1] + xs[len(xs) // 2]) / 2) if xs else None


def summarise(rec: dict, *, n_params: int, estimate: dict, check_errors: list, use_ref: bool) -> dict:
    """Medians over the steps after :data:`WARMUP` of each phase, tokens/s, MFU, memory and the log-prob probes."""
    steps = rec["steps"][WARMUP:] or rec["steps"]
    keys = ["timing_s/update_weights", "timing_s/gen", "timing_s/old_log_prob", "timing_s/ref",
            "timing_s/update_actor", "timing_s/step"]
    med = {k: _median([s[k] for s in steps if k in s]) for k in keys}
    tokens = _median([s["perf/total_num_tokens"] for s in steps])
    step_s = med["timing_s/step"]
    flops = {"update": 6 * n_params * tokens, "old_log_prob": 2 * n_params * tokens,
             "ref": 2 * n_params * tokens if use_ref else 0.0, "gen": 2 * n_params * tokens}
    peak = peak_flops(rec.get("device"))
    mfu = None
    if peak and step_s:
        mfu = {"step": sum(flops.values()) / (step_s * peak),
               "update": flops["update"] / (med["timing_s/update_actor"] * peak) if med["timing_s/update_actor"] else None,
               "gen": flops["gen"] / (med["timing_s/gen"] * peak) if med["timing_s/gen"] else None}
    probes = rec.get("probes", [])
    for pr in probes:
        pr["bound"] = logprob_bound(pr["max_abs_logprob"])
        pr["within_bound"] = pr["max_abs_diff"] <= pr["bound"]
    return {"model": grpo_model(), "device": rec.get("device"), "steps": len(rec["steps"]), "warmup": WARMUP,
            "median_s": med,
            "tokens_per_step": tokens, "tokens_per_s": tokens / step_s if step_s else None, "n_params": n_params,
            "flops_per_step": flops, "peak_flops": peak, "mfu": mfu, "memory": {
                "max_allocated_bytes": rec["max_allocated"], "phases_bytes": rec["phase_peaks"],
                "estimate": estimate}, "logprob_probes": probes, "check_errors": check_errors,
            "per_step": rec["steps"]}


def part_doctor(work: Path, asset: str) -> dict:
    from fsdpcfg import assets
    from fsdpcfg.doctor import Variant, run_doctor
    from fsdpcfg.doctor.matrix import find_conditions

    path = assets.ensure(asset, verbose=False)
    trainer = "trainer=cpu" if smoke() else "trainer=gpu_1x"
    overrides, conditions, notes = find_conditions(["+recipe=qwen_grpo", trainer,
                                                    f"actor_rollout_ref.model.path={path}"])
    variants = [Variant("fsdp2")] if smoke() else [Variant("fsdp"), Variant("fsdp2"), Variant("fsdp2", lora=True)]
    report = run_doctor(overrides, variants=variants, sft_engines=tuple(v.engine for v in variants),
                        timeout=limit_of(f"doctor_{asset}") - 10, conditions=conditions,
                        work_dir=work / f"doctor-{asset}", keep=True)
    return {"ok": report.ok, "conditions": conditions, "notes": notes, "seconds": report.seconds,
            "stages": [{"stage": r.stage, "name": r.name, "variant": r.variant, "status": r.status,
                        "seconds": round(r.seconds, 2), "detail": r.detail, "data": r.data,
                        "failure": None if r.failure is None else {"boundary": r.failure.boundary,
                                                                   "message": r.failure.message,
                                                                   "fix": r.failure.fix}}
                       for r in report.results]}


# -- the torchrun worker of the GRPO parts ---------------------------------------------------------------------------
class _NoCudaMemory:
    """``torch.cuda``'s memory calls on the CPU smoke run: nothing to measure (0 bytes)."""

    def reset_peak_memory_stats(self) -> None:
        return None

    def synchronize(self) -> None:
        return None

    def max_memory_allocated(self) -> int:
        return 0


def worker(config_path: str, out_path: str) -> None:
    """One rank: build the trainer, run its steps recording CUDA memory per phase, probe log-probs after the first
    two weight synchronisations."""
    import torch
    import yaml

    import fsdpcfg.train.loop as loop
    from fsdpcfg.train.engine.forward import response_log_probs
    from fsdpcfg.train.rollout.hf import GenerationSettings

    cfg = yaml.safe_load(Path(config_path).read_text())
    cuda = torch.cuda.is_available() and cfg["trainer"]["device"] == "cuda"
    mem = torch.cuda if cuda else _NoCudaMemory()
    mem.reset_peak_memory_stats()
    trainer = loop.Trainer(cfg)
    peaks = {"build": mem.max_memory_allocated()}
    overall = peaks["build"]
    probes: list[dict] = []
    probe_batch = trainer.dataset.batch(list(range(4)))
    greedy = GenerationSettings(n=1, response_length=32, temperature=1.0, top_p=1.0, top_k=-1, do_sample=False,
                                ignore_eos=False)

    def measured(fn, label):
        def inner(*a, **k):
            nonlocal overall
            mem.synchronize()
            mem.reset_peak_memory_stats()
            out = fn(*a, **k)
            mem.synchronize()
            peak = mem.max_memory_allocated()
            peaks[label] = max(peaks.get(label, 0), peak)
            overall = max(overall, peak)
            return out
        return inner

    sync = measured(trainer.sync_weights, "weight_sync")

    def sync_and_probe():
        n = sync()
        if len(probes) < 2:  # after the first and the second synchronisation
            t = time.perf_counter()
            o = trainer.rollout.generate(probe_batch.input_ids, probe_batch.attention_mask, greedy)
            ids, mask = o.input_ids.to(trainer.device), o.attention_mask.to(trainer.device)
            R = o.responses.shape[1]
            actor_lp = loop.batched_log_probs(trainer.actor, ids, mask, R, 4).float().cpu()
            with torch.no_grad():
                replica_lp, _ = response_log_probs(trainer.rollout.model, ids, mask, R)
            m = o.response_mask.bool()
            d = (actor_lp - replica_lp.float().cpu())[m].abs()
            # how far the actor moved since the previous probe, on the same sequences when greedy decoding gave
            # the same ones: the second probe then shows the optimizer step was synchronised, not a stale replica
            prev = probes[-1] if probes else None
            moved = (float((actor_lp - prev["_lp"])[m].abs().max()) if prev is not None
                     and torch.equal(prev["_ids"], o.input_ids) else None)
            probes.append({"sync": len(probes) + 1, "tokens": int(m.sum()), "max_abs_diff": float(d.max()),
                           "mean_abs_diff": float(d.mean()), "max_abs_logprob": float(actor_lp[m].abs().max()),
                           "moved_since_previous": moved, "seconds": round(time.perf_counter() - t, 3),
                           "_lp": actor_lp, "_ids": o.input_ids})
        return n

    trainer.sync_weights = sync_and_probe
    trainer.rollout.generate = measured(trainer.rollout.generate, "generate")
    loop.batched_log_probs = measured(loop.batched_log_probs, "log_probs")
    loop.update_actor = measured(loop.update_actor, "update")
    steps = []
    for step in range(1, trainer.total_steps + 1):
        steps.append(trainer.step(step))
    for pr in probes:
        del pr["_lp"], pr["_ids"]
    rec = {"device": torch.cuda.get_device_name(0) if cuda else "cpu", "steps": steps, "phase_peaks": peaks, "max_allocated": overall,
           "probes": probes, "use_reference": trainer.ref is not None, "strategy": trainer.plan.strategy,
           "param_dtype": str(next(trainer.rollout.model.parameters()).dtype)}
    Path(out_path).write_text(json.dumps(rec, default=float))
    import torch.distributed as dist

    dist.barrier()
    dist.destroy_process_group()


# -- the report -------------------------------------------------------------------------------------------------------
def _gib(b) -> str:
    return "-" if b is None else f"{b / 2**30:.2f} GiB"


def _f(x, fmt=".2f") -> str:
    return "-" if x is None else format(x, fmt)


def render_markdown(report: dict) -> str:
    """The GPU section: environment, one row per part, the GRPO table, the log-prob probes, the doctor rows."""
    parts = report["parts"]
    env = parts.get("env", {})
    lines = [f"# GPU check ({report['date']}, {report.get('seconds', 0):.0f} s)", "",
             f"{env.get('device', '?')}, torch {env.get('torch', '?')} (CUDA {env.get('cuda', '?')}), transformers "
             f"{env.get('transformers', '?')}, peft {env.get('peft', '?')}, Python {env.get('python', '?')}.", "",
             "| part | status | seconds | error |", "|---|---|---|---|"]
    for n, p in parts.items():
        err = (p.get("error") or "").replace("\n", " ").replace("|", "/")[-300:]
        lines.append(f"| {n} | {p.get('status')} | {p.get('seconds', '-')} | {err} |")
    model = next((parts[n].get("model") for n in ("grpo_fsdp2", "grpo_fsdp") if parts.get(n, {}).get("model")),
                 grpo_model())
    lines += ["", f"## GRPO on {model} (random weights), " + ("CPU smoke settings" if smoke() else
              "trainer=gpu_1x, 16 prompts x 4 samples, responses up to 128 tokens"),
              "", "| engine | step s | gen s | old log-prob s | ref s | update s | sync s | tokens/s | MFU step | "
              "MFU update | MFU gen | peak allocated | estimate (phase) |", "|---|" + "---|" * 12]
    for engine in ("fsdp2", "fsdp"):
        g = parts.get(f"grpo_{engine}", {})
        if g.get("status") != "ok":
            lines.append(f"| {engine} | {g.get('status', 'not run')} |" + " |" * 11)
            continue
        m, mfu, mem = g["median_s"], g.get("mfu") or {}, g["memory"]
        lines.append(f"| {engine} | {_f(m['timing_s/step'])} | {_f(m['timing_s/gen'])} | "
                     f"{_f(m['timing_s/old_log_prob'])} | {_f(m['timing_s/ref'])} | {_f(m['timing_s/update_actor'])} | "
                     f"{_f(m['timing_s/update_weights'])} | {_f(g['tokens_per_s'], '.0f')} | "
                     f"{_f(mfu.get('step'), '.1%')} | {_f(mfu.get('update'), '.1%')} | {_f(mfu.get('gen'), '.1%')} | "
                     f"{_gib(mem['max_allocated_bytes'])} | {_gib(mem['estimate']['peak_bytes'])} "
                     f"({mem['estimate']['peak_phase']}) |")
    lines += ["", "Medians over steps 3-10 (steps 1-2 carry the log-prob probes). MFU: 6N (update) + 2N (old "
              "log-prob) + 2N (ref) + 2N (generation) FLOPs per real token, N the parameter count, over the dense "
              "bf16 peak (H200: 989 TFLOP/s).", "", "## Actor vs rollout replica log-probs (bf16)", "",
              "| engine | sync | tokens | max abs diff | mean abs diff | max abs log-prob | bound | within | actor moved |",
              "|---|---|---|---|---|---|---|---|---|"]
    for engine in ("fsdp2", "fsdp"):
        for pr in parts.get(f"grpo_{engine}", {}).get("logprob_probes", []):
            lines.append(f"| {engine} | {pr['sync']} | {pr['tokens']} | {pr['max_abs_diff']:.3g} | "
                         f"{pr['mean_abs_diff']:.3g} | {pr['max_abs_logprob']:.2f} | {pr['bound']:.3g} | "
                         f"{'yes' if pr['within_bound'] else '**no**'} | {_f(pr.get('moved_since_previous'), '.3g')} |")
    lines += ["", "## fsdpcfg doctor " + ("(CPU smoke)" if smoke() else "on CUDA (trainer=gpu_1x)"), "", "| model | result | stages | conditions |",
              "|---|---|---|---|"]
    for m in doctor_models():
        d = parts.get(f"doctor_{m}", {})
        if "stages" not in d:
            lines.append(f"| {m} | {d.get('status', 'not run')} | | |")
            continue
        failed = next((s for s in d["stages"] if s["status"] == "FAIL"), None)
        result = "all stages passed" if d["ok"] else (f"stopped at stage {failed['stage']} {failed['name']} "
                                                      f"[{failed['variant']}]: {failed['failure']['message'][:200]}"
                                                      if failed else "failed")
        lines.append(f"| {m} | {result} | {len(d['stages'])} | {'; '.join(d['conditions']) or 'none'} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare", help="fill .whl/ with the wheels the GPU machine lacks")
    p.add_argument("--dry-run", action="store_true")
    r = sub.add_parser("run", help="run every part, write RESULTS_DIR/gpu_check.{json,md,log}")
    r.add_argument("results")
    r.add_argument("--dry-run", action="store_true")
    r.add_argument("--parts", default=None, help="comma-separated subset (a rerun of what failed)")
    r.add_argument("--cpu-smoke", action="store_true", help="the harness on this CPU, tiny model (its test)")
    pt = sub.add_parser("part")
    pt.add_argument("name", choices=["install", "env", "assets", "grpo", "doctor"])
    pt.add_argument("work")
    pt.add_argument("arg", nargs="?")
    w = sub.add_parser("worker")
    w.add_argument("config")
    w.add_argument("out")
    a = ap.parse_args(argv)
    if a.cmd == "prepare":
        return prepare(a.dry_run)
    if a.cmd == "run":
        return run_all(Path(a.results), a.dry_run, a.parts.split(",") if a.parts else None, a.cpu_smoke)
    if a.cmd == "worker":
        worker(a.config, a.out)
        return 0
    work = Path(a.work)
    fn = {"install": lambda: part_install(work), "env": lambda: part_env_info(work),
          "assets": lambda: part_assets(work), "grpo": lambda: part_grpo(work, a.arg),
          "doctor": lambda: part_doctor(work, a.arg)}[a.name]
    name = a.name if a.arg is None else f"{a.name}_{a.arg}"
    _write(work, name, fn())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
