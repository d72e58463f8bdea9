"""``fsdpcfg export --launcher verl``: write a folder a verl user can read, move to a cluster and run.

The folder holds:

* ``config.yaml``: verl's config (see :mod:`fsdpcfg.launch.verl`): defaults ``[ppo_trainer, _self_]``
  (``sft_trainer_engine`` for SFT), verl's search path, then every key fsdpcfg composed, in verl's names.
* ``run_verl.sh``: executable; runs ``python3 -m verl.trainer.main_ppo --config-path=<its folder>
  --config-name=config`` (``torchrun ... -m verl.trainer.sft_trainer`` for SFT) with the environment of
  ``fsdpcfg.env``; extra ``key=value`` arguments are passed on to verl.
* ``files/``: copies of the files the config points to inside the fsdpcfg package (the shipped datasets,
  reward functions), so the folder works where fsdpcfg is not installed. The script points the keys at the
  copies with ``key=$HERE/files/NAME`` overrides, so the folder can be moved. verl 0.9.1's datasets read
  ``.jsonl`` as well as ``.parquet``, so data files are copied as they are, not converted.
"""

from __future__ import annotations

import shlex
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fsdpcfg import paths, verlref
from fsdpcfg.launch.verl import CONFIG_FILE, VerlInvocation, build_verl_invocation
from fsdpcfg.redact import shell_value, write_private

SCRIPT_FILE = "run_verl.sh"
FILES_DIR = "files"


@dataclass
class ExportResult:
    """What :func:`export_verl` wrote.

    Attributes:
        out_dir: the folder.
        script: path of ``run_verl.sh``.
        config: path of ``config.yaml``.
        copied: dotted key -> path of the copy under ``files/`` (a list for list-valued keys).
        overrides: the ``key=value`` arguments the script adds, with ``$HERE`` replaced by ``out_dir``.
        invocation: the invocation the files were made from.
    """

    out_dir: Path
    script: Path
    config: Path
    copied: dict[str, Any] = field(default_factory=dict)
    overrides: list[str] = field(default_factory=list)
    invocation: VerlInvocation | None = None


def _package_file(v: Any) -> Path | None:
    if not isinstance(v, str) or not v:
        return None
    p = Path(v)
    try:
        inside = p.is_absolute() and p.resolve().is_relative_to(paths.PACKAGE_DIR) and p.is_file()
    except OSError:
        return None
    return p if inside else None


def _copy_package_files(tree: dict[str, Any], files_dir: Path) -> dict[str, Any]:
    """Copy every file the tree points to inside the fsdpcfg package into ``files_dir``; return
    ``{key: new name or list of names}``."""
    out: dict[str, Any] = {}
    used: set[str] = set()
    for key, v in verlref.flatten(tree).items():
        values = v if isinstance(v, list) else [v]
        srcs = [_package_file(x) for x in values]
        if not any(srcs):
            continue
        names = []
        for x, src in zip(values, srcs, strict=True):
            if src is None:
                names.append(x)
                continue
            name = f"{src.parent.name}_{src.name}"
            i = 1
            while name in used:
                i += 1
                name = f"{src.parent.name}_{i}_{src.name}"
            used.add(name)
            files_dir.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, files_dir / name)
            names.append(name)
        out[key] = names if isinstance(v, list) else names[0]
    return out


def _override(key: str, names: Any, copied_names: set[str]) -> str:
    def one(n: str) -> str:
        # Hydra-quoted inside shell double quotes: a folder name with spaces or '=' stays one value
        return f"\"'$HERE/{FILES_DIR}/{n}'\"" if n in copied_names else shlex.quote(n)

    if isinstance(names, list):
        return f"{key}=[" + ",".join(one(n) for n in names) + "]"
    return f"{key}={one(names)}"


def _script(inv: VerlInvocation, overrides: list[str], header: list[str]) -> str:
    lines = ["#!/usr/bin/env bash"] + [f"# {h}" if h else "#" for h in header]
    lines += ["set -euo pipefail", 'HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"']
    lines += [f"export {k}={shell_value(k, v)}" for k, v in inv.env.items()]  # a secret: "${VAR}", read at run time
    cfg = ['--config-path="$HERE"', f"--config-name={Path(CONFIG_FILE).stem}"]
    if inv.kind == "ppo":
        cmd = [f"python3 -m {inv.entry_point}", *cfg]
    else:
        t = inv.tree.get("trainer", {})
        d = verlref.defaults(inv.verl_config)
        nnodes = int(t.get("nnodes", d["trainer.nnodes"]))
        cmd = [
            f"torchrun --nnodes={nnodes} --nproc_per_node={int(t.get('n_gpus_per_node', d['trainer.n_gpus_per_node']))}"
        ]
        if nnodes > 1:
            cmd += [
                "--rdzv_backend=c10d",
                '--rdzv_endpoint="${MASTER_ADDR:?set MASTER_ADDR to the first node}:${MASTER_PORT:-29500}"',
            ]
        cmd += [f"-m {inv.entry_point}", *cfg]
    body = cmd + overrides + ['"$@"']
    lines.append("exec " + " \\\n  ".join(body))
    return "\n".join(lines) + "\n"


