"""Compose a run config with Hydra's compose API and translate Hydra's errors into :class:`ConfigError`."""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from omegaconf import DictConfig, OmegaConf, open_dict

from fsdpcfg import paths
from fsdpcfg.compose import resolvers
from fsdpcfg.compose.provenance import Provenance
from fsdpcfg.errors import ConfigError, UsageError, did_you_mean

def _safe_load(text: str):
    """``yaml.safe_load`` with libyaml's parser when PyYAML has it (the same result, several times faster)."""
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def groups(kind: str = "ppo") -> tuple[str, ...]:
    """Return the config groups of the ``kind`` tree, in the order its root ``config.yaml`` lists them."""
    data = _safe_load((paths.conf_dir(kind) / "config.yaml").read_text()) or {}
    out = []
    for entry in data.get("defaults", []):
        if isinstance(entry, dict):
            for k in entry:
                name = str(k).replace("override ", "").strip().lstrip("/").split("@")[0]
                if name != "_self_":
                    out.append(name)
    return tuple(out)


#: Config groups of the RL (ppo) tree, in the order the root config's defaults list names them.
GROUPS = groups("ppo")


def recipe_chain(name: str, extra_dirs: list[Path] | None = None) -> list[Path]:
    """Return the recipe files ``name`` is composed from, parents first: a recipe whose defaults list names
    another recipe (``- qwen_grpo`` or ``- /recipe/qwen_grpo@_global_``) extends it."""
    chain: list[Path] = []
    todo = [name]
    while todo:
        f = _recipe_file(todo.pop(), list(extra_dirs or []))
        if f is None or f in chain:
            continue
        chain.insert(0, f)
        try:
            data = _safe_load(f.read_text()) or {}
        except yaml.YAMLError:
            break
        for entry in (data.get("defaults") or []) if isinstance(data, dict) else []:
            if isinstance(entry, str) and entry != "_self_":
                ref = entry.split("@")[0].lstrip("/")
                ref = ref[len("recipe/"):] if ref.startswith("recipe/") else ref
                if "/" not in ref:
                    todo.append(ref)
    return chain


def recipe_kind(name: str, extra_dirs: list[Path] | None = None) -> str:
    """Return the kind (``ppo`` or ``sft``) a recipe extends: the ``fsdpcfg.kind`` of it or of the recipe
    it extends, default ``ppo``."""
    for f in reversed(recipe_chain(name, extra_dirs)):
        try:
            data = _safe_load(f.read_text()) or {}
        except yaml.YAMLError:
            return "ppo"
        kind = (data.get("fsdpcfg") or {}).get("kind") if isinstance(data, dict) else None
        if kind is not None:
            return kind if kind in paths.KINDS else "ppo"
    return "ppo"


@dataclass
class Composed:
    """A composed config and what is known about how it was made.

    Attributes:
        cfg: the composed config (verl key names plus the ``fsdpcfg`` section), interpolations unresolved.
        choices: group -> chosen option (``recipe`` included when one was selected).
        overrides: the command-line overrides as given.
        added: dotted keys that overrides created with ``+``/``++`` (they exist in no config file).
        deleted: dotted keys removed with ``~``.
        provenance: where each value came from.
        origin: ``"compose"`` (Hydra tree) or ``"file"`` (a full config file read as it is).
        kind: ``"ppo"`` (verl's ppo_trainer layout) or ``"sft"`` (sft_trainer_engine layout).
        hydra_cfg: Hydra's own ``hydra`` node of the composition (``--cfg hydra``), unresolved; ``None`` for a
            config read from a file.
        plus_needed: key -> the override that lacked ``+`` (set by ``compose_for_check``, reported by FC108).
        script_notes: for a config read from a run script, the findings of reading it (FC107, FC120-FC125);
            ``None`` when the config did not come from a script.
    """

    cfg: DictConfig
    choices: dict[str, str] = field(default_factory=dict)
    kind: str = "ppo"
    overrides: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    provenance: Provenance = field(default_factory=Provenance)
    origin: str = "compose"
    hydra_cfg: DictConfig | None = None
    plus_needed: dict[str, str] = field(default_factory=dict)
    script_notes: list[Any] | None = None

    def __post_init__(self) -> None:
        # every composed config names its secrets before anything prints or writes it (fsdpcfg.runinfo.redact)
        from fsdpcfg.runinfo.redact import register_config

        try:
            register_config(self.to_container(resolve=False))
        except Exception:  # a tree OmegaConf cannot convert is reported by whoever reads it next
            pass

    def to_container(self, resolve: bool = True) -> dict[str, Any]:
        """Return the config as plain dicts and lists (interpolations resolved unless ``resolve=False``).

        Raises:
            ConfigError: an interpolation cannot be resolved (names the key and the reference).
        """
        try:
            return OmegaConf.to_container(self.cfg, resolve=resolve)  # type: ignore[return-value]
        except Exception as e:  # omegaconf.errors.InterpolationResolutionError and friends
            key = getattr(e, "full_key", None)
            raise ConfigError(f"cannot resolve an interpolation: {_first_line(e)}", key=key,
                              fix="set the referenced key, or replace the ${...} value with a literal") from None


