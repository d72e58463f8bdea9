"""launcher=verl hand-over without verl: the YAML, the command, the environment, SFT and failures.

Fast (no verl import); verl's own opinion of these files is in test_verl_compat.py.
"""

from __future__ import annotations

import sys

import pytest
import yaml
from omegaconf import OmegaConf

from fsdpcfg import verlref
from fsdpcfg.check.to_verl import verl_tree
from fsdpcfg.compose import Composed, compose
from fsdpcfg.errors import ConfigError
from fsdpcfg.launch import verl_launch
from fsdpcfg.launch.machine import GpuInfo
from fsdpcfg.launch.verl import build_verl_invocation, env_of, launch_verl

# one worker builds the module's shared fixture (tests/conftest.py)
pytestmark = pytest.mark.xdist_group("verl_invocation")

GPU = [
    "+recipe=qwen_grpo",
    "launcher=verl",
    "rollout=vllm",
    "trainer=gpu_1x",
    "actor_rollout_ref.rollout.tensor_model_parallel_size=1",
]


@pytest.fixture(scope="module")
def composed() -> Composed:
    return compose(GPU)


def _doc(inv) -> dict:
    return yaml.safe_load(inv.yaml_text)


def test_yaml_extends_verls_own_config_and_drops_fsdpcfg_section(composed, tmp_path):
    inv = build_verl_invocation(composed, tmp_path)
    doc = _doc(inv)
    assert doc["defaults"] == ["ppo_trainer", "_self_"]
    assert doc["hydra"]["searchpath"] == ["pkg://verl.trainer.config"]
    assert "fsdpcfg" not in doc and "fsdpcfg" not in inv.tree
    assert inv.argv[1:] == ["-m", "verl.trainer.main_ppo", f"--config-path={tmp_path}", "--config-name=config"]
    assert inv.entry_point == verlref.ENTRY_POINTS["ppo_trainer"]
    # the composed values arrive unchanged, in verl's key names
    cfg = composed.to_container(resolve=True)
    assert doc["actor_rollout_ref"]["rollout"]["n"] == cfg["actor_rollout_ref"]["rollout"]["n"] == 4
    assert doc["actor_rollout_ref"]["rollout"]["name"] == "vllm"
    assert doc["trainer"]["n_gpus_per_node"] == 1 and doc["trainer"]["device"] == "cuda"


def test_fsdpcfg_resolvers_resolved_verl_references_kept(composed, tmp_path):
    tree = verl_tree(composed)
    # ${fsdpcfg_data:...} means nothing to verl: an absolute path instead
    assert tree["data"]["train_files"].startswith("/") and "${" not in tree["data"]["train_files"]
    # a plain reference between verl keys stays, so a verl user's edit of the target propagates
    assert tree["actor_rollout_ref"]["rollout"]["prompt_length"] == "${data.max_prompt_length}"
    assert tree["actor_rollout_ref"]["actor"]["checkpoint"]["load_contents"] == "${.save_contents}"
    # and the file, read back by OmegaConf, resolves to the composed values
    doc = OmegaConf.create(
        {k: v for k, v in _doc(build_verl_invocation(composed, tmp_path)).items() if k not in ("defaults", "hydra")}
    )
    assert doc.actor_rollout_ref.rollout.prompt_length == composed.cfg.data.max_prompt_length


def test_write_puts_the_yaml_where_the_command_looks(composed, tmp_path):
    inv = build_verl_invocation(composed, tmp_path / "deep" / "dir")
    path = inv.write()
    assert path == tmp_path / "deep" / "dir" / "config.yaml"
    assert f"--config-path={path.parent}" in inv.argv
    assert path.read_text() == inv.yaml_text


def test_env_goes_to_the_process_and_to_every_ray_worker(tmp_path):
    c = compose(
        GPU
        + [
            "+fsdpcfg.env.NCCL_DEBUG=WARN",
            "+fsdpcfg.env.TOKENIZERS_PARALLELISM=false",
            "+ray_kwargs.ray_init.address=auto",
        ]
    )
    inv = build_verl_invocation(c, tmp_path)
    assert inv.env == {"NCCL_DEBUG": "WARN", "TOKENIZERS_PARALLELISM": "false"}
    ray_init = inv.tree["ray_kwargs"]["ray_init"]
    assert ray_init["address"] == "auto"  # attaching to a running cluster passes through
    assert ray_init["runtime_env"]["env_vars"] == inv.env
    assert inv.command_line().startswith("NCCL_DEBUG=WARN TOKENIZERS_PARALLELISM=false ")


def test_explicit_runtime_env_entry_wins_over_fsdpcfg_env(tmp_path):
    c = compose(GPU + ["+fsdpcfg.env.NCCL_DEBUG=WARN", "+ray_kwargs.ray_init.runtime_env.env_vars.NCCL_DEBUG=INFO"])
    inv = build_verl_invocation(c, tmp_path)
    assert inv.tree["ray_kwargs"]["ray_init"]["runtime_env"]["env_vars"]["NCCL_DEBUG"] == "INFO"


def test_bad_env_is_a_config_error():
    c = compose(GPU + ["+fsdpcfg.env.BAD-NAME=1"])
    with pytest.raises(ConfigError) as e:
        env_of(c)
    assert e.value.key == "fsdpcfg.env.BAD-NAME"


