"""What a YAML file is to fsdpcfg: a recipe, a full config, a verl config file, or not a config at all.

One classification serves every command that takes a YAML path (``fsdpcfg check FILE``, ``fsdpcfg show FILE``,
``python -m fsdpcfg +recipe=FILE``):

``recipe``     an overlay on fsdpcfg's tree: a Hydra ``defaults`` list of fsdpcfg groups or recipes, a
               ``# @package`` header, or some of the sections (``fsdpcfg cp`` writes these).
``full``       a complete, resolved config: a run folder's ``config.yaml`` (``runs/<project>/<experiment>/``),
               ``fsdpcfg show --yaml`` or a dump of verl's composed config. PPO: ``actor_rollout_ref``, ``data``,
               ``trainer`` and ``algorithm``; SFT: ``model``, ``engine``, ``optim``, ``data`` and ``trainer``.
``verl``       a verl config file: its defaults list names verl's own config (``- ppo_trainer`` /
               ``- sft_trainer_engine``, as ``fsdpcfg export`` and verl's ``--config-path/--config-name``
               users write it); verl composes that config first and the file's keys on top.
``unrelated``  YAML with none of verl's or fsdpcfg's top-level sections (a GitHub workflow, a docker-compose
               file, a Kubernetes manifest, several YAML documents, a list), or whose only known sections are
               generic names (:data:`GENERIC_SECTIONS`: a ConfigMap's ``data:``; a Hydra ``defaults`` list that
               names none of fsdpcfg's or verl's configs) beside keys verl does not have, or a Hydra object node
               (a top-level ``_target_``): not a config, skipped by ``check``.

The known sections are the top-level keys of verl 0.9.1's ``ppo_trainer`` and ``sft_trainer_engine`` configs
(:mod:`fsdpcfg.verlref`) plus ``fsdpcfg``, ``defaults`` and ``hydra``. Reads YAML only; imports nothing heavy.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from fsdpcfg import verlref, yamlio

#: verl config names a verl config file's defaults list may start from -> fsdpcfg's tree of that layout.
VERL_BASES = {"ppo_trainer": "ppo", "sft_trainer_engine": "sft"}
#: sections every full (dumped) config of each layout has.
FULL_SECTIONS = {
    "ppo": frozenset({"actor_rollout_ref", "data", "trainer", "algorithm"}),
    "sft": frozenset({"model", "engine", "optim", "data", "trainer"}),
}
#: verl section names that other tools' YAML uses too (a Kubernetes ConfigMap's ``data:``, an ML tool's
#: ``model:``): a file whose only known sections are these, beside keys verl does not have, is not a config.
GENERIC_SECTIONS = frozenset(
    {"data", "model", "trainer", "algorithm", "optim", "engine", "checkpoint", "profiler", "reward", "skip"}
)
#: top-level keys that are fsdpcfg's or Hydra's rather than verl's.
OWN_SECTIONS = frozenset({"fsdpcfg", "defaults", "hydra"})
_TOP_KEY = re.compile(r"^([A-Za-z_][A-Za-z0-9_.-]*)\s*:")


@cache
def known_sections() -> frozenset[str]:
    """Top-level keys a fsdpcfg or verl config may have: verl's sections of both layouts and ours."""
    out = set(OWN_SECTIONS)
    for name in verlref.ENTRY_POINTS:
        out.update(k.split(".", 1)[0] for k in verlref.keys(name))
    return frozenset(out)


@dataclass(frozen=True)
class ConfigFile:
    """The classification of one YAML file.

    Attributes:
        kind: ``recipe``, ``full``, ``verl`` or ``unrelated`` (see the module docstring).
        tree: ``ppo`` (verl's ppo_trainer layout) or ``sft`` (sft_trainer_engine layout).
        base: for ``verl``, the verl config its defaults list names (``ppo_trainer``), else ``None``.
        why: for ``unrelated``, what the file holds instead (shown in the FC130 info).
    """

    kind: str
    tree: str = "ppo"
    base: str | None = None
    why: str = ""


