"""``fsdpcfg check RUN_SCRIPT.sh`` on a corpus of run scripts written here in the styles verl users write
(tests/check/scripts/): each script's header says what it expects, and the test holds it exactly.

Header lines: ``# expect: no errors`` (no error and no warning), ``# expect-error: RULE [KEY]``,
``# expect-warning: RULE [KEY]`` (the errors and warnings are exactly these rules; KEY is among the finding's
keys), ``# expect-info: RULE [KEY]`` (present), ``# expect-commands: N`` (checked commands), ``# args: ...``
(the script's positional arguments, ``-- ARGS``), ``# overrides: ...`` (given after the script),
``# expect-line: KEY=LINE ...`` (the script line each key's provenance names).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fsdpcfg.check.sources import check_run_script

CORPUS = Path(__file__).parent / "scripts"
ENV = {"HOME": "/home/user", "PATH": "/usr/bin"}


def header(path: Path) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line in path.read_text().splitlines():
        if line.startswith("# ") and ":" in line:
            tag, _, value = line[2:].partition(":")
            if tag.startswith(("expect", "args", "overrides")):
                out.setdefault(tag.strip(), []).append(value.strip())
    return out


def _engine_megatron_exists() -> bool:
    from fsdpcfg.compose import available_options

    return "megatron" in available_options("engine")


def _needs(path: Path):
    if path.name == "megatron.sh" and not _engine_megatron_exists():
        return pytest.mark.skip(reason="needs conf/engine/megatron.yaml and FC111 (branch keytree)")
    return []


SCRIPTS = sorted(CORPUS.glob("*.sh"))


@pytest.mark.parametrize("path", [pytest.param(p, id=p.name, marks=_needs(p)) for p in SCRIPTS])
def test_corpus_script(path):
    h = header(path)
    args = h["args"][0].split() if "args" in h else None
    overrides = h["overrides"][0].split() if "overrides" in h else ()
    results = check_run_script(path, overrides, args=args, environ=ENV)
    if "expect-commands" in h:
        assert len(results) == int(h["expect-commands"][0])
    findings = [f for r in results for f in r.findings]
    serious = [f for f in findings if f.severity in ("error", "warning")]
    expected = [("error", e) for e in h.get("expect-error", [])] + [("warning", e) for e in h.get("expect-warning", [])]
    if "expect" in h:
        assert h["expect"] == ["no errors"] and not expected
    assert sorted((f.severity, f.rule) for f in serious) == sorted((s, e.split()[0]) for s, e in expected), [
        (f.rule, f.keys, f.message) for f in serious
    ]
    for _sev, e in expected:
        rule, *key = e.split()
        assert any(f.rule == rule and (not key or key[0] in f.keys) for f in serious), (rule, key, serious)
    for e in h.get("expect-info", []):
        rule, *key = e.split()
        assert any(f.rule == rule and f.severity == "info" and (not key or key[0] in f.keys) for f in findings), (
            rule,
            key,
            [(f.rule, f.keys) for f in findings],
        )
    for pair in " ".join(h.get("expect-line", [])).split():
        key, line = pair.split("=")
        src = str(results[0].composed.provenance.source_of(key))
        assert f"{path}:{line}" in src, (key, src)


def _value(result, key):
    from omegaconf import OmegaConf

    from fsdpcfg.rules.context import get_dotted

    return get_dotted(OmegaConf.to_container(result.composed.cfg, resolve=True), key, None)


def test_case_branch_follows_the_positional_argument():
    path = CORPUS / "engine_case.sh"
    [vllm] = check_run_script(path, environ=ENV)  # ENGINE=${1:-vllm}
    [sglang] = check_run_script(path, args=["sglang", "4"], environ=ENV)
    assert _value(vllm, "actor_rollout_ref.rollout.name") == "vllm"
    assert _value(vllm, "actor_rollout_ref.rollout.gpu_memory_utilization") == 0.6
    assert _value(vllm, "trainer.n_gpus_per_node") == 8
    assert _value(sglang, "actor_rollout_ref.rollout.name") == "sglang"
    assert _value(sglang, "actor_rollout_ref.rollout.tensor_model_parallel_size") == 1  # the [[ ]] branch
    assert _value(sglang, "trainer.n_gpus_per_node") == 4
    # the `*)` branch exits before the command: bash never runs it, and the check says so (was a usage error, and
    # with --skip-unrelated a script skipped as running no verl command: a pass)
    [never] = check_run_script(path, args=["trtllm"], environ=ENV)
    [(rule, severity, message)] = [(f.rule, f.severity, f.message) for f in never.findings]
    assert (rule, severity) == ("FC134", "error")
    assert "never reached: the script stops at line 19 before it" in message


def test_overrides_after_the_script_stand_at_its_dollar_at():
    [r] = check_run_script(CORPUS / "engine_case.sh", ["actor_rollout_ref.rollout.n=16"], environ=ENV)
    assert _value(r, "actor_rollout_ref.rollout.n") == 16
    assert "command line" in str(r.composed.provenance.source_of("actor_rollout_ref.rollout.n"))
    assert not [f for f in r.findings if f.rule == "FC122"]  # the script has "$@"


def test_each_command_of_a_function_is_checked_with_its_own_values():
    a, b = check_run_script(CORPUS / "functions_env.sh", environ=ENV)
    assert (_value(a, "actor_rollout_ref.actor.optim.lr"), _value(b, "actor_rollout_ref.actor.optim.lr")) == (
        1e-6,
        3e-6,
    )
    assert _value(a, "trainer.experiment_name") == "lr_1e-6" and _value(b, "trainer.total_epochs") == 2
    assert a.label.endswith(":22") and b.label.endswith(":22")


def test_sft_script_checks_on_verls_sft_defaults():
    [r] = check_run_script(CORPUS / "sft_torchrun.sh", args=["8", "/tmp/ckpt"], environ=ENV)
    assert r.composed.kind == "sft"
    assert _value(r, "trainer.n_gpus_per_node") == 8 and _value(r, "trainer.default_local_dir") == "/tmp/ckpt"
    from fsdpcfg import verlref

    # a key the script does not set has verl's sft_trainer_engine default, not fsdpcfg's recipe value
    assert _value(r, "optim.lr") == verlref.defaults("sft_trainer_engine")["optim.lr"]
    # without its arguments: $1/$2 are unknown (infos naming the keys), never a guessed error
    [r2] = check_run_script(CORPUS / "sft_torchrun.sh", environ=ENV)
    assert not [f for f in r2.findings if f.severity == "error"]
    info_keys = {k for f in r2.findings if f.rule == "FC107" for k in f.keys}
    assert {"trainer.n_gpus_per_node", "trainer.default_local_dir"} <= info_keys


def test_exported_run_verl_sh_checks_clean(tmp_path):
    from fsdpcfg.cli.main import main

    for recipe in ("qwen_grpo", "qwen_sft"):
        out = tmp_path / recipe
        assert main(["export", "--launcher", "verl", f"+recipe={recipe}", "-o", str(out)]) == 0
        [r] = check_run_script(out / "run_verl.sh", environ=ENV)
        assert not [f for f in r.findings if f.severity in ("error", "warning")], r.findings
        assert any(f.rule == "FC124" and "config.yaml" in f.message for f in r.findings)
        src = str(r.composed.provenance.source_of("data.train_files"))
        assert "run_verl.sh" in src  # the script's own override wins over its config.yaml
        key = "model.path" if recipe == "qwen_sft" else "actor_rollout_ref.model.path"
        assert "config.yaml:" in str(r.composed.provenance.source_of(key))


NO_EXEC_SCRIPT = """#!/usr/bin/env bash
touch {m}/touched
echo x > {m}/redirected
STAMP=$(touch {m}/substituted; date)
OLD=`touch {m}/backticks`
mkdir -p {m}/made && cd {m}/made
cat > {m}/heredoc <<EOF
written
EOF
source {m}/sourced.sh
eval "touch {m}/evaled"
(touch {m}/subshell)
curl -s http://127.0.0.1:9/ -o {m}/downloaded
python3 -m verl.trainer.main_ppo data.train_batch_size=8 trainer.experiment_name=$STAMP "$@" | tee {m}/tee.log
"""


@pytest.mark.slow  # end to end: a fresh Python process
def test_nothing_in_the_script_is_executed(tmp_path):
    """A script whose commands, substitutions, redirections and heredocs would write files leaves none, and
    the check opens no network connection (a fresh process with sockets disabled)."""
    m = tmp_path / "marks"
    m.mkdir()
    (m / "sourced.sh").write_text(f"touch {m}/from_source\n")
    script = tmp_path / "run.sh"
    script.write_text(NO_EXEC_SCRIPT.format(m=m))
    probe = (
        "import socket, sys\n"
        "def deny(*a, **k): raise OSError('network disabled by the test')\n"
        "socket.socket.connect = deny; socket.create_connection = deny\n"
        "from fsdpcfg.cli.main import main\n"
        "rc = main(['check', '--format', 'json', sys.argv[1]])\n"
        "heavy = sorted(x for x in sys.modules if x.split('.')[0] in ('torch', 'transformers', 'verl', 'ray'))\n"
        "print('HEAVY', heavy)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe, str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, HOME=str(tmp_path)),
    )
    assert sorted(p.name for p in m.iterdir()) == ["sourced.sh"], out.stdout + out.stderr
    doc = json.loads(out.stdout[: out.stdout.rindex("HEAVY")])
    assert "HEAVY []" in out.stdout
    rules = {f["rule"] for f in doc["findings"]}
    assert {"FC107", "FC123"} <= rules  # the substitution and `source`/`eval` are named, not run


def test_cli_overrides_and_positional_arguments(run_check):
    rc, findings = run_check(str(CORPUS / "no_dollar_at.sh"), "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=64")
    assert rc == 1 and {"FC205", "FC122"} <= {f["rule"] for f in findings}
    rc, findings = run_check(str(CORPUS / "sft_torchrun.sh"), "--", "2", "/tmp/x")
    assert rc == 0 and not [f for f in findings if f["rule"] == "FC107"]
    rc, _ = run_check("+recipe=qwen_grpo", "--", "x")
    assert rc == 2  # -- ARGS are for a run script


def test_a_positional_argument_that_reaches_dollar_at_is_passed_to_verl(tmp_path):
    """``ENGINE=${1:-vllm}`` without ``shift``: ``bash run.sh sglang`` hands `sglang` to main_ppo as well,
    which Hydra rejects; the check says so, as verl would."""
    f = tmp_path / "run.sh"
    f.write_text('ENGINE=${1:-vllm}\npython3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=$ENGINE "$@"\n')
    [r] = check_run_script(f, args=["sglang"], environ=ENV)
    assert [x.rule for x in r.findings if x.severity == "error"] == ["FC100"]
    assert "sglang" in r.findings[0].message


def test_no_verl_command_says_why(tmp_path):
    from fsdpcfg.errors import UsageError

    f = tmp_path / "run.sh"
    f.write_text("$COMMAND data.train_batch_size=8 model.path=x\n")  # COMMAND is set nowhere
    with pytest.raises(UsageError, match=r"line 1 cannot be known: `\$COMMAND` is not set"):
        check_run_script(f, environ=ENV)
    f.write_text("echo preparing\npython3 prepare.py\n")
    with pytest.raises(UsageError, match="no verl command found"):
        check_run_script(f, environ=ENV)


def test_one_option_per_group():
    from fsdpcfg.check.runscript.translate import _one_per_group

    assert _one_per_group(["launcher=verl", "engine=fsdp", "patches=remove_padding", "engine=megatron"], []) == [
        "launcher=verl",
        "engine=megatron",
        "patches=remove_padding",
    ]
    assert _one_per_group(["+recipe=qwen_sft", "launcher=verl", "trainer=gpu_8x"], ["trainer=cpu"]) == [
        "+recipe=qwen_sft",
        "launcher=verl",
    ]


def test_environment_values_are_named_where_they_feed_a_key_and_where_they_choose_a_branch():
    env = dict(ENV, MODEL_PATH="/models/q", USE_SGLANG="1")
    [r] = check_run_script(CORPUS / "grpo_arrays.sh", environ=env)
    assert _value(r, "actor_rollout_ref.model.path") == "/models/q"
    fed = [f for f in r.findings if f.rule == "FC120" and f.keys == ["actor_rollout_ref.model.path"]]
    assert fed and "MODEL_PATH=/models/q" in fed[0].message
    f = CORPUS.parent / "scripts" / "engine_case.sh"
    text = f.read_text().replace("ENGINE=${1:-vllm}", 'ENGINE=vllm; [ "$USE_SGLANG" = 1 ] && ENGINE=sglang')
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        g = Path(d) / "run.sh"
        g.write_text(text)
        [r] = check_run_script(g, environ=env)
    assert _value(r, "actor_rollout_ref.rollout.name") == "sglang"
    assert any(f.rule == "FC120" and not f.keys and "USE_SGLANG=1" in f.message for f in r.findings)


def test_config_path_without_config_name(tmp_path):
    """``--config-path`` alone: Hydra keeps @hydra.main's config_name (verl's ppo_trainer) and searches the
    folder for it; the check says the file is missing there instead of failing on the absent name (found by mypy:
    an AttributeError on None)."""
    folder = tmp_path / "cfg"
    folder.mkdir()
    script = tmp_path / "run.sh"
    script.write_text(f"python3 -m verl.trainer.main_ppo --config-path={folder} data.train_batch_size=8\n")
    (checked,) = check_run_script(script)
    notes = [f for f in checked.findings if f.rule == "FC124"]
    assert notes and "config ppo_trainer.yaml was not found" in notes[0].message, checked.findings


def test_a_smaller_veomni_ulysses_size_leaves_the_budget_short_of_one_sequence():
    results = check_run_script(CORPUS / "veomni_ulysses_budget.sh", args=["2"], environ=ENV)
    errors = [f for r in results for f in r.findings if f.severity == "error"]
    assert [(f.rule, f.keys[0]) for f in errors] == [
        ("FC207", "actor_rollout_ref.actor.ppo_max_token_len_per_gpu"),
        ("FC207", "actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu"),
    ]
    assert all("2048 x ulysses_parallel_size 2 = 4096 tokens" in f.message for f in errors)
    assert all("actor_rollout_ref.actor.veomni.ulysses_parallel_size" in f.keys for f in errors)