def test_required_value_left_unset_is_named():
    c = compose(GPU + ["actor_rollout_ref.rollout.name=???"])
    with pytest.raises(ConfigError) as e:
        build_verl_invocation(c, "/tmp/x")
    assert e.value.key == "actor_rollout_ref.rollout.name"
    assert verl_tree(c, strict=False)["actor_rollout_ref"]["rollout"]["name"] == "???"


def _sft(nnodes: int = 1, env: dict | None = None) -> Composed:
    tree = {
        "model": {"path": "/models/qwen"},
        "data": {"train_files": "/data/train.parquet"},
        "trainer": {"nnodes": nnodes, "n_gpus_per_node": 4, "device": "cuda"},
        "fsdpcfg": {"kind": "sft", "launcher": "verl", "env": env or {}},
    }
    return Composed(cfg=OmegaConf.create(tree), kind="sft")


def test_sft_runs_torchrun_on_sft_trainer_engine(tmp_path):
    inv = build_verl_invocation(_sft(), tmp_path)
    assert inv.argv[:3] == ["torchrun", "--nnodes=1", "--nproc_per_node=4"]
    assert inv.argv[3:5] == ["-m", "verl.trainer.sft_trainer"]
    assert _doc(inv)["defaults"] == ["sft_trainer_engine", "_self_"]
    assert "ray_kwargs" not in inv.tree


def test_multi_node_sft_needs_a_rendezvous(tmp_path, monkeypatch):
    monkeypatch.delenv("MASTER_ADDR", raising=False)
    with pytest.raises(ConfigError) as e:
        build_verl_invocation(_sft(nnodes=2), tmp_path)
    assert e.value.key == "trainer.nnodes" and "MASTER_ADDR" in e.value.fix
    inv = build_verl_invocation(_sft(nnodes=2, env={"MASTER_ADDR": "node0", "MASTER_PORT": 1234}), tmp_path)
    assert "--rdzv_endpoint=node0:1234" in inv.argv


def test_dry_run_prints_the_command_and_writes_the_yaml(composed, tmp_path, monkeypatch):
    monkeypatch.setattr(verl_launch, "detect_gpus", lambda env=None: GpuInfo(0, "test: none"))
    lines: list[str] = []
    assert launch_verl(composed, dry_run=True, config_dir=tmp_path, echo=lines.append) == 0
    assert (tmp_path / "config.yaml").is_file()
    cmd = lines[-1]
    assert cmd.startswith(sys.executable) and "-m verl.trainer.main_ppo" in cmd and f"--config-path={tmp_path}" in cmd
    assert any("[FC850]" in line for line in lines)  # what would stop a real launch here, as a warning


def test_launch_on_a_gpu_less_machine_stops_before_anything_starts(composed, tmp_path, monkeypatch):
    monkeypatch.setattr(verl_launch, "detect_gpus", lambda env=None: GpuInfo(0, "test: none"))
    monkeypatch.setattr(verl_launch, "is_installed", lambda m: True)
    started = []
    monkeypatch.setattr("fsdpcfg.launch.signals.run_forwarding", lambda *a, **k: started.append(a) or 0)
    with pytest.raises(ConfigError) as e:
        launch_verl(composed, config_dir=tmp_path, echo=lambda s: None)
    text = str(e.value)
    assert "[FC850]" in text and "launcher=native" in text and "CUDA" in text
    assert started == [] and not (tmp_path / "config.yaml").exists()


def test_launch_runs_the_command_with_the_env(tmp_path, monkeypatch):
    c = compose(GPU + ["+fsdpcfg.env.NCCL_DEBUG=WARN"])
    monkeypatch.setattr(verl_launch, "detect_gpus", lambda env=None: GpuInfo(1, "test"))
    monkeypatch.setattr(verl_launch, "is_installed", lambda m: True)
    calls = []
    # run_forwarding: verl runs with signals forwarded (fsdpcfg/launch/signals.py, tests/launch/test_signals.py)
    monkeypatch.setattr(
        "fsdpcfg.launch.signals.run_forwarding", lambda argv, env, say=None: calls.append((argv, env)) or 7
    )
    assert launch_verl(c, config_dir=tmp_path, echo=lambda s: None) == 7
    argv, env = calls[0]
    assert argv[1:3] == ["-m", "verl.trainer.main_ppo"] and env["NCCL_DEBUG"] == "WARN"
    assert (tmp_path / "config.yaml").is_file()


def test_nulls_of_keys_verl_does_not_list_are_not_handed_over(tmp_path):
    """verl's get_fsdp_wrap_policy reads transformer_layer_cls_to_wrap with .get(name, default): a null in the
    file would replace the model's _no_split_modules and leave FSDP1 with no per-layer wrapping."""
    key = "actor_rollout_ref.actor.fsdp_config.wrap_policy.transformer_layer_cls_to_wrap"
    assert key not in verlref.keys()
    doc = _doc(build_verl_invocation(compose(GPU), tmp_path))
    wrap = doc["actor_rollout_ref"]["actor"]["fsdp_config"]["wrap_policy"]
    assert "transformer_layer_cls_to_wrap" not in wrap and wrap["min_num_params"] == 0
    # verl-listed nulls stay (verl's own default is null there)
    assert doc["actor_rollout_ref"]["actor"]["ppo_micro_batch_size"] is None
    # a set value is handed over
    doc = _doc(build_verl_invocation(compose([*GPU, f"{key}=[Qwen2DecoderLayer]"]), tmp_path / "b"))
    assert doc["actor_rollout_ref"]["actor"]["fsdp_config"]["wrap_policy"]["transformer_layer_cls_to_wrap"] == [
        "Qwen2DecoderLayer"
    ]