def classify(data: Any, text: str = "") -> ConfigFile:
    """Classify parsed YAML ``data`` (``text`` is the file's text, for the ``# @package`` header).

    ``None`` (an empty file) is a ``recipe`` (the recipe path reports it empty); a list or a scalar is
    ``unrelated``; a mapping is ``unrelated`` when none of its top-level keys is a known section.
    """
    if data is None:
        return ConfigFile("recipe")
    if not isinstance(data, dict):
        return ConfigFile("unrelated", why=f"its top level is a {type(data).__name__}, not a mapping of sections")
    top = {_key_text(k) for k in data}
    known = top & known_sections()
    if "_target_" in top:
        return ConfigFile(
            "unrelated",
            why="it is a Hydra object node (a top-level _target_), a piece of another config tree, not a run config",
        )
    evidence = known - GENERIC_SECTIONS - {"defaults", "hydra"} or _names_ours(data.get("defaults"))
    if not known or (not evidence and top - known):
        shown = ", ".join(sorted(top)[:5]) + (", ..." if len(top) > 5 else "")
        why = (
            f"none of its top-level keys ({shown or 'none'}) is a verl or fsdpcfg section"
            if not known
            else (
                f"its top-level keys {', '.join(sorted(top - known)[:5])} are not verl's or fsdpcfg's, and "
                f"{', '.join(sorted(known))} alone is a name other tools use too"
            )
        )
        return ConfigFile("unrelated", why=why)
    tree = _tree(data)
    base = verl_base(data.get("defaults"))
    if base is not None:
        return ConfigFile("verl", "sft" if base in verlref.SFT_COMPOSITIONS else "ppo", base)
    if "defaults" not in data and not has_package_header(text) and FULL_SECTIONS[tree] <= top:
        return ConfigFile("full", tree)
    return ConfigFile("recipe", tree)


def _names_ours(defaults: Any) -> bool:
    """True when a Hydra defaults list names fsdpcfg's or verl's configs: a verl base config, a shipped recipe
    (``- qwen_grpo``, ``- /recipe/qwen_grpo@_global_``) or an option of one of fsdpcfg's groups
    (``- override /engine: fsdp2``). Any Hydra project has a defaults list; these make it ours."""
    from fsdpcfg.compose.conf_tree import available_options, groups

    if verl_base(defaults) is not None:
        return True
    recipes = set(available_options("recipe"))
    for entry in defaults if isinstance(defaults, list) else []:
        if isinstance(entry, str):
            name = entry.split("@")[0].strip().lstrip("/")
            if name.startswith("recipe/") or name in recipes:
                return True
        elif isinstance(entry, dict):
            for k, v in entry.items():
                group = str(k).replace("override ", "").strip().lstrip("/").split("@")[0]
                if group == "recipe" or any(
                    group in groups(kind) and str(v) in available_options(group, kind) for kind in FULL_SECTIONS
                ):
                    return True
    return False


def _shape_mismatch(base: Any, body: Any, prefix: str = "") -> str | None:
    """The first dotted key where ``body`` gives a list where ``base`` has a mapping or the other way round."""
    if not isinstance(base, dict) or not isinstance(body, dict):
        return None
    for k, v in body.items():
        key = f"{prefix}{k}"
        b = base.get(k) if isinstance(k, str) else None
        if isinstance(b, dict) and isinstance(v, list) or isinstance(b, list) and isinstance(v, dict):
            return key
        found = _shape_mismatch(b, v, key + ".")
        if found:
            return found
    return None


def _key_text(key: Any) -> str:
    """A top-level key as written: YAML 1.1 reads a GitHub workflow's ``on:`` as ``True``."""
    return ("on" if key else "off") if isinstance(key, bool) else str(key)


def has_package_header(text: str) -> bool:
    """True when the file's header sets Hydra's package (``# @package _global_`` in its first lines; a leading
    byte-order mark aside)."""
    return any(line.strip().startswith("# @package") for line in text.removeprefix(yamlio.BOM).splitlines()[:5])


def verl_base(defaults: Any) -> str | None:
    """The verl composition (:data:`fsdpcfg.verlref.COMPOSITIONS`) a defaults list starts from, or ``None``:
    its verl config (``ppo_trainer``, ``sft_trainer_engine``), refined by the group overrides that select
    another engine's composition (``{override engine: megatron}`` and ``{override optim: megatron}`` after
    ``sft_trainer_engine``: ``sft_megatron_trainer``, as ``fsdpcfg export`` writes it)."""
    base, chosen = None, set()
    for entry in defaults if isinstance(defaults, list) else []:
        if isinstance(entry, str) and entry.strip().lstrip("/") in VERL_BASES:
            base = base or entry.strip().lstrip("/")
        elif isinstance(entry, dict):
            for k, v in entry.items():
                if str(k).startswith("override "):
                    chosen.add(f"{str(k)[len('override ') :].strip().lstrip('/')}={v}")
    if base is None:
        return None
    for name, (config_name, overrides) in verlref.COMPOSITIONS.items():
        if config_name == base and overrides and set(overrides) <= chosen:
            return name
    return base


