"""The inputs and the property of ``test_run_matches_check.py`` (issue 14 item 8), run in shards: whatever
``fsdpcfg check`` accepts, the run accepts, and whatever it refuses, the run refuses with a message: the same
verdict from ``fsdpcfg check`` and from ``python -m fsdpcfg ... --dry-run`` (both in-process,
:func:`fsdpcfg.cli.main.main`), never a traceback, never more than 5 CPU seconds for one input (a hang).

Inputs are drawn from the real key universe (fsdpcfg's schema keys, verl 0.9.1's keys, the keys of the composed
main recipe, every group and option) with valid, plausible, invalid and extreme values, ``~key`` deletions,
``+key`` additions and group choices; and hostile recipe files (alias bombs, deep nesting, huge key counts,
binary, wrong types, and Hydra callbacks, logging handlers and ``_target_`` values that would write a file if
built: no input may run any of them, on either path). ``--dry-run`` writes the run folder; every shard runs in
its own working folder (four levels deep, so that ``..`` names stay inside it) and no value names an absolute path
outside it.

    python tests/check/property_inputs.py overrides|files SHARD COUNT WORKDIR

runs COUNT examples of hypothesis seed 1000 + SHARD (the same inputs every time) and prints one JSON line:
``{"examples": n, "refused": n, "kinds": {...}, "cpu_s": s, "failure": null or the failing example's text}``.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import os
import sys
import time
import traceback
from pathlib import Path

from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from fsdpcfg import verlref
from fsdpcfg.cli.main import main
from fsdpcfg.compose import GROUPS, available_options
from fsdpcfg.schema import keys as K

#: CPU seconds one input may take in one of the two paths: more is a hang (issue 14: "0 hangs past 5 s")
BUDGET_S = 5.0

_SCHEMA = sorted(K.schema_keys())
_VERL = sorted(K.verl_keys())
_DEFAULTS = verlref.defaults()
_KEYS = st.one_of(
    st.sampled_from(_SCHEMA),
    st.sampled_from(_SCHEMA),
    st.sampled_from(_VERL),
    st.sampled_from(sorted(K.schema_prefixes())),
    st.builds(lambda k, s: k + s, st.sampled_from(_SCHEMA), st.sampled_from(["x", "_", ".y", "s", ".0"])),
    st.text("abcdefghijklmnopqrstuvwxyz_.", min_size=1, max_size=20),
)
_EXTREME = st.sampled_from(
    [
        0,
        -1,
        1,
        2,
        3,
        4,
        7,
        8,
        2**31 - 1,
        2**31,
        2**63,
        -(2**63),
        10**30,
        "1e30",
        "-1e30",
        "1e-30",
        "nan",
        "inf",
        "-inf",
        0.5,
        1.5,
        -0.5,
    ]
)
_WORDS = st.sampled_from(
    [
        "null",
        "true",
        "false",
        "???",
        "''",
        "fsdp",
        "fsdp2",
        "vllm",
        "hf",
        "grpo",
        "cpu",
        "cuda",
        "native",
        "verl",
        "bf16",
        "fp32",
        "token-mean",
        "${data.max_prompt_length}",
        "${nope.key}",
        "${oc.env:NO_SUCH_VAR_FSDPCFG}",
        "[]",
        "{}",
        "[1,2]",
        "{a: 1}",
        "[1,2",
        "a b",
        "'..'",
        "'../../x'",
        "runs/x",
        "x/y",
        "'[console,tensorboard]'",
        "'[console]'",
        "Qwen/Qwen2.5-0.5B-Instruct",
        "no_such_model",
        "'" + "[" * 80 + "]" * 80 + "'",
        "[" * 80 + "]" * 80,
        "x" * 3000,
    ]
)
_VALUES = st.one_of(
    _EXTREME,
    _WORDS,
    st.integers(-10, 10**6),
    st.floats(-1e6, 1e6, allow_nan=False, width=32),
    st.text("abcxyz019-_.:", max_size=10),
)


def _text(v) -> str:
    return str(v).lower() if isinstance(v, bool) else str(v)


@st.composite
def _key_override(draw) -> str:
    key = draw(_KEYS)
    op = draw(st.sampled_from(["", "", "", "+", "++", "~"]))
    if op == "~":
        return f"~{key}"
    if draw(st.booleans()) and key in _DEFAULTS and not isinstance(_DEFAULTS[key], (dict, list)):
        value = _text(_DEFAULTS[key])  # a valid value: verl's default
        value = "null" if value == "None" else value
    else:
        value = _text(draw(_VALUES))
    return f"{op}{key}={value}"


def _tree_leaves() -> dict[str, object]:
    """The scalar leaves of the main recipe's composed tree (interpolations kept): keys that exist, so that a
    ``key=value`` on them composes, and the values they hold."""
    from omegaconf import OmegaConf

    from fsdpcfg.compose import compose

    raw = verlref.flatten(OmegaConf.to_container(compose(["+recipe=qwen_grpo"]).cfg, resolve=False))
    return {k: v for k, v in raw.items() if isinstance(v, (bool, int, float, str)) or v is None}


_TREE = _tree_leaves()


@st.composite
def _near_valid(draw) -> str:
    """A key of the tree set to a plausible value: its own, a small power of two, the other boolean."""
    key = draw(st.sampled_from(sorted(_TREE)))
    v = _TREE[key]
    if isinstance(v, bool):
        value = draw(st.sampled_from([v, not v]))
    elif isinstance(v, int):
        value = draw(st.sampled_from([v, 1, 2, 4, 8, 16, 32, 64, -1, 0]))
    elif isinstance(v, float):
        value = draw(st.sampled_from([v, 0.0, 0.1, 0.5, 1.0, 2.0]))
    elif v is None:
        value = "null"
    else:
        value = v if "${" not in str(v) and " " not in str(v) and str(v) else "null"
    return f"{key}={_text(value)}"


_GROUP = st.builds(
    lambda g, o: f"{g}={o}",
    st.sampled_from(list(GROUPS) + ["+recipe", "nogroup"]),
    st.sampled_from(
        sorted({o for g in GROUPS for o in available_options(g)})
        + ["bogus", "0", "null", "[hf,vllm]", "qwen_grpo", "arith_grpo"]
    ),
)
_VALID_GROUP = st.sampled_from(
    [
        f"{g}={o}"
        for g in ("engine", "patches", "rollout", "trainer", "launcher", "data", "reward")
        for o in available_options(g)
    ]
)
_OVERRIDES = st.one_of(
    st.lists(st.one_of(_key_override(), _key_override(), _GROUP), max_size=4),  # mostly invalid
    st.lists(st.one_of(_near_valid(), _near_valid(), _VALID_GROUP), max_size=4),  # mostly valid
)
_BASE = st.sampled_from(
    [["+recipe=qwen_grpo"], ["+recipe=arith_grpo"], ["+recipe=qwen_grpo", "launcher=verl"], ["+recipe=qwen_sft"], []]
)


class Refusal(AssertionError):
    """A property failed for one input (raised inside hypothesis, reported by the shard)."""


def _main(argv: list[str]) -> tuple[int, str, float]:
    out = io.StringIO()
    t = time.process_time()  # CPU seconds: the 2 cores are shared, wall time measures the neighbours
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            rc = main(argv)
        except SystemExit as e:  # argparse
            rc = e.code if isinstance(e.code, int) else 2
        except Exception as e:  # a traceback for the user
            raise Refusal(f"{argv}: {type(e).__name__}: {e}\n{out.getvalue()[-2000:]}") from None
    return rc, out.getvalue(), time.process_time() - t


def _skipped(out_check: str) -> bool:
    """True when check skipped its input as not a config at all (FC130: a pre-commit hook sees every YAML file
    of a repository, templates included); the run, given it as a recipe, must refuse it."""
    try:
        doc = json.loads(out_check)
    except ValueError:
        return False
    return any(i.get("status") == "skipped" for i in doc.get("inputs", []))


class _OneCompose:
    """Compose and check the same override list once for both paths: ``fsdpcfg check`` and the run's preparation
    each call :func:`fsdpcfg.check.compose_for_check` on the same list (a function of the list, the config files
    and the working folder alone), then :func:`fsdpcfg.check.check_config` on what it composed (a function of
    that config alone). While :attr:`shared` is on, the check's compose is kept and handed to the run's call for
    the same list, once, and the check's findings on that config to the run's check of the same object, once;
    every other stage (the plan, the resume and folder checks, the launcher's machine checks, the dry run's
    folder) still runs on the run's path, and each path still reaches its own verdict and exit code from the
    findings. Checking leaves the composed config as it was (``tests/check/test_check_leaves_config.py``), so the
    run starts from what a compose of its own would give; the second compose was ~40% of a set's cost, the second
    check ~20% of the rest. Shard 0 composes and checks twice all the same (``shared`` off), so a second compose
    and check of a list in one process are still held to the first (``tests/compose/test_tree_cache.py`` holds
    the kept first-stage trees to a full compose)."""

    def __init__(self) -> None:
        import fsdpcfg.check

        self.shared = True
        self._keeping = False
        self._kept: dict[tuple[str, ...], object] = {}
        # id(composed) -> (composed, the check's findings: None until the check ran)
        self._findings: dict[int, tuple[object, list | None]] = {}
        self._compose = fsdpcfg.check.compose_for_check
        self._check = fsdpcfg.check.check_config
        fsdpcfg.check.compose_for_check = self  # type: ignore[assignment]
        fsdpcfg.check.check_config = self.check_config  # type: ignore[assignment]

    def keep(self) -> None:
        """Keep the next plain call's result for a later call on the same list (the check's, for the run)."""
        self._kept.clear()
        self._findings.clear()
        self._keeping = self.shared

    def __call__(self, overrides: list[str], **kwargs):
        key = tuple(overrides)
        if not kwargs and key in self._kept:
            return self._kept.pop(key)
        out = self._compose(overrides, **kwargs)
        if not kwargs and self._keeping:
            self._keeping = False
            self._kept[key] = out
            if out[0] is not None:
                self._findings[id(out[0])] = (out[0], None)  # the check's findings on it go here, once
        return out

    def check_config(self, composed):
        """:func:`fsdpcfg.check.check_config`; on the kept composed config, the first call's findings are handed
        to the second call, once (a copy of the list: the run adds its launcher's findings to its own)."""
        kept = self._findings.get(id(composed))
        if kept is None or kept[0] is not composed:
            return self._check(composed)
        if kept[1] is not None:
            del self._findings[id(composed)]
            return list(kept[1])
        findings = self._check(composed)
        self._findings[id(composed)] = (composed, list(findings))
        return findings


_ONE_COMPOSE: _OneCompose | None = None


def _verdicts(check_args: list[str], run_args: list[str]) -> int:
    """Run both paths on one input; return the run's exit code. Raises :class:`Refusal` on any failure."""
    if _ONE_COMPOSE is not None:
        _ONE_COMPOSE.keep()
    rc_check, out_check, t_check = _main(["check", "--format", "json", "--no-plan", *check_args])
    rc_run, out_run, t_run = _main([*run_args, "--dry-run"])
    for rc, out, t, what in ((rc_check, out_check, t_check, "check"), (rc_run, out_run, t_run, "dry-run")):
        if "Traceback" in out:
            raise Refusal(f"{what} {check_args}: a traceback\n{out[-2000:]}")
        if t >= BUDGET_S:
            raise Refusal(f"{what} {check_args} took {t:.1f} CPU s (a hang: over {BUDGET_S} s)")
        if rc not in (0, 1, 2):
            raise Refusal(f"{what} {check_args}: exit code {rc}\n{out[-2000:]}")
    if rc_check in (0, 1):
        json.loads(out_check)  # JSON always JSON
    if rc_check in (0, 1) and _skipped(out_check):
        same = rc_run != 0  # not a config (or not plain YAML): nothing the run can start from
    else:
        same = (rc_check != 0) == (rc_run != 0)
    if not same:
        raise Refusal(
            f"check {'refuses' if rc_check else 'accepts'} but the run {'refuses' if rc_run else 'accepts'}: "
            f"{check_args}\n-- check:\n{out_check[-3000:]}\n-- run:\n{out_run[-3000:]}"
        )
    return rc_run


def _warm_up() -> None:
    """Run both paths once on the main recipe, so that no input is charged for a first import."""
    _verdicts(["+recipe=qwen_grpo"], ["+recipe=qwen_grpo"])


# -- hostile files ---------------------------------------------------------------------------------------------
_HEADER = "# @package _global_\ndefaults:\n  - qwen_grpo\n  - _self_\n"


def _bomb(levels: int, width: int) -> str:
    lines = [f"l0: &l0 [{', '.join(['lol'] * width)}]"]
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * width)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