def _parse_overrides(overrides: list[str]):
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import OverrideParseException

    try:
        return OverridesParser.create().parse_overrides(overrides=overrides)
    except OverrideParseException as e:
        raise UsageError(f"cannot parse the override: {_first_line(e)}",
                         fix="write overrides as key=value, +new.key=value, ~key or group=option") from None


def compose(overrides: list[str] | None = None, *, extra_recipe_dirs: list[Path] | None = None) -> Composed:
    """Compose the root config with ``overrides`` (Hydra syntax: ``key=value``, ``+key=value``, ``~key``,
    ``group=option``, ``+recipe=NAME``).

    ``extra_recipe_dirs`` adds folders whose ``*.yaml`` files can be selected as ``+recipe=NAME`` (used to
    check users' own recipe files). ``+recipe=PATH.yaml`` selects a recipe file anywhere (its folder is added).

    Raises:
        ConfigError: an unknown key (with a did-you-mean), an unknown group option (with the options), a
            bad override, a recipe that does not exist.
    """
    overrides = list(overrides or [])
    extra_recipe_dirs = list(extra_recipe_dirs or [])
    for i, o in enumerate(overrides):
        if o.startswith("+recipe=") and o.endswith((".yaml", ".yml")):
            f = Path(o.split("=", 1)[1]).expanduser()
            validate_recipe_file(f)
            overrides[i] = f"+recipe={f.stem}"
            extra_recipe_dirs.append(f.resolve().parent)
    resolvers.register()
    parsed = _parse_overrides(overrides)
    for o in parsed:
        if o.is_sweep_override():
            raise UsageError(f"`{o.input_line}` is a sweep; a single config cannot hold it",
                             fix="run sweeps with `python -m fsdpcfg -m ...`, or give one value")
    extra_dirs = [Path(d) for d in (extra_recipe_dirs or [])]
    headerless: dict[str, Path] = {}  # a user's recipe (name -> file) without a `# @package` header
    for o in parsed:
        own = _recipe_file(o.value(), extra_dirs) if o.key_or_group == "recipe" and isinstance(o.value(), str) \
            else None
        if own is not None and own.resolve().parent != paths.recipes_dir().resolve() and _needs_global_package(own):
            headerless[o.value()] = own
    tmp = None
    search = []
    if extra_dirs:
        tmp = Path(tempfile.mkdtemp(prefix="fsdpcfg-recipes-"))
        (tmp / "recipe").mkdir()
        for d in extra_dirs:
            for f in d.glob("*.yaml"):
                dst = tmp / "recipe" / f.name
                if not dst.exists():
                    os.symlink(f.resolve(), dst)
        for name, f in headerless.items():  # a recipe's keys are top-level keys: Hydra's _global_ package
            (tmp / "recipe" / f"{name}.yaml").unlink(missing_ok=True)
            (tmp / "recipe" / f"{name}.yaml").write_text("# @package _global_\n" + f.read_text(encoding="utf-8"))
        search = [f"hydra.searchpath=[file://{tmp}]"]
    kind = "ppo"
    for o in parsed:
        if o.key_or_group == "recipe" and isinstance(o.value(), str):
            kind = recipe_kind(o.value(), extra_dirs)
    try:
        cfg = _hydra_compose(overrides + search, parsed, kind)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    choices = {k: v for k, v in (cfg.hydra.runtime.choices or {}).items() if not k.startswith("hydra/") and v}
    hydra_cfg = cfg.hydra
    with open_dict(cfg):
        del cfg["hydra"]
    OmegaConf.set_struct(cfg, False)

    prov = Provenance()
    conf = paths.conf_dir(kind)
    root = paths.conf_dir("ppo").parent
    prov.add_file(conf / "config.yaml", "default", None, root)
    kind_groups = groups(kind)
    for g in kind_groups:
        if g in choices:
            prov.add_file(conf / g / f"{choices[g]}.yaml", "group", f"{g}={choices[g]}", root)
    if "recipe" in choices:
        for rfile in recipe_chain(choices["recipe"], extra_dirs):
            prov.add_file(rfile, "recipe", f"recipe={rfile.stem}", root)
    added, deleted = [], []
    for o in parsed:
        key = o.key_or_group
        if key in kind_groups or key == "recipe" or key.startswith("hydra"):
            continue
        text = o.input_line
        if o.is_delete():
            deleted.append(key)
            continue
        if o.is_add() or (o.is_force_add() and prov.source_of(key) is None):
            added.append(key)
        prov.add_override(key, text)
    return Composed(cfg=cfg, choices=choices, kind=kind, overrides=overrides, added=added, deleted=deleted,
                    provenance=prov, origin="compose", hydra_cfg=hydra_cfg)


