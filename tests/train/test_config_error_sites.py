"""Each rule once: a rule (fsdpcfg/rules) is the only place that decides a config is invalid. The plan and the
trainers ask the rules (:mod:`fsdpcfg.rules.gate`, and :func:`fsdpcfg.train.entry.check_config_file` for a
rank started directly); what is left in plan/ and train/ is what only the running job can know (the data it
reads, the files it loads, the ranks torchrun started), each site listed here with why. A new
``raise ConfigError`` in plan/ or train/ fails this test: ask the rule instead, or add it here with its reason."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "fsdpcfg"

#: "module path:qualified function" -> (raise sites, why the check is the running job's, not a rule's)
SITES: dict[str, tuple[int, str]] = {
    "plan/_plan.py:config_value": (1, "a key missing from a hand-made dict (a composed config has every key)"),
    "plan/_plan.py:positive_int": (1, "the plan's read of a number; FC103 ran first on a composed config"),
    "plan/_plan.py:_per_gpu": (2, "no fixed micro-batch to count (dynamic, verl); the global form"),
    "plan/_plan.py:total_training_steps": (1, "the number of prompts actually read"),
    "native/ckpt_layout.py:find_resume_folder": (3, "the checkpoint folders on disk (a link, a step gone, a bad path)"),
    "native/ckpt_layout.py:require_dcp_state": (1, "the checkpoint folder on disk"),
    "native/ckpt_layout.py:check_resume_layout": (1, "the step folders on disk the run would write over"),
    "train/data.py:PromptDataset.__init__": (2, "the rows read"),
    "train/data.py:PromptDataset.token_ids": (1, "a prompt longer than allowed, in the data read"),
    "train/data.py:StatefulSampler.__init__": (1, "the number of prompts read"),
    "train/data.py:StatefulSampler.load_state_dict": (1, "the checkpoint's sampler state"),
    "train/engine/fsdp.py:decoder_layer_classes": (1, "the module classes of the model loaded"),
    "train/engine/fsdp.py:check_fsdp1_units": (1, "the FSDP1 units of the model loaded (LoRA beside frozen weights)"),
    "train/entry.py:check_config_file": (1, "reports the rules' own findings"),
    "train/base.py:TrainerBase.start": (1, "the ranks torchrun started (both trainers)"),
    "train/lora/collect.py:_check_nonempty": (1, "the adapter the model loaded has"),
    "train/lora/collect.py:find_layer_blocks": (1, "the module names of the model loaded"),
    "train/lora/rollout.py:LoraWeightSync.base_stream": (1, "the replica's state (base not sent yet)"),
    "train/lora/setup.py:apply_lora": (1, "PEFT's answer for the model loaded"),
    "train/model.py:import_external_libs": (1, "importing the user's module"),
    "train/model.py:load_hf_config": (1, "reading config.json"),
    "train/model.py:auto_class_for": (1, "the architecture of the model loaded"),
    "train/model.py:load_model": (1, "reading the weights"),
    "train/model.py:load_tokenizer": (1, "reading the tokenizer"),
    "train/patches/__init__.py:apply_patches": (2, "the patch registry's problems(), the function the rules call"),
    "train/patches/gradient_checkpointing.py:apply": (1, "the model class loaded"),
    "train/patches/remove_padding.py:apply": (1, "the attention implementation of the model loaded"),
    "train/reward.py:score_responses": (1, "a row read without ground truth"),
    "train/sft/dataset.py:SFTDataset.__init__": (2, "the rows read"),
    "train/sft/dataset.py:SFTDataset._by_prefix": (1, "the chat template rendering the rows read"),
    "train/sft/dataset.py:SFTDataset.__getitem__": (2, "a row read: its messages, its length"),
    "plan/sft.py:total_sft_steps": (1, "the number of conversations read"),
    "train/trackers.py:WandbSink.__init__": (1, "wandb's answer at start-up"),
}


def _sites() -> Counter[str]:
    found: Counter[str] = Counter()

    def visit(node: ast.AST, qual: list[str], path: str) -> None:
        for ch in ast.iter_child_nodes(node):
            if isinstance(ch, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                visit(ch, [*qual, ch.name], path)
                continue
            if isinstance(ch, ast.Raise) and ch.exc is not None:
                f = ch.exc.func if isinstance(ch.exc, ast.Call) else ch.exc
                if isinstance(f, ast.Name) and f.id == "ConfigError":
                    found[f"{path}:{'.'.join(qual)}"] += 1
            visit(ch, qual, path)

    for sub in ("plan", "train", "native"):
        for p in sorted((ROOT / sub).rglob("*.py")):
            visit(ast.parse(p.read_text()), [], p.relative_to(ROOT).as_posix())
    return found


def test_every_config_error_in_plan_and_train_is_the_running_jobs():
    found = _sites()
    listed = {k: n for k, (n, _) in SITES.items()}
    new = {k: n for k, n in found.items() if n > listed.get(k, 0)}
    assert new == {}, "a new ConfigError in plan/ or train/: ask the rule (fsdpcfg.rules.gate), or list it here"
    gone = {k: n for k, n in listed.items() if found.get(k, 0) < n}
    assert gone == {}, "sites removed or moved: update SITES"
