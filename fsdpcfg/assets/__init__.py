"""Offline model assets: tiny checkpoints of real architectures, built deterministically on this machine.

Public API::

    ensure(name) -> Path          # the folder, built first when missing, stale or incomplete
    build(name, force=False) -> Path
    asset_path(name) -> Path      # where it lives ($FSDPCFG_HOME/models/<name>), built or not
    is_complete(name) -> bool
    random_init(path) -> name | None  # a random-weights asset's folder (no reward to earn)
    default_names() -> list[str]  # what `fsdpcfg assets build` builds without --all
    SPECS, get_spec               # the table (fsdpcfg.assets.specs)

Building imports torch and transformers; everything else here is cheap.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from pathlib import Path

from fsdpcfg.assets import _store
from fsdpcfg.assets.specs import SPECS, ModelSpec, get_spec

__all__ = [
    "SPECS",
    "ModelSpec",
    "get_spec",
    "asset_path",
    "is_complete",
    "random_init",
    "build",
    "ensure",
    "default_names",
    "fingerprint",
]

#: Bump when the build procedure changes in a way that changes the bytes of a built folder.
BUILDER_VERSION = 1


def default_names() -> list[str]:
    """Return the names built by ``fsdpcfg assets build`` without ``--all``, in table order."""
    return [n for n, s in SPECS.items() if s.default]


def asset_path(name: str) -> Path:
    """Return ``$FSDPCFG_HOME/models/<name>`` (it may not exist). Raises ConfigError for an unknown name."""
    get_spec(name)
    return _store.models_dir() / name


def fingerprint(name: str) -> str:
    """Return a hash of everything a build of ``name`` depends on: the spec, the real config bytes, the
    tokenizer files, the builder version and the installed transformers version (read from its metadata)."""
    from importlib.metadata import version

    from fsdpcfg.assets import tiny_models

    spec = get_spec(name)
    h = hashlib.sha256()
    h.update(json.dumps([_spec_repr(spec), BUILDER_VERSION, version("transformers"), version("torch")]).encode())
    if spec.defaults:  # the config is the installed transformers' defaults (its version is hashed above)
        files = [tiny_models.source_dir(spec) / f for f in spec.model_tokenizer_files] if spec.source else []
    else:
        files = [tiny_models.source_dir(spec) / "config.json"]
    if spec.tokenizer:
        files += sorted(tiny_models.tokenizer_dir(spec.tokenizer).iterdir())
    for f in files:
        h.update(f.name.encode())
        h.update(f.read_bytes())
    if spec.base:
        h.update(fingerprint(spec.base).encode())
    if spec.warmstart:
        from fsdpcfg.assets import warmstart

        h.update(repr(warmstart.settings(spec.warmstart)).encode())
    return h.hexdigest()[:16]


#: ModelSpec fields added after the first assets were built: left out of the fingerprint at their default value,
#: so that the folders built before they existed stay current.
_LATER_FIELDS = ("defaults", "defaults_args", "edits", "covers", "init_on_accelerator")


def _spec_repr(spec: ModelSpec) -> str:
    """``repr(spec)`` as the dataclass writes it, without the :data:`_LATER_FIELDS` still at their defaults."""
    import dataclasses

    parts = []
    for f in dataclasses.fields(spec):
        value = getattr(spec, f.name)
        if f.name in _LATER_FIELDS:
            default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
            if value == default:
                continue
        parts.append(f"{f.name}={value!r}")
    return f"{type(spec).__name__}({', '.join(parts)})"


def random_init(path: str | Path) -> str | None:
    """The asset name when ``path`` is the folder of an asset with random weights and no warm start (its answers
    are noise: a GRPO run on it earns no reward), else ``None``. Reads no file."""
    p = Path(path).expanduser()
    try:
        if p.resolve().parent != _store.models_dir().resolve() or p.name not in SPECS:
            return None
    except OSError:
        return None
    spec = SPECS[p.name]
    return p.name if spec.weights and spec.warmstart is None else None


def is_complete(name: str) -> bool:
    """Return True when the asset's folder exists with a manifest of the current fingerprint."""
    manifest = _store.read_manifest(asset_path(name))
    return manifest is not None and manifest.get("fingerprint") == fingerprint(name)


def build(name: str, *, force: bool = False, verbose: bool = True) -> Path:
    """Build asset ``name`` into ``$FSDPCFG_HOME/models/<name>`` and return the folder.

    Skips the work when the folder is already complete (unless ``force``). The folder appears atomically:
    it is written under a temporary name and renamed, the manifest (file hashes, fingerprint, seconds taken)
    last. ``verbose`` prints one line to stderr when building.

    Raises:
        fsdpcfg.errors.ConfigError: unknown name.
    """
    spec = get_spec(name)
    final = asset_path(name)
    with _store.locked(name):
        if not force and is_complete(name):
            return final
        if verbose:
            print(f"fsdpcfg: building offline asset {name} in {final} ...", file=sys.stderr, flush=True)
        start = time.perf_counter()
        with _store.atomic_folder(final) as tmp:
            _build_into(spec, tmp)
            manifest = {
                "name": name,
                "fingerprint": fingerprint(name),
                "seconds": round(time.perf_counter() - start, 2),
                "files": _store.file_hashes(tmp),
            }
            (tmp / _store.MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
        if verbose:
            print(f"fsdpcfg: built {name} in {manifest['seconds']:.1f} s", file=sys.stderr, flush=True)
    return final


def ensure(name: str, *, verbose: bool = True) -> Path:
    """Return the folder of asset ``name``, building it first when it is missing, incomplete or stale."""
    if is_complete(name):
        return asset_path(name)
    return build(name, verbose=verbose)


def _build_into(spec: ModelSpec, tmp: Path) -> None:
    from fsdpcfg.assets import tiny_models

    tiny_models.build_folder(spec, tmp)
    if spec.warmstart:
        from fsdpcfg.assets import warmstart

        warmstart.run(spec.warmstart, tmp, seed=spec.seed)
