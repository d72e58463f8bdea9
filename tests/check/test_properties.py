"""Property: for any overrides, ``fsdpcfg check`` ends with findings (exit 0/1, valid JSON) or a clean usage
error (exit 2) -- never an uncaught exception or a traceback."""

from __future__ import annotations

import contextlib
import io
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fsdpcfg.cli.main import main
from fsdpcfg.schema import keys as K

_REAL = sorted(K.schema_keys()) + sorted(list(K.verl_keys()))[::7]
_KEYS = st.one_of(
    st.sampled_from(_REAL),
    st.sampled_from(
        [
            "custom_reward_function.path",
            "reward_model.enable",
            "model.trust_remote_code",
            "actor_rollout_ref.model.override_config.rope_scaling.factor",
            "actor_rollout_ref.rollout.n.x",
            "fsdpcfg.env.NCCL_DEBUG",
            "trainer",
            "actor_rollout_ref",
            "hydra.run.dir",
        ]
    ),
    st.builds(lambda k, s: k + s, st.sampled_from(_REAL), st.sampled_from(["x", "_", ".y", "s"])),
    st.text("abcdefghijklmnopqrstuvwxyz_.0123456789", min_size=1, max_size=30),
)
_SCALARS = st.one_of(
    st.integers(-5, 10**6),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.booleans(),
    st.sampled_from(
        [
            "null",
            "???",
            "fsdp",
            "fsdp2",
            "vllm",
            "hf",
            "grpo",
            "${data.max_prompt_length}",
            "${nope.key}",
            "'quoted str'",
            "Qwen/Qwen2.5-0.5B-Instruct",
            "/no/such/path",
            "[]",
            "{}",
            "[1,2",
            "a b",
            "${",
            "x=y",
            "'",
            "$HOME",
            "[console,tensorbord]",
            "{a: 1}",
        ]
    ),
    st.text("abcxyz019-_/.:,[]{}'\"$ ", max_size=12),
)
_GROUPS = st.builds(
    lambda g, o: f"{g}={o}",
    st.sampled_from(
        [
            "rollout",
            "engine",
            "launcher",
            "trainer",
            "model",
            "patches",
            "algorithm",
            "data",
            "reward",
            "+recipe",
            "nogroup",
        ]
    ),
    st.sampled_from(
        [
            "hf",
            "vllm",
            "sglang",
            "fsdp",
            "fsdp2",
            "verl",
            "native",
            "gpu_8x",
            "cpu",
            "qwen_grpo",
            "none",
            "ulysses",
            "gsm8k",
            "bogus",
            0,
            "[hf,vllm]",
            "null",
        ]
    ),
)


def _override(prefix: str, key: str, value) -> str:
    if prefix == "~":
        return f"~{key}"
    if isinstance(value, bool):
        value = str(value).lower()
    return f"{prefix}{key}={value}"


_OVERRIDES = st.lists(
    st.one_of(
        st.builds(_override, st.sampled_from(["", "", "+", "++", "~"]), _KEYS, _SCALARS),
        _GROUPS,
    ),
    max_size=4,
)


def _run(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(["check", "--format", "json", "--no-plan", *args])
        except SystemExit as e:  # argparse reports its usage errors this way
            rc = e.code
    return rc, out.getvalue(), err.getvalue()


@pytest.mark.slow  # end to end: a fresh Python process
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(base=st.sampled_from([["+recipe=qwen_grpo"], []]), overrides=_OVERRIDES)
def test_any_overrides_give_findings_or_a_usage_error(base, overrides):
    rc, out, err = _run(base + overrides)
    assert rc in (0, 1, 2), (rc, out, err)
    assert "Traceback" not in out + err
    doc = json.loads(out)  # a usage error is JSON too, on stdout, with nothing on stderr
    assert doc["exit_code"] == rc and not err.strip(), (rc, out, err)
    if rc == 2:
        assert doc["error"]["message"] and doc["inputs"] == [] and doc["findings"] == []
        return
    assert list(doc) == ["exit_code", "inputs", "findings"] and len(doc["inputs"]) == 1
    assert (rc == 1) == any(f["severity"] == "error" for f in doc["findings"])
    assert [{k: v for k, v in f.items() if k != "input"} for f in doc["findings"]] == doc["inputs"][0]["findings"]
    for f in doc["findings"]:
        assert set(f) == {"rule", "severity", "keys", "message", "fix", "file", "line", "input"}
        assert f["rule"].startswith("FC") and f["message"] and f["fix"]
        # FC000 is a rule that crashed: it may be skipped after schema errors, never a crash on a valid config
        assert not (f["rule"] == "FC000" and f["severity"] == "warning"), f