#: a file or folder that exists only if some code of a recipe ran (relative: each shard works in its own folder)
SENTINEL = "ran_code_sentinel"
#: recipe bodies whose Hydra callbacks, logging handlers or ``_target_`` would write :data:`SENTINEL` if built
_CODE = [
    f"hydra:\n  callbacks:\n    c:\n      _target_: builtins.open\n      file: {SENTINEL}\n      mode: w\n",
    f"hydra:\n  callbacks:\n    c:\n      _target_: os.mkdir\n      path: {SENTINEL}\n",
    "hydra:\n  job_logging:\n    version: 1\n    handlers:\n      f:\n        class: logging.FileHandler\n"
    f"        filename: {SENTINEL}\n    root:\n      handlers: [f]\n",
    "hydra:\n  hydra_logging:\n    version: 1\n    handlers:\n      f:\n        class: logging.FileHandler\n"
    f"        filename: {SENTINEL}\n    root:\n      handlers: [f]\n",
    f"data:\n  x:\n    _target_: os.mkdir\n    path: {SENTINEL}\n",
    f"trainer:\n  logger:\n    _target_: builtins.open\n    file: {SENTINEL}\n    mode: w\n",
]


@st.composite
def _hostile(draw) -> tuple[str, bytes]:
    kind = draw(
        st.sampled_from(
            [
                "bomb",
                "deep_list",
                "deep_map",
                "keys",
                "binary",
                "type",
                "valid",
                "dup",
                "bad_defaults",
                "long_key",
                "mixed",
                "code",
            ]
        )
    )
    header = _HEADER if draw(st.booleans()) else ""
    if kind == "bomb":
        body = _bomb(draw(st.integers(2, 12)), draw(st.integers(2, 12)))
    elif kind == "deep_list":
        n = draw(st.sampled_from([10, 60, 64, 65, 100, 1000, 100_000]))
        body = "data:\n  x: " + "[" * n + "]" * n + "\n"
    elif kind == "deep_map":
        n = draw(st.sampled_from([5, 60, 63, 64, 65, 200]))
        body = "".join("  " * i + f"k{i}:\n" for i in range(n)) + "  " * n + "v: 1\n"
    elif kind == "keys":
        n = draw(st.sampled_from([10, 1000, 5000, 13_000, 60_000]))  # 13,000 keys: past the node limit
        body = "".join(f"k{i}: {i}\n" for i in range(n))
    elif kind == "binary":
        return kind, draw(st.binary(min_size=1, max_size=400))
    elif kind == "type":
        body = draw(
            st.sampled_from(
                [
                    "- 1\n- 2\n",
                    "42\n",
                    "'a string'\n",
                    "null\n",
                    "",
                    "~\n",
                    "[[[]]]\n",
                    "data: 5\n",
                    "trainer: [1, 2]\n",
                    "actor_rollout_ref:\n  rollout:\n    n: x\n",
                    "data:\n  train_batch_size: '8'\n",
                    "data:\n  train_batch_size: 1e30\n",
                    "data:\n  max_prompt_length: 100000000\n",
                    "fsdpcfg: null\n",
                ]
            )
        )
    elif kind == "valid":
        body = draw(
            st.sampled_from(
                [
                    "data:\n  train_batch_size: 8\nactor_rollout_ref:\n  actor:\n    ppo_mini_batch_size: 8\n",
                    "trainer:\n  total_training_steps: 2\n",
                    "",
                ]
            )
        )
        header = _HEADER
    elif kind == "dup":
        body = "data:\n  train_batch_size: 4\n  train_batch_size: 8\n"
    elif kind == "bad_defaults":
        body = draw(
            st.sampled_from(
                [
                    "defaults:\n  - no_such_recipe\n",
                    "defaults: 5\n",
                    "defaults:\n  - override /model: nope\n",
                    "defaults:\n  - {a: [1, {b: 2}]}\n",
                ]
            )
        )
        header = "# @package _global_\n"
    elif kind == "code":  # what would run code if built: neither path may build it (issue 22 items 1 and 6)
        body = draw(st.sampled_from(_CODE))
        header = _HEADER if draw(st.booleans()) else "# @package _global_\n"
    elif kind == "long_key":
        body = "x" * draw(st.sampled_from([1000, 1025, 5000])) + ": 1\n"
    else:
        body = _bomb(3, 3) + "".join(f"k{i}: {i}\n" for i in range(100)) + "data:\n  x: " + "[" * 30 + "]" * 30
    return kind, (header + body).encode()


