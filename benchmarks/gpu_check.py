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
   (:func:`fsdpcfg.estimate.memory.estimate_memory`) of the same config, and actor vs rollout-replica log-probs after
   the first and the second weight synchronisation (an optimizer step in between).
5. ``doctor_<asset>``: ``fsdpcfg doctor`` stages 0-5 with ``trainer=gpu_1x`` (fsdp, fsdp2, fsdp2+lora), the
   remedies of the compatibility matrix applied.

The GRPO parts' torchrun rank is :mod:`gpu_check_worker` (benchmarks/gpu_check_worker.py); the medians, MFU, the
log-prob bound and the tables are :mod:`gpu_check_report`.

Output: ``RESULTS_DIR/gpu_check.json`` (everything), ``gpu_check.md`` (the tables) and ``gpu_check.log`` (the
tails of the parts' logs). ``--dry-run`` prints the commands with their limits and checks what can be checked
without a GPU (the wheel folder, that each command's script and module exist).

MFU: model FLOPs of a step over (step time x the GPU's dense bf16 peak, ``gpu_check_report.PEAK_BF16``; H200 SXM: 989
TFLOP/s, the H100/H200 SXM datasheet figure without sparsity). Model FLOPs count matrix multiplies with the parameter
count N (the tied LM head once, as :func:`fsdpcfg.estimate.param_count.count_parameters`): 6·N per token of the actor
update (forward + backward), 2·N per token of each forward-only pass (old log-probs, reference log-probs) and 2·N per
token of generation (prompt prefill and each new token); tokens are the real ones (``perf/total_num_tokens``:
prompt + response, no padding). For scale: an 8192^3 bf16 matrix product ran at about 788 TFLOP/s on this machine kind
(/work/.library/device/KINDS.md, 2026-10-28), 80% of the datasheet peak. Attention's score FLOPs (about
4·layers·seq·hidden per token, ~4% here) are left out, so the MFU is a slight under-estimate.

Log-prob bound (bf16): both sides compute the same graph in bf16 from the same bf16-rounded weights (the FSDP
mixed-precision cast of the fp32 master and the replica's cast on arrival are the same rounding), so they differ
only through reduction order (batch shape, padding, kernels). The logits leave the LM head in bf16 (8 significant
bits: relative rounding 2^-8, one ulp 2^-7 relative) and are upcast before the log-softmax, so one ulp of a logit
of magnitude |z| is up to 2^-7·|z|; a log-prob ``z_t - logsumexp(z)`` of magnitude |lp| ~ 12 (151,936 words,
random weights: nearly uniform) is bounded here by ``gpu_check_report.logprob_bound`` = 4 ulps at max(|lp|, 1):
4·2^-7·12 = 0.375 for the largest, against 0.0 measured on the CPU in fp32 (tests/train/rollout/test_logprob_sync.py).

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
sys.path.insert(0, str(ROOT / "benchmarks"))

from gpu_check_report import render_markdown, summarise  # noqa: E402 (benchmarks/ is put on sys.path above)

from fsdpcfg.launch.torchrun import torchrun_argv  # noqa: E402

WHEELS = ROOT / ".whl"
#: what the lent GPU machine lacks (it has Python 3.12, CUDA torch, transformers, peft and PyYAML, and no package
#: registry): fsdpcfg's core dependencies but PyYAML, and typing-extensions at the version pydantic was tested with
#: here (its floor may be above the machine's; newer is backward compatible for torch).
PACKAGES = (
    "hydra-core",
    "omegaconf",
    "antlr4-python3-runtime",
    "pydantic",
    "pydantic-core",
    "typing-inspection",
    "annotated-types",
    "typing-extensions",
)
#: source-only on PyPI: built into a py3-none-any wheel by ``pip wheel``.
SDIST_ONLY = ("antlr4-python3-runtime",)
TARGET = {"python_version": "3.12", "platform": "manylinux2014_x86_64", "implementation": "cp", "abi": "cp312"}
MAX_WHEEL_BYTES = 64 * 2**20
BUDGET_S = 450.0
STEPS = 10
#: the 0.5B GRPO run: 16 prompts x 4 samples, responses up to 128 tokens, 4 micro-batches of 16 per update.
GRPO_OVERRIDES = [
    "+recipe=qwen_grpo",
    "trainer=gpu_1x",
    f"trainer.total_training_steps={STEPS}",
    "data.train_batch_size=16",
    "actor_rollout_ref.rollout.n=4",
    "data.max_response_length=128",
    "actor_rollout_ref.actor.ppo_mini_batch_size=16",
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=16",
    "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=16",
    "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=16",
    "trainer.save_freq=-1",
    "trainer.resume_mode=disable",
    "trainer.logger=[console]",
]
GRPO_MODEL = "qwen2.5-0.5b-random"
DOCTOR_MODELS = ("tiny-qwen2", "tiny-llama3", "tiny-mixtral")
#: ``--cpu-smoke`` (the CPU test of this harness, tests/benchmarks/test_gpu_check.py): the same parts on this
#: machine's CPU, 1 gloo rank, fp32, tiny-qwen2, 3 steps, 8 tokens; no install part (the wheels are for 3.12).
SMOKE = {"GPU_CHECK_SMOKE": "1"}
SMOKE_OVERRIDES = [
    "trainer=cpu",
    "trainer.n_gpus_per_node=1",
    "trainer.total_training_steps=3",
    "data.train_batch_size=2",
    "actor_rollout_ref.rollout.n=2",
    "data.max_response_length=8",
    "actor_rollout_ref.actor.ppo_mini_batch_size=2",
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4",
    "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4",
    "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=4",
]


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
PARTS = {
    "install": 90,
    "env": 60,
    "assets": 150,
    "grpo_fsdp2": 170,
    "grpo_fsdp": 170,
    **{f"doctor_{m}": 100 for m in DOCTOR_MODELS},
}


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
    cmds = [
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "--python-version",
            TARGET["python_version"],
            "--platform",
            TARGET["platform"],
            "--implementation",
            TARGET["implementation"],
            "--abi",
            TARGET["abi"],
            "-d",
            str(wheels),
            *binary,
        ]
    ]
    cmds += [[sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(wheels), p] for p in source]
    return cmds


def check_wheels(wheels: Path = WHEELS) -> dict:
    """What the folder holds against :data:`PACKAGES`: ``{"files", "bytes", "missing", "wrong_tag"}``."""
    files = sorted(wheels.glob("*.whl")) if wheels.is_dir() else []
    names = {f.name.split("-")[0].lower().replace("_", "-"): f.name for f in files}
    missing = [p for p in PACKAGES if p not in names]
    wrong = [f.name for f in files if not (f.name.endswith("-none-any.whl") or "cp312" in f.name)]
    return {
        "files": [f.name for f in files],
        "bytes": sum(f.stat().st_size for f in files),
        "missing": missing,
        "wrong_tag": wrong,
    }


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
        print(
            f"the wheel folder is {state['bytes'] / 2**20:.1f} MiB, over the {MAX_WHEEL_BYTES >> 20} MiB that travel",
            file=sys.stderr,
        )
        return 1
    return 0 if dry_run or not (state["missing"] or state["wrong_tag"]) else 1


# -- the run (there) ------------------------------------------------------------------------------------------------
def plan_commands(results: Path, work: Path) -> dict[str, list[str]]:
    """part -> the command it runs (each a subprocess of this script, so an import failure is that part's)."""
    me = [sys.executable, str(Path(__file__).resolve())]
    cmds = {
        "install": me + ["part", "install", str(work)],
        "env": me + ["part", "env", str(work)],
        "assets": me + ["part", "assets", str(work)],
    }
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
            print(
                f"grpo_{engine} overrides: {shlex.join(grpo_overrides(engine, '$FSDPCFG_HOME/models/' + grpo_model()))}"
            )
        print(
            "doctor overrides: +recipe=qwen_grpo trainer=gpu_1x actor_rollout_ref.model.path=$FSDPCFG_HOME/models/"
            f"{{{','.join(doctor_models())}}} + the matrix's remedies (fsdpcfg.doctor.matrix.find_conditions)"
        )
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
                rc = subprocess.run(
                    cmds[n], stdout=fh, stderr=subprocess.STDOUT, env=part_env(work), cwd=ROOT, timeout=limit
                ).returncode
            except subprocess.TimeoutExpired:
                rc = 124
        out = work / "parts" / f"{n}.json"
        rec = json.loads(out.read_text()) if out.is_file() else {}
        rec.update(
            seconds=round(time.monotonic() - t, 1),
            returncode=rc,
            status="ok" if rc == 0 and out.is_file() else "failed",
        )
        if rec["status"] != "ok":
            tail = log.read_text(errors="replace")[-3000:]
            rec["error"] = (f"timed out after {limit:.0f}s; " if rc == 124 else f"exit code {rc}; ") + tail
        report["parts"][n] = rec
        print(f"[{n}] {rec['status']} in {rec['seconds']}s", flush=True)
    report["seconds"] = round(time.monotonic() - start, 1)
    (results / "gpu_check.json").write_text(json.dumps(report, indent=2, default=str))
    (results / "gpu_check.md").write_text(
        render_markdown(report, model=grpo_model(), doctor_models=doctor_models(), smoke=smoke())
    )
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
        raise SystemExit(
            f"the wheel folder {WHEELS} lacks {state['missing']}: run `python benchmarks/gpu_check.py "
            "prepare` where PyPI is reachable and carry .whl"
        )
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--no-index",
        "--no-deps",
        "--find-links",
        str(WHEELS),
        "--target",
        str(lib),
        "--upgrade",
        *[str(WHEELS / f) for f in state["files"]],
    ]
    p = subprocess.run(cmd, capture_output=True, text=True)
    how = "pip"
    if p.returncode:
        how = f"unzip (pip failed: {(p.stderr or p.stdout).strip().splitlines()[-1:]})"
        for f in state["files"]:
            with zipfile.ZipFile(WHEELS / f) as z:
                z.extractall(lib)
    check = subprocess.run(
        [
            sys.executable,
            "-c",
            "import hydra, omegaconf, pydantic, fsdpcfg.compose; "
            "print(hydra.__version__, omegaconf.__version__, pydantic.VERSION)",
        ],
        capture_output=True,
        text=True,
        env=part_env(work),
        cwd=ROOT,
    )
    if check.returncode:
        raise SystemExit(f"installed with {how}, but the imports fail: {check.stderr[-2000:]}")
    return {"how": how, "wheels": state, "versions": check.stdout.strip()}


