"""What fsdpcfg writes, fsdpcfg reads: ``check`` on ``fsdpcfg export``'s config.yaml and on a run folder's saved
config.yaml gives no false finding, and ``python -m fsdpcfg +recipe=runs/.../config.yaml`` runs the saved config
again with the same values."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from fsdpcfg import verlref
from fsdpcfg.check.sources import check_yaml_file
from fsdpcfg.cli.main import main
from fsdpcfg.compose import compose, config_file

RECIPES = ["qwen_grpo", "arith_grpo", "qwen_sft"]
#: findings that say something here cannot be inspected (a model or data path of another machine): true infos.
CANNOT_INSPECT = {"FC106", "FC400", "FC408"}


def _false_findings(findings):
    return [
        f"{f.rule} {f.severity} {f.message}" for f in findings if f.severity != "info" or f.rule not in CANNOT_INSPECT
    ]


def _dry_run(tmp_path: Path, monkeypatch, capsys, *args: str) -> Path:
    monkeypatch.chdir(tmp_path)
    assert main([*args, "--dry-run"]) == 0
    out = capsys.readouterr().out
    folder = next(line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("run folder: "))
    return Path(folder) / "config.yaml"


@pytest.mark.parametrize("recipe", RECIPES)
def test_check_of_export_output_has_no_false_finding(recipe, tmp_path: Path, capsys):
    out = tmp_path / "out"
    assert main(["export", "--launcher", "verl", f"+recipe={recipe}", "-o", str(out)]) == 0
    capsys.readouterr()
    data, info = config_file.read(out / "config.yaml")
    assert info.kind == "verl" and info.base == ("sft_trainer_engine" if recipe == "qwen_sft" else "ppo_trainer")
    checked = check_yaml_file(out / "config.yaml")
    assert checked.composed is not None and checked.composed.kind == info.tree
    assert checked.composed.cfg.fsdpcfg.launcher == "verl"
    # verl composes its own tree first: keys the file does not write carry verl's defaults
    from omegaconf import OmegaConf

    raw = verlref.flatten(OmegaConf.to_container(checked.composed.cfg, resolve=False))
    written = verlref.flatten({k: v for k, v in data.items() if k not in ("defaults", "hydra")})
    verl_only = sorted(set(verlref.keys(info.base)) - set(written))
    assert verl_only and all(raw[k] == verlref.defaults(info.base, resolved=False)[k] for k in verl_only)
    assert _false_findings(checked.findings) == []


@pytest.mark.parametrize("engine", ["megatron", "automodel"])
def test_export_of_an_sft_engine_reads_back_as_its_verl_composition(engine, tmp_path: Path, capsys):
    """engine=megatron is written as verl's sft_trainer_engine with `override engine/optim: megatron` and read
    back as that composition (verl's Megatron keys, not the FSDP tree), with FC111 and no error."""
    out = tmp_path / "out"
    args = ["export", "--launcher", "verl", "+recipe=qwen_sft", f"engine={engine}", "trainer=gpu_8x"]
    args += ["data.train_batch_size=32", "-o", str(out)]
    assert main(args) == 0
    capsys.readouterr()
    data, info = config_file.read(out / "config.yaml")
    assert data["defaults"] == ["sft_trainer_engine", {"override engine": engine}, {"override optim": engine}, "_self_"]
    assert info.kind == "verl" and info.tree == "sft" and info.base == f"sft_{engine}_trainer"
    checked = check_yaml_file(out / "config.yaml")
    assert _false_findings([f for f in checked.findings if f.rule != "FC111"]) == []
    assert [f.rule for f in checked.findings if f.rule == "FC111"] == ["FC111"]


def test_check_of_export_output_still_finds_a_real_mistake(tmp_path: Path, capsys):
    out = tmp_path / "out"
    assert main(["export", "--launcher", "verl", "+recipe=qwen_grpo", "-o", str(out)]) == 0
    capsys.readouterr()
    text = (
        (out / "config.yaml").read_text().replace("ppo_micro_batch_size_per_gpu: 4", "ppo_micro_batch_size_per_gpu: 3")
    )
    (out / "config.yaml").write_text(text)
    line = next(i for i, s in enumerate(text.splitlines(), 1) if "ppo_micro_batch_size_per_gpu: 3" in s)
    rc = main(["check", "--format", "json", str(out / "config.yaml")])
    doc = json.loads(capsys.readouterr().out)
    assert rc == 1
    key = "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu"
    bad = [f for f in doc["inputs"][0]["findings"] if key in f["keys"] and f["severity"] == "error"]
    assert bad and bad[0]["file"].endswith("out/config.yaml") and bad[0]["line"] == line, doc


@pytest.mark.parametrize(
    "args",
    [
        # FC705 (on-policy micro-batch mismatch), a warning verl users meet on 8 GPUs
        [
            "launcher=verl",
            "rollout=vllm",
            "trainer.n_gpus_per_node=8",
            "data.train_batch_size=64",
            "actor_rollout_ref.actor.ppo_mini_batch_size=64",
            "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=32",
            "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4",
        ],
        # FC703 (FSDP1 offload flags under FSDP2)
        [
            "launcher=verl",
            "rollout=vllm",
            "trainer=gpu_1x",
            "actor_rollout_ref.actor.fsdp_config.param_offload=true",
            "actor_rollout_ref.rollout.tensor_model_parallel_size=1",
        ],
    ],
)
def test_export_output_keeps_the_findings_of_the_config(args, tmp_path: Path, capsys):
    """What check says of a config, it says of that config's export (the values, now read from the file)."""
    from fsdpcfg.check import check_overrides

    before = sorted((f.rule, f.severity, tuple(f.keys)) for f in check_overrides(["+recipe=qwen_grpo", *args]))
    assert before and all(sev != "error" for _, sev, _ in before)
    assert main(["export", "--launcher", "verl", "+recipe=qwen_grpo", *args, "-o", str(tmp_path / "out")]) == 0
    capsys.readouterr()
    checked = check_yaml_file(tmp_path / "out" / "config.yaml")
    assert sorted((f.rule, f.severity, tuple(f.keys)) for f in checked.findings) == before


@pytest.mark.parametrize(
    "args",
    [
        ["+recipe=qwen_grpo"],
        ["+recipe=arith_grpo"],
        ["+recipe=qwen_sft"],
        ["+recipe=qwen_grpo", "engine=fsdp", "data.train_batch_size=8"],
        ["+recipe=qwen_sft", "engine=fsdp", "optim.lr=2e-5"],
    ],
)
def test_run_folder_config_checks_clean_and_reruns_with_the_same_values(args, tmp_path: Path, monkeypatch, capsys):
    saved = _dry_run(tmp_path, monkeypatch, capsys, *args)
    original_text = saved.read_text()
    original = yaml.safe_load(original_text)
    assert config_file.read(saved)[1].kind == "full"

    checked = check_yaml_file(saved)
    assert checked.composed.kind == ("sft" if "qwen_sft" in args[0] else "ppo")
    assert _false_findings(checked.findings) == []

    # composed again as a recipe: every value of the saved run, provenance from the saved file
    from fsdpcfg.launch.preflight import absolutise
    from fsdpcfg.runinfo import run_config

    again = compose([f"+recipe={saved}"])
    assert verlref.flatten(absolutise(run_config(again))) == verlref.flatten(original)
    from fsdpcfg.check import check_config

    assert _false_findings(check_config(again)) == []  # what `python -m fsdpcfg +recipe=...` checks first
    assert str(again.provenance.source_of("data.train_batch_size")).endswith(
        f"config.yaml:{next(i for i, s in enumerate(original_text.splitlines(), 1) if 'train_batch_size' in s)})"
    )

    # the documented command: python -m fsdpcfg +recipe=runs/<project>/<experiment>/config.yaml
    assert _dry_run(tmp_path, monkeypatch, capsys, f"+recipe={saved.relative_to(tmp_path)}") == saved
    assert saved.read_text() == original_text


def test_saved_config_rerun_with_an_override(tmp_path: Path, monkeypatch, capsys):
    saved = _dry_run(tmp_path, monkeypatch, capsys, "+recipe=qwen_grpo")
    original = verlref.flatten(yaml.safe_load(saved.read_text()))
    _dry_run(tmp_path, monkeypatch, capsys, f"+recipe={saved}", "actor_rollout_ref.actor.optim.lr=3e-6")
    changed = verlref.flatten(yaml.safe_load(saved.read_text()))
    assert {k for k in original if original[k] != changed[k]} == {"actor_rollout_ref.actor.optim.lr"}
    assert changed["actor_rollout_ref.actor.optim.lr"] == 3e-6


@pytest.mark.parametrize("recipe", ["qwen_grpo", "qwen_sft"])
def test_launcher_verl_dry_run_config_checks_clean(recipe, tmp_path: Path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    extra = ["rollout=vllm"] if recipe != "qwen_sft" else []
    assert main([f"+recipe={recipe}", "launcher=verl", *extra, "--dry-run"]) == 0
    capsys.readouterr()
    [written] = list(tmp_path.glob("runs/*/*/verl/config.yaml"))
    assert config_file.read(written)[1].kind == "verl"
    assert _false_findings(check_yaml_file(written).findings) == []


def test_verl_config_file_as_recipe_is_a_usage_error_naming_verl(tmp_path: Path, capsys):
    out = tmp_path / "out"
    assert main(["export", "--launcher", "verl", "+recipe=qwen_grpo", "-o", str(out)]) == 0
    capsys.readouterr()
    assert main([f"+recipe={out / 'config.yaml'}", "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "is a verl config file" in err and "python -m verl.trainer.main_ppo --config-path=" in err
    assert "Traceback" not in err


def test_users_verl_config_file_is_read_as_verl_composes_it(tmp_path: Path):
    """A verl user's own config file (``--config-name=mine``, defaults list starting from ``ppo_trainer``): verl's
    defaults under the file's keys, so what the file leaves out is verl's (8 GPUs, adv_estimator=gae with a
    critic) and a typo in it is reported at its line."""
    p = tmp_path / "mine.yaml"
    p.write_text(
        "defaults:\n  - ppo_trainer\n  - _self_\ndata:\n  train_batch_size: 8\n"
        "actor_rollout_ref:\n  actor:\n    ppo_mini_batch_size: 4\n    stratgy: fsdp2\n"
    )
    checked = check_yaml_file(p)
    assert checked.composed.cfg.trainer.n_gpus_per_node == verlref.defaults()["trainer.n_gpus_per_node"] == 8
    assert checked.composed.cfg.fsdpcfg.launcher == "verl"
    typo = next(f for f in checked.findings if "actor_rollout_ref.actor.stratgy" in f.keys)
    assert typo.severity == "error" and typo.provenance["actor_rollout_ref.actor.stratgy"].endswith("mine.yaml:9")
    # 4 prompts over verl's 8 GPUs: the actor's and the critic's mini batches do not divide (verl would stop)
    over = {tuple(f.keys)[0] for f in checked.findings if f.rule == "FC204"}
    assert {"actor_rollout_ref.actor.ppo_mini_batch_size", "critic.ppo_mini_batch_size"} <= over


def test_verl_config_file_with_a_list_where_verl_has_a_mapping(tmp_path: Path):
    p = tmp_path / "mine.yaml"
    p.write_text("defaults:\n  - ppo_trainer\n  - _self_\nactor_rollout_ref:\n  actor: [fsdp2]\n")
    [f] = check_yaml_file(p).findings
    assert (f.rule, f.severity, f.keys) == ("FC100", "error", ["actor_rollout_ref.actor"])
    assert "cannot be merged onto verl's ppo_trainer config" in f.message
    assert f.fix == "write actor_rollout_ref.actor as a mapping, as verl's ppo_trainer does"