def run_shard(what: str, shard: int, count: int, workdir: Path) -> dict:
    """Run ``count`` examples of the ``what`` property (``"overrides"`` or ``"files"``) with hypothesis seed
    ``1000 + shard`` in ``workdir`` (created; the dry runs write there); return the tally and the first failure."""
    global _ONE_COMPOSE
    workdir.mkdir(parents=True, exist_ok=True)
    os.chdir(workdir)
    _ONE_COMPOSE = _OneCompose()
    _ONE_COMPOSE.shared = shard != 0
    os.environ["WANDB_MODE"] = "disabled"
    _warm_up()
    seen = {"examples": 0, "refused": 0, "kinds": {}, "t": time.monotonic(), "cpu": time.process_time()}
    names = itertools.count()

    def tally(rc: int, kind: str = "") -> None:
        seen["examples"] += 1
        seen["refused"] += rc != 0
        if kind:
            seen["kinds"][kind] = seen["kinds"].get(kind, 0) + 1
        if seen["examples"] % 500 == 0:
            print(f"  shard {shard}: {seen['examples']} {what}", file=sys.stderr, flush=True)

    settings_ = settings(
        max_examples=count, deadline=None, derandomize=False, database=None, suppress_health_check=list(HealthCheck)
    )
    if what == "overrides":

        @seed(1000 + shard)
        @settings_
        @given(base=_BASE, overrides=_OVERRIDES)
        def prop(base, overrides):
            tally(_verdicts(base + overrides, base + overrides))

    else:

        @seed(1000 + shard)
        @settings_
        @given(item=_hostile(), suffix=st.sampled_from([".yaml", ".yml"]))
        def prop(item, suffix):
            kind, data = item
            folder = workdir.parent / "files" / f"s{shard}_{next(names)}"
            folder.mkdir(parents=True)
            f = folder / f"hostile{suffix}"
            f.write_bytes(data)
            tally(_verdicts([str(f)], [f"+recipe={f}"]), kind)
            if Path(SENTINEL).exists():
                raise Refusal(f"a recipe's code ran (it wrote {SENTINEL}): {data.decode(errors='replace')[:500]}")

    failure = None
    try:
        prop()
    except BaseException as e:  # the shard reports; the test asserts
        failure = "".join(traceback.format_exception(e))[-8000:]
    return {
        "examples": seen["examples"],
        "refused": seen["refused"],
        "kinds": seen["kinds"],
        "cpu_s": round(time.process_time() - seen["cpu"], 1),
        "wall_s": round(time.monotonic() - seen["t"], 1),
        "failure": failure,
    }


if __name__ == "__main__":
    what_, shard_, count_, workdir_ = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
    print(json.dumps(run_shard(what_, shard_, count_, workdir_)), flush=True)
