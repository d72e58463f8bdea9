#!/usr/bin/env python
"""Write docs/cli.md: one section per catalogue command, with the real output of real runs.

Every command below is run through fsdpcfg's CLI (in a scratch folder, so `cp` writes nothing into the
repository) and its output pasted under it verbatim.

    python scripts/gen_cli_docs.py
"""

from __future__ import annotations

import contextlib
import io
import os
import shlex
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from fsdpcfg.cli.main import main  # noqa: E402

#: (section title, intro paragraph, commands). A command starting with "$ " is a shell line run as is.
SECTIONS = [
    (
        "fsdpcfg ls",
        "Recipes and every group option, with the first comment line of each file as its description "
        "(nothing is hand-kept: add a YAML file with a comment on top and it is listed). `fsdpcfg ls GROUP` lists one "
        "group, `--format json` is for scripts.",
        ["ls"],
    ),
    (
        "fsdpcfg show",
        "The resolved config, each value with where it came from: the root config's `file:line`, "
        "`group=option (file:line)`, `recipe=NAME (file:line)` or the command line. Interpolated values also show "
        "what they were written as. `-k PREFIX` narrows the listing; `--format yaml` prints nested YAML with the "
        "sources as comments, `--format json` a `{choices, config, provenance}` document. A recipe may be given as "
        "`+recipe=NAME`, as `NAME`, or as the path of a recipe file of your own.",
        [
            "show +recipe=qwen_grpo -k actor_rollout_ref.actor.strategy -k actor_rollout_ref.rollout.n "
            "-k actor_rollout_ref.rollout.prompt_length -k data.train_batch_size data.train_batch_size=8",
            "show qwen_grpo --format yaml -k trainer",
        ],
    ),
    (
        "fsdpcfg cp",
        "Start your own recipe. The default is a minimal *child*: its defaults list names the "
        "original, so it inherits everything and you write only what differs. `--expand` writes a flat, "
        "self-contained copy (every group choice pinned, every key the original's recipe chain sets). Both "
        "compose to exactly the original's config until edited (tested). The copy can live anywhere; run it by "
        "path: `python -m fsdpcfg +recipe=PATH.yaml`, `fsdpcfg check PATH.yaml`, `fsdpcfg show PATH.yaml`.",
        [
            "cp qwen_grpo my_grpo.yaml",
            "$ cat my_grpo.yaml",
            "$ printf 'data:\\n  train_batch_size: 8\\n' >> my_grpo.yaml",
            "show my_grpo.yaml -k data.train_batch_size -k trainer.experiment_name",
            "cp qwen_grpo flat_grpo.yaml --expand",
            "$ head -20 flat_grpo.yaml",
        ],
    ),
    (
        "fsdpcfg diff",
        "The difference of two resolved configs, by key (order does not matter), after "
        "interpolation. A and B are recipe names, recipe files or full config YAMLs; trailing overrides apply to "
        'both; `--a "..." --b "..."` gives each side its own overrides. `--sources` adds where each value came '
        "from, `--exit-code` exits 1 when they differ.",
        [
            "diff qwen_grpo my_grpo.yaml",
            'diff --a qwen_grpo --b "qwen_grpo rollout=vllm trainer=gpu_1x"',
            'diff --a qwen_grpo --b "qwen_grpo data.max_prompt_length=1024" --sources',
        ],
    ),
    (
        "fsdpcfg schema",
        "JSON Schema exported from the Pydantic models into `schemas/`: `fsdpcfg.schema.json` for "
        "the files people edit (recipes and group options are partial configs, so no key is required; unknown keys "
        "are still rejected, and `${...}` interpolations and `???` are accepted anywhere) and "
        "`fsdpcfg.strict.schema.json` for a complete resolved config. Recipes start with "
        "`# yaml-language-server: $schema=../schemas/fsdpcfg.schema.json`, so editors with the YAML language "
        "server complete keys, show descriptions and underline typos. A test keeps the files fresh.",
        ["schema --check"],
    ),
    (
        "fsdpcfg check",
        "Every finding at once, for a composed config (`+recipe=NAME key=value ...`), for files "
        "(recipes; full configs such as a run folder's `config.yaml`; verl config files such as `fsdpcfg export`'s "
        "`config.yaml`, read as verl composes them: verl's tree, then the file) or for verl run scripts. YAML that is "
        "not a fsdpcfg or verl config (no verl or fsdpcfg top-level section: a workflow, docker-compose, a Kubernetes "
        "manifest, several YAML documents) is skipped with the info FC130 in every mode. A shell script with no verl "
        "command is a usage error, or, with `--skip-unrelated` (what the pre-commit hooks pass), skipped with the "
        "info FC131.\n\n"
        "Exit codes: **0** no error finding (only warnings and infos, or every input skipped); **1** an error finding "
        "in at least one input (or verl rejects, with `--verl`); **2** a usage error (a missing file, files mixed "
        "with overrides, a bad option or override).\n\n"
        "`--format json` prints one document, also for a usage error:\n\n"
        "```\n"
        '{"exit_code": 0 | 1 | 2,\n'
        ' "inputs": [                          one object per input, in the order given\n'
        '   {"input": "recipes/bad.yaml",     the file, the script\'s file:line, or the overrides\n'
        '    "status": "passes" | "fails" | "skipped",\n'
        '    "counts": {"error": 1, "warning": 0, "info": 0},\n'
        '    "findings": [{"rule", "severity", "keys", "message", "fix",\n'
        '                  "file", "line"}]}],   where the first located key\'s value was written;\n'
        "                                       null for the command line or a default\n"
        '    "keys": {"set", "judged", "share"}}  a run script\'s command only: the keys it sets, those whose\n'
        "                                       value was judged (the rest only by name: FC107)\n"
        ' "findings": [...],                  every input\'s findings in one list, each with its "input"\n'
        ' "error": {"message", "key", "fix"}}  only for a usage error (exit 2; inputs and findings empty)\n'
        "```\n\n"
        "`--fix FILE|SCRIPT ...` rewrites what has exactly one right answer, as `ruff --fix` does, then checks the "
        "rewritten files: a key of an older verl whose verl 0.9.1 key is known (FC701: "
        "`reward_model.reward_manager=dapo` becomes `reward.reward_manager.name=dapo`, "
        "`+reward_model.reward_kwargs.X` becomes `+reward.reward_kwargs.X`, as verl's own "
        "`migrate_legacy_reward_impl` maps them; the 0.5 to 0.9.1 renames such as `ray_init.*` to "
        "`ray_kwargs.ray_init.*`) and a trainer module verl 0.9.1 removed (FC708: `verl.trainer.main_ppo_sync` "
        "becomes `verl.trainer.main_ppo`; `verl.trainer.fsdp_sft_trainer` becomes `verl.trainer.sft_trainer` with "
        "its keys renamed, only when every key has a 0.9.1 key). A run script's override words are edited in place "
        "on their line; a YAML file's lines are edited (comments and layout kept, never re-dumped) and the result "
        "must load to the migrated config, else nothing is written. What has no single answer (a key with no 0.9.1 "
        "home, a target the command also sets, a key built from a variable) is left and still reported. Writes are "
        "atomic and keep the file's permissions; a failed write leaves the original. Each rewrite is printed as "
        '`FIXED file:line old -> new` (JSON: `"fixed"`). `--diff` prints the rewrite as a unified diff instead, '
        "writes nothing, and exits 1 when there is a change (0 when none).",
        [
            "$ mkdir -p recipes .github/workflows && printf '# @package _global_\\ndefaults:\\n  - qwen_grpo\\n"
            "  - _self_\\nactor_rollout_ref:\\n  actor:\\n    strategy: fsdp3\\n' > recipes/bad.yaml && "
            "printf 'name: ci\\non: [push]\\njobs: {}\\n' > .github/workflows/ci.yml",
            "check recipes/bad.yaml .github/workflows/ci.yml",
            "check --format json recipes/bad.yaml .github/workflows/ci.yml",
            "check --format json recipes/missing.yaml",
            "$ mkdir -p old && printf 'reward_model:\\n  reward_manager: dapo  # DAPO\\n"
            "custom_reward_function:\\n  path: my_reward.py\\n' > old/legacy.yaml",
            "check --diff old/legacy.yaml",
        ],
    ),
    (
        "fsdpcfg explain",
        "A key's page (type, allowed values, the schema's and verl's defaults, the native "
        "launcher's support, where the tree sets it, the rules that read it; with overrides, the composed value "
        "and its source), a section's keys, or a rule's page (what it checks, its source, where it is defined, "
        "and its failing example run through the real checker). Unknown names get a did-you-mean and exit 2.",
        [
            "explain actor_rollout_ref.rollout.n +recipe=qwen_grpo",
            "explain FC601",
            "explain actor_rollout_ref.rolout.n",
        ],
    ),
]