def _in(out: Path, name: str, copied_names: set[str]) -> str:
    return str(out / FILES_DIR / name) if name in copied_names else name


def export_verl(composed: Any, out_dir: str | Path, *, force: bool = False) -> ExportResult:
    """Write ``config.yaml``, ``run_verl.sh`` and ``files/`` for ``composed`` into ``out_dir``.

    The config should have passed fsdpcfg's checks (:func:`fsdpcfg.launch.verl.require_valid`); this
    function only converts. ``force`` allows overwriting a ``run_verl.sh``, ``config.yaml`` or ``files/``
    already in ``out_dir``; without it nothing there is touched.

    Raises:
        ConfigError: the config cannot be handed to verl (see :func:`build_verl_invocation`), ``out_dir`` is
            a file, or it already holds one of the files the export writes and ``force`` is false.
    """
    from fsdpcfg.errors import ConfigError

    out = Path(out_dir).absolute()
    if out.exists() and not out.is_dir():
        raise ConfigError(f"-o {out} is a file, not a folder", fix="give a folder to write the export into")
    taken = [p.name for p in (out / SCRIPT_FILE, out / CONFIG_FILE, out / FILES_DIR) if p.exists()]
    if taken and not force:
        raise ConfigError(
            f"{out} already holds {', '.join(taken)}; the export would overwrite it",
            key=None,
            fix="choose another -o folder, or pass --force to overwrite it",
        )
    inv = build_verl_invocation(composed, out)
    copied = _copy_package_files(inv.tree, out / FILES_DIR)
    copied_names = {n for v in copied.values() for n in (v if isinstance(v, list) else [v])}
    script_overrides = [_override(k, v, copied_names) for k, v in copied.items()]
    choices = getattr(composed, "choices", {}) or {}
    header = [
        f"Runs verl {verlref.VERL_VERSION} ({inv.entry_point}) on the config in {CONFIG_FILE} next to this "
        "script; written by `fsdpcfg export --launcher verl`.",
        "Composed from: " + " ".join(f"{k}={v}" for k, v in choices.items()),
        "Needs: verl[verl-core]==0.9.1"
        + (" plus the rollout engine (verl's vllm or sglang extra)" if inv.kind == "ppo" else "")
        + ", CUDA GPUs "
        f"(trainer.nnodes={inv.tree.get('trainer', {}).get('nnodes', 1)}, "
        f"trainer.n_gpus_per_node={inv.tree.get('trainer', {}).get('n_gpus_per_node', '?')}).",
        "",
        f"  bash {SCRIPT_FILE}                                  # start (a local Ray cluster)"
        if inv.kind == "ppo"
        else f"  bash {SCRIPT_FILE}                                  # start (run it on every node)",
        f"  bash {SCRIPT_FILE} +ray_kwargs.ray_init.address=auto   # attach to a running Ray cluster"
        if inv.kind == "ppo"
        else "  multi-node: set MASTER_ADDR/MASTER_PORT on every node first",
        f"  bash {SCRIPT_FILE} trainer.total_epochs=2             # any verl override, appended last",
    ]
    if copied:
        header += [
            "",
            f"Files the config names inside fsdpcfg's package are copied to {FILES_DIR}/ and passed "
            "as overrides below.",
        ]
    header += [
        f"Note: {n}"
        for n in inv.notes
        if "path on this machine" not in n or not any(n.startswith(k + " ") for k in copied)
    ]
    out.mkdir(parents=True, exist_ok=True)
    config = inv.write()
    script = write_private(out / SCRIPT_FILE, _script(inv, script_overrides, header), mode=0o755)
    here = str(out)
    return ExportResult(
        out_dir=out,
        script=script,
        config=config,
        copied={
            k: ([_in(out, n, copied_names) for n in v] if isinstance(v, list) else _in(out, v, copied_names))
            for k, v in copied.items()
        },
        overrides=[o.replace("$HERE", here).replace('"', "") for o in script_overrides],
        invocation=inv,
    )
