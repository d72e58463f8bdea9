"""Run the doctor's stages, cheapest first, and stop at the first failure.

Stages 0-2 run in this process (stage 0 imports no torch); stages 3-5 run in one torchrun launch of
:mod:`fsdpcfg.doctor.worker` with 2 ranks (gloo on the CPU; NCCL with one rank per GPU, at most 2, on CUDA), for every
engine variant, so torchrun's start-up is paid once. The worker's per-rank event files are merged here: a stage fails
when any rank failed it, and a stage that started but never reported (a crash, a hang past ``timeout``) fails with the
end of torchrun's output.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from fsdpcfg.doctor.boundaries import CONFIG, ROLLOUT, STATE, Failure, failure_from_exception
from fsdpcfg.doctor.report import FAIL, Report, StageResult
from fsdpcfg.doctor.smoke import Variant
from fsdpcfg.errors import ConfigError, UsageError
from fsdpcfg.launch.torchrun import torchrun_argv
from fsdpcfg.redact import write_private

_DEFAULT_BOUNDARY = {3: STATE, 4: STATE, 5: ROLLOUT}
ENGINES = ("fsdp", "fsdp2")


def _config_failure(e: ConfigError, stage: int, variant: str = "") -> StageResult:
    return StageResult(
        stage, variant, FAIL, 0.0, "the config cannot be composed or planned", failure=failure_from_exception(e, CONFIG)
    )


def run_doctor(
    overrides: list[str],
    *,
    variants: list[Variant] | None = None,
    sft_engines: tuple[str, ...] = ENGINES,
    patch_names: list[str] | None = None,
    timeout: float = 900.0,
    work_dir: Path | None = None,
    keep: bool = False,
    echo: Callable[[str], None] | None = None,
    conditions: list[str] | None = None,
) -> Report:
    """Run stages 0-5 on the config ``overrides`` compose (``+recipe=NAME``, ``actor_rollout_ref.model.path=...``).

    Args:
        variants: engine variants of stages 4-5 (default: fsdp and fsdp2 as configured); sft_engines: stage 3's.
        patch_names: stage 2's patches (default: those the config selects).
        timeout: seconds the torchrun launch may take before it is stopped (its running stage then fails).
        work_dir: where run folders, checkpoints and the worker's files go (default: a temporary folder, removed
            unless ``keep``).
        echo: called with one line per finished stage (progress for people).
        conditions: recorded in the report (the matrix passes what it had to set).

    Returns:
        The :class:`Report`; its first ``FAIL`` row is where the doctor stopped.

    Raises:
        UsageError: an SFT recipe (the doctor takes a GRPO run: stage 3 derives the SFT path from it).
    """
    from fsdpcfg.check.key_advice import KEY_ADVICE
    from fsdpcfg.compose import compose
    from fsdpcfg.doctor.stage_check import run_check

    t0 = time.perf_counter()
    variants = list(variants or [Variant(e) for e in ENGINES])
    say = echo or (lambda _line: None)
    model = next((o.split("=", 1)[1] for o in overrides if o.startswith("actor_rollout_ref.model.path=")), "")
    recipe = next((o.split("=", 1)[1] for o in overrides if o.startswith(("+recipe=", "recipe="))), None)
    report = Report(model=model, recipe=recipe, overrides=list(overrides), conditions=list(conditions or []))

    def add(result: StageResult) -> bool:
        report.results.append(result)
        extra = f" [{result.variant}]" if result.variant else ""
        say(f"  stage {result.stage} {result.name}{extra}: {result.status} ({result.seconds:.1f}s) {result.detail}")
        return result.status != FAIL

    def done() -> Report:
        report.seconds = time.perf_counter() - t0
        return report

    try:
        composed = compose(overrides, keys=KEY_ADVICE)
    except ConfigError as e:
        add(_config_failure(e, 0))
        return done()
    if composed.kind != "ppo":
        raise UsageError(
            f"the doctor takes a GRPO (ppo-kind) recipe, not the {composed.kind} recipe {recipe}",
            fix="run `fsdpcfg doctor +recipe=qwen_grpo actor_rollout_ref.model.path=PATH`; its stage 3 "
            "runs the SFT path with the same model settings",
        )
    try:
        cfg = composed.to_container(resolve=True)
        report.model = str(cfg["actor_rollout_ref"]["model"]["path"])
    except ConfigError as e:
        add(_config_failure(e, 0))
        return done()
    if not add(run_check(composed)[0]):
        return done()
    from fsdpcfg.doctor.stage_load import run_load
    from fsdpcfg.doctor.stage_patches import run_patches

    if not add(run_load(cfg)) or not add(run_patches(cfg, patch_names)):
        return done()
    from fsdpcfg.doctor.smoke import grpo_config, sft_config, world_for
    from fsdpcfg.doctor.stage_sft import SFT_PATH

    work = Path(work_dir) if work_dir else Path(tempfile.mkdtemp(prefix="fsdpcfg-doctor-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        try:
            world = world_for(cfg["trainer"]["device"])
        except ConfigError as err:
            add(_config_failure(err, 3))
            return done()
        spec = {
            "device": cfg["trainer"]["device"],
            "backend": "nccl" if cfg["trainer"]["device"] == "cuda" else "gloo",
            "out": str(work),
            "world": world,
            "sft": [],
            "grpo": [],
        }
        for engine in sft_engines:
            try:
                spec["sft"].append({"variant": engine, "cfg": sft_config(cfg, engine, work, world)})
            except ConfigError as err:
                add(_config_failure(err, 3, engine))
                return done()
        for v in variants:
            try:
                spec["grpo"].append({"variant": v.name, "cfg": grpo_config(composed, v, work, world)})
            except ConfigError as err:
                add(_config_failure(err, 4, v.name))
                return done()
        report.sft_path = SFT_PATH if spec["sft"] else ""
        for r in _launch(spec, work, timeout, say):
            if not add(r):
                break
        return done()
    finally:
        if not keep and not work_dir:
            shutil.rmtree(work, ignore_errors=True)


def _launch(spec: dict, work: Path, timeout: float, say: Callable[[str], None]) -> list[StageResult]:
    """Start the torchrun worker on ``spec``, wait (at most ``timeout`` s) and return the merged stage results."""
    import os

    spec_file = work / "spec.json"
    write_private(spec_file, json.dumps(spec))
    for f in work.glob("rank*.jsonl"):
        f.unlink()
    out_file = work / "torchrun.log"
    world = int(spec["world"])
    cmd = torchrun_argv(["-m", "fsdpcfg.doctor.worker", str(spec_file)], nproc_per_node=world)
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"), "TOKENIZERS_PARALLELISM": "false"}
    say(
        f"  stages 3-5: torchrun with {world} rank(s) ({', '.join(i['variant'] for i in spec['sft'])} SFT; "
        f"{', '.join(i['variant'] for i in spec['grpo'])} GRPO)"
    )
    timed_out = False
    with out_file.open("w") as log:
        from fsdpcfg.launch.signals import child_setup

        # torchrun dies with the doctor (PR_SET_PDEATHSIG), its ranks with torchrun (fsdpcfg.doctor.worker)
        proc = subprocess.Popen(
            cmd,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
            preexec_fn=child_setup(os.getpid()),
        )
        try:
            proc.wait(timeout=timeout)
        except BaseException as e:  # Ctrl-C reaches only the doctor (torchrun has a session of its own)
            if not isinstance(e, subprocess.TimeoutExpired):
                os.killpg(proc.pid, 9)
                proc.wait()
                raise
            timed_out = True
            os.killpg(proc.pid, 15)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)
                proc.wait()
    tail = "\n".join(out_file.read_text(errors="replace").strip().splitlines()[-15:])
    return merge_rank_events(
        [_read_events(f) for f in sorted(work.glob("rank*.jsonl"))],
        returncode=proc.returncode,
        timed_out=timed_out,
        timeout=timeout,
        tail=tail,
    )


def _read_events(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def merge_rank_events(
    ranks: list[list[dict]], *, returncode: int | None, timed_out: bool = False, timeout: float = 0.0, tail: str = ""
) -> list[StageResult]:
    """Merge the worker's per-rank event lists into one result per started (stage, variant), in start order.

    A stage fails when any rank reported a failure (the lowest such rank's failure is kept); a stage started on
    some rank but reported by none fails as interrupted (timeout, crash), with ``tail`` (the end of torchrun's
    output) in its message. A launch that failed before any stage started gives one stage-3 failure.
    """
    order: list[tuple[int, str]] = []
    results: dict[tuple[int, str], list[dict]] = {}
    for events in ranks:
        for ev in events:
            key = (int(ev["stage"]), ev["variant"])
            if ev["event"] == "start" and key not in order:
                order.append(key)
            elif ev["event"] == "result":
                results.setdefault(key, []).append(ev)
    merged: list[StageResult] = []
    last_line = tail.splitlines()[-1] if tail else ""
    for key in order:
        got = results.get(key, [])
        failed = [r for r in got if r["status"] == FAIL]
        if failed:
            merged.append(StageResult.from_json(failed[0]))
        elif got and len(got) == len(ranks):
            merged.append(StageResult.from_json(got[0]))
        else:
            why = (
                f"did not finish within the doctor's timeout of {timeout:.0f}s"
                if timed_out
                else f"was interrupted (torchrun exit code {returncode}): {last_line}"
            )
            merged.append(
                StageResult(
                    key[0],
                    key[1],
                    FAIL,
                    0.0,
                    "",
                    failure=Failure(
                        _DEFAULT_BOUNDARY[key[0]],
                        f"stage {key[0]} {why}",
                        "rerun with --keep and read torchrun.log in the work folder; raise --timeout for a large model",
                        error_type="Timeout" if timed_out else "Crash",
                    ),
                )
            )
        if merged[-1].status == FAIL:
            return merged
    if not order and returncode != 0:
        merged.append(
            StageResult(
                3,
                "",
                FAIL,
                0.0,
                "",
                failure=Failure(
                    CONFIG,
                    f"torchrun did not start the doctor's worker (exit code {returncode}): {last_line}",
                    "check that torch.distributed works here (python -m torch.distributed.run --help) "
                    "and that no other process holds the rendezvous port",
                    error_type="LaunchError",
                ),
            )
        )
    return merged