def _run(command: str) -> str:
    if command.startswith("$ "):
        import subprocess

        r = subprocess.run(command[2:], shell=True, capture_output=True, text=True)
        return r.stdout + r.stderr
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(shlex.split(command))
    text = out.getvalue() + err.getvalue()
    return text + (f"[exit code {code}]\n" if code else "")


def render() -> str:
    """Run every command in a scratch folder and return the page."""
    lines = [
        "# The catalogue commands",
        "",
        "<!-- Generated by scripts/gen_cli_docs.py from real runs; the outputs below are verbatim. -->",
        "",
        "`ls`, `show`, `cp`, `diff`, `check`, `schema` and `explain` need only the config tree, the schema and "
        "the rule "
        "table: they never import torch, transformers or verl. The full rule and option list is in "
        "[reference.md](reference.md).",
        "",
    ]
    cwd = os.getcwd()
    with tempfile.TemporaryDirectory(prefix="fsdpcfg-docs-") as tmp:
        os.chdir(tmp)
        try:
            for title, intro, commands in SECTIONS:
                lines += [f"## `{title}`", "", intro, ""]
                for c in commands:
                    shown = c[2:] if c.startswith("$ ") else f"fsdpcfg {c}"
                    output = _run(c).rstrip("\n")
                    lines += ["```console", f"$ {shown}", *([output] if output else []), "```", ""]
        finally:
            os.chdir(cwd)
    return "\n".join(lines).replace(str(REPO), "/path/to/fsdpcfg")


if __name__ == "__main__":
    target = REPO / "docs" / "cli.md"
    target.parent.mkdir(exist_ok=True)
    target.write_text(render())
    print(f"wrote {target}")