def part_env_info(work: Path) -> dict:
    import torch
    import transformers

    cuda = torch.cuda.is_available()
    info = {
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "transformers": transformers.__version__,
        "cuda_available": cuda,
    }
    if cuda:
        p = torch.cuda.get_device_properties(0)
        info.update(
            device=p.name,
            memory_gib=round(p.total_memory / 2**30, 1),
            capability=f"{p.major}.{p.minor}",
            bf16=torch.cuda.is_bf16_supported(),
            devices=torch.cuda.device_count(),
        )
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
    from fsdpcfg.launch.preflight import absolutise

    run_dir = work / f"grpo-{engine}"
    ovs = [
        *grpo_overrides(engine, assets.asset_path(grpo_model())),
        f"fsdpcfg.run_dir={run_dir}",
        f"trainer.default_local_dir={run_dir}/ckpt",
    ]
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
    from fsdpcfg.estimate.memory import estimate_memory
    from fsdpcfg.estimate.param_count import count_parameters

    cfg = grpo_config(engine, work)
    cfg_path = work / f"grpo-{engine}.yaml"
    cfg_path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    model = cfg["actor_rollout_ref"]["model"]["path"]
    errors = [f.to_json() for f in check_overrides(grpo_overrides(engine, model)) if f.severity == "error"]
    est = estimate_memory(cfg)
    out_json = work / f"grpo-{engine}.out.json"
    cmd = torchrun_argv([ROOT / "benchmarks" / "gpu_check_worker.py", cfg_path, out_json], nproc_per_node=1)
    p = subprocess.run(cmd, text=True, capture_output=True)
    if p.returncode:
        raise SystemExit(f"torchrun failed ({p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    rec = json.loads(out_json.read_text())
    n_params = count_parameters(
        json.loads((Path(cfg["actor_rollout_ref"]["model"]["path"]) / "config.json").read_text())
    ).total
    return summarise(
        rec,
        n_params=n_params,
        estimate={
            "peak_bytes": est.peak_bytes,
            "peak_phase": est.peak_phase,
            "phases": est.phases,
            "device_bytes": est.device_bytes,
        },
        check_errors=errors,
        use_ref=rec.get("use_reference", True),
        model=grpo_model(),
    )


def part_doctor(work: Path, asset: str) -> dict:
    from fsdpcfg import assets
    from fsdpcfg.doctor import Variant, run_doctor
    from fsdpcfg.doctor.matrix import find_conditions

    path = assets.ensure(asset, verbose=False)
    trainer = "trainer=cpu" if smoke() else "trainer=gpu_1x"
    overrides, conditions, notes = find_conditions(
        ["+recipe=qwen_grpo", trainer, f"actor_rollout_ref.model.path={path}"]
    )
    variants = [Variant("fsdp2")] if smoke() else [Variant("fsdp"), Variant("fsdp2"), Variant("fsdp2", lora=True)]
    report = run_doctor(
        overrides,
        variants=variants,
        sft_engines=tuple(v.engine for v in variants),
        timeout=limit_of(f"doctor_{asset}") - 10,
        conditions=conditions,
        work_dir=work / f"doctor-{asset}",
        keep=True,
    )
    return {
        "ok": report.ok,
        "conditions": conditions,
        "notes": notes,
        "seconds": report.seconds,
        "stages": [
            {
                "stage": r.stage,
                "name": r.name,
                "variant": r.variant,
                "status": r.status,
                "seconds": round(r.seconds, 2),
                "detail": r.detail,
                "data": r.data,
                "failure": None
                if r.failure is None
                else {"boundary": r.failure.boundary, "message": r.failure.message, "fix": r.failure.fix},
            }
            for r in report.results
        ],
    }


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
    a = ap.parse_args(argv)
    if a.cmd == "prepare":
        return prepare(a.dry_run)
    if a.cmd == "run":
        return run_all(Path(a.results), a.dry_run, a.parts.split(",") if a.parts else None, a.cpu_smoke)
    work = Path(a.work)
    fn = {
        "install": lambda: part_install(work),
        "env": lambda: part_env_info(work),
        "assets": lambda: part_assets(work),
        "grpo": lambda: part_grpo(work, a.arg),
        "doctor": lambda: part_doctor(work, a.arg),
    }[a.name]
    name = a.name if a.arg is None else f"{a.name}_{a.arg}"
    _write(work, name, fn())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