def _tree(data: dict) -> str:
    kind = (data.get("fsdpcfg") or {}).get("kind") if isinstance(data.get("fsdpcfg"), dict) else None
    if kind in FULL_SECTIONS:
        return kind
    if "actor_rollout_ref" not in data and {"model", "engine", "optim"} & set(data):
        return "sft"
    return "ppo"


def top_level_keys(text: str) -> list[str]:
    """The top-level keys of YAML ``text`` read line by line (for a file that does not parse: a Helm template,
    a half-written file), so that an unrelated file is still recognised as one."""
    return [m.group(1) for line in text.splitlines() if (m := _TOP_KEY.match(line))]


def read(path: Path) -> tuple[Any, ConfigFile]:
    """Read and classify the YAML file at ``path``.

    Several YAML documents in one file (``---``) are ``unrelated`` (Hydra reads one document).

    The work is bounded first (:func:`fsdpcfg.yamlio.scan`: size, depth, aliases, key count).

    Raises:
        yaml.YAMLError: the text is not YAML and its top-level keys name a known section (a broken config).
        ConfigError: a limit of :data:`fsdpcfg.yamlio.LIMITS` is passed, or the file is not UTF-8 or unreadable.
    """
    from fsdpcfg import yamlio
    from fsdpcfg.errors import ConfigError

    text = yamlio.read_text(path)
    scan_error = None
    try:
        yamlio.scan(text, str(path))
    except ConfigError as e:
        if "not valid YAML" not in e.message:
            raise  # a limit passed: refused before anything is built
        scan_error = e  # reported below unless the file is an unrelated template
    try:
        docs = list(yaml.load_all(text, Loader=yamlio.config_loader()))  # OmegaConf's YAML rules: `1e-6` is a float
    except yaml.YAMLError:
        keys = top_level_keys(text)
        if keys and not set(keys) & known_sections():
            return None, ConfigFile(
                "unrelated",
                why=f"it is not plain YAML (a template?) and none of its "
                f"top-level keys ({', '.join(sorted(set(keys))[:5])}) is a "
                "verl or fsdpcfg section",
            )
        if scan_error is not None:
            raise scan_error from None  # the scan's message: the same libyaml error, with its line
        raise
    if len(docs) > 1:
        return None, ConfigFile("unrelated", why=f"it holds {len(docs)} YAML documents (a config is one mapping)")
    data = docs[0] if docs else None
    return data, classify(data, text)