def _needs_global_package(f: Path) -> bool:
    """True when the recipe file ``f`` (``+recipe=f``) has no ``# @package`` header: its keys are then composed
    at the top level (Hydra's ``_global_`` package, from a copy with the header) instead of under ``recipe.``.
    This is what a run folder's ``config.yaml`` (a full config) and a hand-written overlay need.

    Raises:
        UsageError: ``f`` is a verl config file (verl composes it, not fsdpcfg) or not a config at all.
    """
    from fsdpcfg.compose import config_file

    try:
        _, info = config_file.read(f)
    except yaml.YAMLError:
        return False  # validate_recipe_file has reported it already; Hydra would too
    if info.kind == "verl":
        from fsdpcfg import verlref

        assert info.base is not None  # a verl config file names the verl config it starts from
        entry = verlref.ENTRY_POINTS.get(info.base, "verl.trainer.main_ppo")
        runner = "torchrun --nproc_per_node=GPUS" if info.tree == "sft" else "python"
        raise UsageError(f"{f} is a verl config file (its defaults list starts from verl's {info.base}); verl "
                         "composes it, fsdpcfg does not",
                         fix=f"check it with `fsdpcfg check {f}`; run it with `{runner} -m {entry} "
                             f"--config-path={f.resolve().parent} --config-name={f.stem}` (or the run_verl.sh "
                             "beside it)")
    if info.kind == "unrelated":
        raise UsageError(f"{f} is not a fsdpcfg or verl config: {info.why}",
                         fix="give a recipe file, a recipe name (`fsdpcfg ls`) or a run folder's config.yaml")
    return not config_file.has_package_header(f.read_text(encoding="utf-8"))


def validate_recipe_file(f: Path) -> None:
    """Check that a user's recipe file can be read as a recipe before Hydra sees it.

    Raises:
        UsageError: the path does not exist or is a folder.
        ConfigError: the file is not UTF-8 text, not valid YAML (with the line), empty, or not a mapping.
    """
    if not f.exists():
        raise UsageError(f"no such recipe file: {f}", fix="check the path, or give a recipe name (`fsdpcfg ls`)")
    if f.is_dir():
        raise UsageError(f"{f} is a folder, not a recipe file", fix="give a .yaml file in it")
    try:
        text = f.read_text(encoding="utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(f"{f}: not UTF-8 text (byte {e.start})", fix="give a YAML recipe file") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{f}:{mark.line + 1}" if mark is not None else str(f)
        raise ConfigError(f"{where}: not valid YAML: {getattr(e, 'problem', None) or _first_line(e)}",
                          fix="fix the YAML syntax (`fsdpcfg check FILE` shows every problem)") from None
    if data is None:
        raise ConfigError(f"{f} is empty", fix="write a recipe: `fsdpcfg cp qwen_grpo FILE` makes a child recipe")
    if not isinstance(data, dict):
        raise ConfigError(f"{f}: a recipe is a mapping of keys, not a {type(data).__name__}",
                          fix="`fsdpcfg cp qwen_grpo FILE` writes a minimal recipe to start from")


def _recipe_file(name: str, extra_dirs: list[Path]) -> Path | None:
    for d in [paths.recipes_dir(), *extra_dirs]:
        f = Path(d) / f"{name}.yaml"
        if f.is_file():
            return f
    return None


def available_options(group: str, kind: str = "ppo") -> list[str]:
    """Return the option names of a config group of the ``kind`` tree (``recipe`` included), sorted."""
    d = paths.recipes_dir() if group == "recipe" else paths.conf_dir(kind) / group
    return sorted(p.stem for p in Path(d).glob("*.yaml"))


def _hydra_compose(overrides: list[str], parsed, kind: str = "ppo") -> DictConfig:
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.errors import ConfigCompositionException, MissingConfigException

    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(paths.conf_dir(kind)), version_base="1.3"):
            return hydra_compose(config_name="config", overrides=overrides, return_hydra_config=True)
    except MissingConfigException as e:
        raise _missing_option(e, parsed, kind) from None
    except ConfigCompositionException as e:
        raise _composition_error(e, parsed, kind) from None
    except Exception as e:  # omegaconf errors raised while merging (type mismatches and the like)
        if type(e).__module__.startswith(("omegaconf", "hydra")):
            raise ConfigError(f"cannot compose the config: {_first_line(e)}",
                              key=getattr(e, "full_key", None),
                              fix="check the override's value type against the key's default") from None
        raise
    finally:
        GlobalHydra.instance().clear()


