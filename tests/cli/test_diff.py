"""``fsdpcfg diff``: differences of resolved configs, independent of key order."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from omegaconf import OmegaConf

from fsdpcfg.cli.main import main
from fsdpcfg.compose import compose


def test_same_config_has_no_differences(capsys):
    assert main(["diff", "qwen_grpo", "qwen_grpo", "data.train_batch_size=8", "--exit-code"]) == 0
    assert capsys.readouterr().out.endswith("no differences\n")


def test_sides_show_groups_and_resolved_keys(capsys):
    assert main(["diff", "--a", "qwen_grpo", "--b", "qwen_grpo rollout=vllm data.max_prompt_length=300"]) == 0
    out = capsys.readouterr().out
    assert "  rollout: hf -> vllm" in out
    rows = {ln.split()[0]: ln.split()[1:] for ln in out.splitlines() if ln.startswith(("actor_rollout_ref.", "data."))}
    assert rows["actor_rollout_ref.rollout.name"] == ["hf", "vllm"]
    # interpolated keys follow the key they copy
    assert rows["actor_rollout_ref.rollout.prompt_length"] == ["256", "300"]
    assert rows["data.max_prompt_length"] == ["256", "300"]
    assert "trainer.nnodes" not in out


def test_key_order_does_not_matter(tmp_path: Path, capsys):
    cfg = OmegaConf.to_container(compose(["+recipe=qwen_grpo"]).cfg, resolve=True)
    shuffled = {k: cfg[k] for k in reversed(list(cfg))}
    shuffled["trainer"] = dict(reversed(list(shuffled["trainer"].items())))
    f = tmp_path / "dump.yaml"
    f.write_text(yaml.safe_dump(shuffled, sort_keys=True))
    assert main(["diff", "qwen_grpo", str(f), "--exit-code"]) == 0
    shuffled["trainer"]["nnodes"] = 2
    del shuffled["fsdpcfg"]["update_weights_bucket_megabytes"]
    f.write_text(yaml.safe_dump(shuffled))
    capsys.readouterr()
    assert main(["diff", "qwen_grpo", str(f), "--format", "json", "--exit-code"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["keys"]["trainer.nnodes"]["a"] == 1 and doc["keys"]["trainer.nnodes"]["b"] == 2
    assert doc["keys"]["fsdpcfg.update_weights_bucket_megabytes"]["b"] == "(absent)"
    assert doc["choices"] == {}  # a full config file has no group choices


def test_bool_and_int_are_different():
    from fsdpcfg.cli.diff import same

    assert same(1, 1.0) and not same(True, 1) and not same(0, False) and same(None, None)


def test_diff_needs_two_sides(capsys):
    assert main(["diff", "qwen_grpo"]) == 2
    assert "diff needs two recipes" in capsys.readouterr().err
    assert main(["diff", "--a", "qwen_grpo"]) == 2