def load(path: Path) -> Any:
    """Read a ``full`` or ``verl`` config file as a :class:`fsdpcfg.compose.Composed` (``origin="file"``), with
    provenance from its lines.

    A ``full`` file is read as it is. A ``verl`` file is what verl composes: verl 0.9.1's defaults of its base
    config (:func:`fsdpcfg.verlref.defaults`, interpolations kept) with the file's keys merged on top. A file
    without an ``fsdpcfg`` section is verl's, so it is checked for ``fsdpcfg.launcher=verl`` (recorded in the
    provenance); ``Composed.kind`` is the file's layout.

    Raises:
        UsageError: the file is missing, is a recipe or is not a fsdpcfg/verl config (``unrelated``).
        ConfigError: not valid YAML, or its keys cannot be merged onto verl's tree (names the key).
    """
    from omegaconf import DictConfig, OmegaConf

    from fsdpcfg.compose.composed import load_yaml_config
    from fsdpcfg.compose.provenance import Source, yaml_leaf_lines
    from fsdpcfg.errors import ConfigError, UsageError

    path = Path(path)
    if not path.is_file():
        raise UsageError(f"no such file: {path}")
    try:
        data, info = read(path)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise ConfigError(
            f"{where}: not valid YAML: {str(e).strip().splitlines()[0]}", fix="fix the YAML syntax"
        ) from None
    if info.kind == "unrelated":
        raise UsageError(
            f"{path} is not a fsdpcfg or verl config: {info.why}",
            fix="give a recipe file, a run folder's config.yaml, or a config written by verl",
        )
    if info.kind == "recipe":
        raise UsageError(f"{path} is a recipe, not a full config file", fix=f"compose it: +recipe={path}")
    composed = load_yaml_config(path)
    composed.kind = info.tree
    if info.kind == "verl":
        assert info.base is not None  # a verl config file names the verl config it starts from
        body = {k: v for k, v in data.items() if k not in ("defaults", "hydra")}
        base = OmegaConf.create(verlref.tree(info.base))
        try:
            merged = OmegaConf.merge(base, OmegaConf.create(body))
        except Exception as e:  # omegaconf's merge errors (a mapping given a list, ...)
            key = getattr(e, "full_key", None) or _shape_mismatch(verlref.tree(info.base), body)
            theirs = verlref.defaults(info.base, resolved=False)
            shape = (
                "a mapping"
                if key and any(k.startswith(key + ".") for k in theirs)
                else "a list"
                if key and isinstance(theirs.get(key), list)
                else "a value"
            )
            raise ConfigError(
                f"{path}: cannot be merged onto verl's {info.base} config: {str(e).strip().splitlines()[0]}",
                key=key,
                fix=f"write {key} as {shape}, as verl's {info.base} does"
                if key
                else "give each key a value of the shape verl's default has",
            ) from None
        assert isinstance(merged, DictConfig)  # a mapping merged onto verl's mapping
        composed.cfg = merged
        OmegaConf.set_struct(composed.cfg, False)
        verl_default = Source("default", f"verl {verlref.verl_version()} {info.base} default")
        written = set(yaml_leaf_lines(path))
        for key in verlref.keys(info.base) - written:
            composed.provenance.record(key, verl_default)
        composed.cfg.pop("defaults", None)
        composed.cfg.pop("hydra", None)
        # verl's entry point (a hydra.main app) builds what the file's hydra node names: kept for FC740
        hydra = data.get("hydra")
        composed.hydra_cfg = OmegaConf.create(hydra) if isinstance(hydra, dict) else None
    if "fsdpcfg" not in data:
        own = {"launcher": "verl", **({"kind": "sft"} if info.tree == "sft" else {})}
        composed.cfg["fsdpcfg"] = own
        composed.provenance.record(
            "fsdpcfg.launcher", Source("file", f"{path} (a verl config: no fsdpcfg section, so launcher=verl)")
        )
    return composed


#: the folder keys a run's ``config.yaml`` holds resolved and absolute (the ranks read them so), whose values as the
#: user gave them it records in comments: a run started from that file (``+recipe=RUN_DIR/config.yaml``) takes
#: them as given, so ``trainer.experiment_name=rerun`` is a new run in new folders, not the old run resumed.
GIVEN_KEYS = ("fsdpcfg.run_dir", "trainer.default_local_dir")
_GIVEN_PREFIX = "# fsdpcfg given: "


def given_header(raw: dict[str, Any]) -> str:
    """The comment lines a run's ``config.yaml`` starts with: each of :data:`GIVEN_KEYS` as the composed config
    ``raw`` (plain containers, interpolations kept) holds it, as JSON (``# fsdpcfg given: KEY = "VALUE"``); ""
    when ``raw`` has none of them."""
    import json

    from fsdpcfg import keypath

    lines = []
    for key in GIVEN_KEYS:
        value = keypath.get(raw, key, None)
        if isinstance(value, str) and value:
            lines.append(f"{_GIVEN_PREFIX}{key} = {json.dumps(value)}\n")
    return "".join(lines)


def given_values(text: str) -> dict[str, str]:
    """The values :func:`given_header` recorded at the top of a run's ``config.yaml`` (its leading comment lines),
    ``{key: value as given}``; ``{}`` for any other file. A line that does not read back is left out."""
    import json

    out: dict[str, str] = {}
    for line in text.removeprefix(yamlio.BOM).splitlines():
        if not line.startswith("#"):
            break
        key, sep, value = line.removeprefix(_GIVEN_PREFIX).partition(" = ")
        if line.startswith(_GIVEN_PREFIX) and sep and key in GIVEN_KEYS:
            try:
                parsed = json.loads(value)
            except ValueError:
                continue
            if isinstance(parsed, str):
                out[key] = parsed
    return out