def _missing_option(e: Exception, parsed, kind: str = "ppo") -> ConfigError:
    msg = str(e)
    for o in parsed:
        g = o.key_or_group
        if g in groups(kind) or g == "recipe":
            opts = available_options(g, kind)
            val = o.value()
            if isinstance(val, str) and val not in opts:
                close = did_you_mean(val, opts)
                hint = f"did you mean {g}={close[0]}? " if close else ""
                return ConfigError(f"no option `{val}` in group `{g}`; available: {', '.join(opts)}",
                                   key=g, value=val, fix=f"{hint}choose one of: {', '.join(opts)} "
                                   f"(`fsdpcfg ls` lists them with descriptions)")
    return ConfigError(f"cannot compose the config: {_first_line(msg)}", fix="`fsdpcfg ls` lists the groups and options")


def _composition_error(e: Exception, parsed, kind: str = "ppo") -> ConfigError:
    msg = str(e)
    cause = e.__cause__ or e
    full_key = getattr(cause, "full_key", None)
    if "Could not override" in msg or "Could not delete" in msg or "Could not append" in msg:
        key = msg.split("'")[1] if "'" in msg else full_key
        known = _known_keys(kind)
        close = did_you_mean(key, known) if key else []
        if "Could not delete" in msg:
            return ConfigError("cannot delete a key that is not in the config", key=key,
                               fix=(f"did you mean ~{close[0]}?" if close else "check the key name"))
        if "Could not append" in msg:
            return ConfigError("the key already exists, so `+` cannot add it", key=key,
                               fix=f"set it without the plus: {key}=VALUE (or force with ++{key}=VALUE)")
        from fsdpcfg import verlref

        if key in verlref.keys("sft_trainer_engine" if kind == "sft" else "ppo_trainer"):
            return ConfigError("is a verl key that this config tree does not list", key=key,
                               fix=f"add it with +{key}=VALUE (launcher=verl passes it to verl)")
        hint = f"did you mean {close[0]}?" if close else "check the key name (`fsdpcfg show` prints the tree)"
        return ConfigError("is not a key of the config", key=key, fix=hint)
    if "in group" in msg.lower() or "Could not find" in msg:
        return _missing_option(e, parsed, kind)
    return ConfigError(f"cannot compose the config: {_first_line(msg)}", key=full_key,
                       fix="check the override against `fsdpcfg show`")


def _known_keys(kind: str = "ppo") -> list[str]:
    """Dotted keys of the root config, every group option and verl's own config of the same kind (for
    did-you-mean on overrides)."""
    from fsdpcfg import verlref
    from fsdpcfg.compose.provenance import yaml_leaf_lines

    conf = paths.conf_dir(kind)
    keys: set[str] = set(yaml_leaf_lines(conf / "config.yaml"))
    for g in groups(kind):
        for f in (conf / g).glob("*.yaml"):
            keys.update(yaml_leaf_lines(f))
    keys.update(verlref.keys("sft_trainer_engine" if kind == "sft" else "ppo_trainer"))
    return sorted(keys)


def load_yaml_config(path: Path) -> Composed:
    """Read a full config file (a dumped fsdpcfg or verl config) as it is, with provenance from its lines.

    Raises:
        ConfigError: the file is missing, is not YAML, or is not a mapping.
    """
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"no such file: {path}")
    try:
        data = _safe_load(path.read_text())
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: not valid YAML: {_first_line(e)}", fix="fix the YAML syntax") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of keys at the top level", fix="write key: value pairs")
    resolvers.register()
    cfg = OmegaConf.create(data)
    prov = Provenance()
    prov.add_file(path, "file")
    return Composed(cfg=cfg, provenance=prov, origin="file")


def _first_line(e: Any) -> str:
    return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
