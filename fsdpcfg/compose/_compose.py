"""Compose a run config with Hydra's compose API and translate Hydra's errors into :class:`ConfigError`."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any, Protocol

import yaml
from omegaconf import DictConfig, OmegaConf, open_dict

from fsdpcfg import paths, runkind, verlref, yamlio
from fsdpcfg.compose import _fasthydra, config_file, resolvers, tree_cache, verl_base
from fsdpcfg.compose.composed import Composed, _first_line
from fsdpcfg.compose.conf_tree import available_options, group_folders, groups
from fsdpcfg.compose.provenance import Provenance, Source
from fsdpcfg.errors import ConfigError, UsageError, did_you_mean

_fasthydra.install()  # a compose does not deep-copy Hydra's ConfigStore (verl's stored trees)

#: the file suffixes a recipe or config file may have; Hydra itself only looks for ``NAME.yaml``.
YAML_SUFFIXES = (".yaml", ".yml")


class KeyAdvice(Protocol):
    """What an unknown key's error asks of the key universe, which the schema knows and composition does not (the
    schema is the next stage): whether verl too needs ``+`` for the key, and which real key to propose. The caller
    of :func:`compose` hands it in: :data:`fsdpcfg.check.key_advice.KEY_ADVICE` answers from
    :mod:`fsdpcfg.schema.keys`."""

    @property
    def no_such_key(self) -> str:
        """What the message adds when no real key is close enough to propose."""
        ...

    def known(self, key: str) -> bool:
        """True when something reads the RL tree's ``key`` though the tree leaves it out (a key of the schema, one
        verl's dataclasses read, one below a free mapping): verl too needs ``+`` for it."""
        ...

    def propose(
        self, key: str, value: Any, pool: tuple[str, ...] | None, config: str | None = None, kind: str = "ppo"
    ) -> str | None:
        """The one real key to propose for the unknown ``key`` set to ``value`` (``None``: a ``~key`` or a null,
        which any key's type fits), from ``pool`` (``None``: every key the schema and verl know; ``config``: verl's
        composition when known, so another engine's key is never proposed), or ``None``."""
        ...

    def section_replaced(self, key: str, value: Any, kind: str = "ppo") -> tuple[str, str] | None:
        """``(message, fix)`` when ``value`` (a scalar or a list) replaces the section ``key`` of the ``kind``
        tree; ``None`` otherwise."""
        ...


class ComposeError(ConfigError):
    """Hydra refused to compose, with the override at fault when one override is.

    Attributes:
        override: the override line Hydra refused (``trainer.nnode=2``, ``rollout=bogus``, ``~a.b``), as parsed
            from the command line; ``None`` when no override is at fault (a recipe file's own defaults list).
        reason: ``"needs_plus"`` (a key verl's dataclasses or a free mapping define but no YAML lists: ``+key``
            composes; :meth:`KeyAdvice.known` tells it in the RL tree), ``"plus_refused"`` (``+key`` on a key the
            tree holds: ``key=value`` composes) or ``"refused"`` (an unknown key, an unknown group option, a value
            Hydra cannot merge: dropping the override composes the rest; ``"unknown"``: the override's key is not in
            the tree, :func:`unknown_key_error`), ``"section"`` (a list set on a section: refused too, a type error).
    """

    def __init__(self, message: str, *, override: str | None = None, reason: str = "refused", **kw: Any) -> None:
        super().__init__(message, **kw)
        self.override = override
        self.reason = reason


#: Hydra's run dir names the run folder (``--cfg hydra`` then shows the folder a run uses; fsdpcfg writes it itself,
#: Hydra's app never runs); given first, so that a user's ``hydra.run.dir=X`` still wins and rule FC741 refuses it.
RUN_DIR_OVERRIDE = "hydra.run.dir=${fsdpcfg.run_dir}"


def _safe_load(path: Path):
    """The guarded ``yaml.safe_load`` of a file (:func:`fsdpcfg.yamlio.load_file`: bounded work, libyaml).

    Raises:
        ConfigError: the file is past a limit of :data:`fsdpcfg.yamlio.LIMITS`, unreadable or not YAML.
    """
    return yamlio.load_file(path)


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
            data = _safe_load(f) or {}
        except ConfigError as e:
            if "not valid YAML" in e.message:
                break  # Hydra reports the syntax error with its location
            raise  # past a limit of fsdpcfg.yamlio: refused before Hydra loads it
        entries = data.get("defaults") if isinstance(data, dict) else None
        for entry in entries if isinstance(entries, list) else []:  # another shape: Hydra's error names it
            if isinstance(entry, str) and entry != "_self_":
                ref = entry.split("@")[0].lstrip("/")
                ref = ref[len("recipe/") :] if ref.startswith("recipe/") else ref
                if "/" not in ref:
                    todo.append(ref)
    return chain


def recipe_kind(name: str, extra_dirs: list[Path] | None = None) -> str:
    """Return the kind (``ppo`` or ``sft``) a recipe extends: the ``fsdpcfg.kind`` of it or of the recipe
    it extends, default ``ppo``."""
    for f in reversed(recipe_chain(name, extra_dirs)):
        try:
            data = _safe_load(f) or {}
        except ConfigError as e:
            if "not valid YAML" in e.message:
                return "ppo"
            raise
        kind = (data.get("fsdpcfg") or {}).get("kind") if isinstance(data, dict) else None
        if kind is not None:
            return kind if kind in paths.KINDS else "ppo"
    return "ppo"


def bound_override(text: str) -> None:
    """Refuse an override whose value nests brackets deeper than :data:`fsdpcfg.yamlio.LIMITS` allows (Hydra's
    parser and OmegaConf recurse per level: 3,000 nested ``[`` gave a RecursionError traceback in the run).

    Raises:
        UsageError: too deeply nested or too long (names the override, the limit and the value found).
    """
    limits = yamlio.LIMITS
    key = text.split("=", 1)[0]
    if len(text) > limits.max_bytes:
        raise UsageError(
            f"the override `{key}=...` is {len(text):,} characters long, over the limit of "
            f"{limits.max_bytes:,} (fsdpcfg.yamlio.LIMITS)",
            fix="put long values in a recipe file",
        )
    depth = deepest = 0
    for ch in text:
        if ch in "[{(":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > limits.max_depth:
                    raise UsageError(
                        f"the override `{key}=...` nests brackets more than {limits.max_depth} deep "
                        "(fsdpcfg.yamlio.LIMITS)",
                        key=key,
                        fix="flatten the value",
                    )
        elif ch in "]})":
            depth -= 1


def _parse_overrides(overrides: list[str]):
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import OverrideParseException

    for o in overrides:
        bound_override(o)
    parser = OverridesParser.create()
    try:
        return parser.parse_overrides(overrides=overrides)
    except OverrideParseException as e:
        raise UsageError(
            f"cannot parse the override: {_first_line(e)}",
            fix="write overrides as key=value, +new.key=value, ~key or group=option",
        ) from None
    except ValueError:  # Hydra's int() of a number past sys.get_int_max_str_digits() (4,300 digits)
        culprit = next((o for o in overrides if _raises(parser.parse_override, o)), None)
        raise UsageError(
            f"cannot parse the override{f' `{culprit[:60]}...`' if culprit else ''}: an integer of more than "
            f"{sys.get_int_max_str_digits():,} digits, more than Python converts; no key takes such a number",
            key=culprit.split("=", 1)[0].lstrip("+~") if culprit else None,
            fix="write the number you meant (or quote it to make it a string)",
        ) from None


def _quoted(value: str) -> str:
    """``value`` as a quoted Hydra override value (interpolations in it stay interpolations)."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _raises(fn: Any, arg: Any) -> bool:
    """True when ``fn(arg)`` raises."""
    try:
        fn(arg)
    except Exception:
        return True
    return False


def compose(
    overrides: list[str] | None = None,
    *,
    extra_recipe_dirs: list[Path] | None = None,
    kind: str = "ppo",
    keys: KeyAdvice | None = None,
) -> Composed:
    """Compose the root config with ``overrides`` (Hydra syntax: ``key=value``, ``+key=value``, ``~key``,
    ``group=option``, ``+recipe=NAME``).

    ``kind`` is the tree (``ppo`` or ``sft``, :data:`fsdpcfg.paths.KINDS`) composed when no recipe selects one:
    a recipe's kind (:func:`recipe_kind`) wins. ``compose([], kind="sft")`` is the SFT tree's default config.

    ``extra_recipe_dirs`` adds folders whose ``*.yaml`` files can be selected as ``+recipe=NAME`` (used to
    check users' own recipe files). ``+recipe=PATH.yaml`` selects a recipe file anywhere (its folder is added).

    ``keys`` answers what an unknown key's error asks of the schema (:class:`KeyAdvice`: whether verl too needs
    ``+`` for the key, the real key to propose); every command passes :data:`fsdpcfg.check.key_advice.KEY_ADVICE`.
    Without it the error names the key and proposes none, and only verl's own SFT keys count as needing ``+``.

    Raises:
        ConfigError: an unknown key (with a did-you-mean given ``keys``), an unknown group option (with the
            options), a bad override, a recipe that does not exist.
    """
    extra_recipe_dirs = list(extra_recipe_dirs or [])
    given = list(overrides or [])
    overrides = []
    # key -> (the run's config.yaml that gave it, the override written for it)
    given_folders: dict[str, tuple[Path, str]] = {}
    for o in given:
        if o.startswith("+recipe=") and o.endswith((".sh", ".bash")):  # a verl run script: `fsdpcfg import` it
            validate_recipe_file(Path(o.split("=", 1)[1]).expanduser())
        if not (o.startswith("+recipe=") and o.endswith(YAML_SUFFIXES)):
            overrides.append(o)
            continue
        f = Path(o.split("=", 1)[1]).expanduser()
        validate_recipe_file(f)
        overrides.append(f"+recipe={f.stem}")
        extra_recipe_dirs.append(f.resolve().parent)
        # a run's config.yaml: its folders as its run was given them (the ranks' absolute ones are for that run);
        # written right after the recipe, so the command line's own values still win
        for key, value in config_file.given_values(yamlio.read_text(f)).items():
            overrides.append(f"{key}={_quoted(value)}")
            given_folders[key] = (f, overrides[-1])
    overrides = verl_base.engine_overrides(overrides)
    resolvers.register()
    parsed = _parse_overrides(overrides)
    for o in parsed:
        if o.is_sweep_override():
            raise UsageError(
                f"`{o.input_line}` is a sweep; a single config cannot hold it",
                fix="run sweeps with `python -m fsdpcfg -m ...`, or give one value",
            )
    for o in parsed:
        refuse_package_search_path(o)
    extra_dirs = [Path(d) for d in (extra_recipe_dirs or [])]
    headerless: dict[str, Path] = {}  # a user's recipe (name -> file) without a `# @package` header
    for o in parsed:
        own = _recipe_file(o.value(), extra_dirs) if o.key_or_group == "recipe" and isinstance(o.value(), str) else None
        if own is not None and own.resolve().parent != paths.recipes_dir().resolve() and _needs_global_package(own):
            headerless[o.value()] = own
    tmp = None
    search = []
    if extra_dirs:
        tmp = Path(tempfile.mkdtemp(prefix="fsdpcfg-recipes-"))
        (tmp / "recipe").mkdir()
        for d in extra_dirs:
            for f in sorted(p for p in d.iterdir() if p.suffix in YAML_SUFFIXES and p.is_file()):
                dst = tmp / "recipe" / f"{f.stem}.yaml"  # Hydra finds NAME.yaml only: a .yml recipe is linked so
                if dst.exists():
                    continue
                if _starts_with_bom(f):  # Hydra would not see the `# @package` header behind the mark
                    dst.write_text(yamlio.read_text(f), encoding="utf-8")
                else:
                    os.symlink(f.resolve(), dst)
        for name, f in headerless.items():  # a recipe's keys are top-level keys: Hydra's _global_ package
            (tmp / "recipe" / f"{name}.yaml").unlink(missing_ok=True)
            (tmp / "recipe" / f"{name}.yaml").write_text(
                "# @package _global_\n" + yamlio.read_text(f), encoding="utf-8"
            )
        search = [f"hydra.searchpath=[file://{tmp}]"]
    for o in parsed:
        if o.key_or_group == "recipe" and isinstance(o.value(), str):
            kind = recipe_kind(o.value(), extra_dirs)
    engine = _engine_choice(parsed, kind, extra_dirs)
    if kind == "sft" and any(o.key_or_group == "optim" for o in parsed):
        # verl's `optim=megatron` beside `engine=megatron`: the engine option selects both
        overrides = verl_base.sft_optim_overrides(overrides, engine)
        parsed = _parse_overrides(overrides)
    verl_base.register(kind, [engine] if engine is not None else [])
    try:
        try:
            cfg = _hydra_compose(overrides, parsed, kind, search, extra_dirs, keys=keys)
        except ConfigError:
            if not verl_base.register_all_if_missing():
                raise
            # the engine was chosen where we did not look
            cfg = _hydra_compose(overrides, parsed, kind, search, extra_dirs, keys=keys)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    choices = {
        k: v
        for k, v in (cfg.hydra.runtime.choices or {}).items()
        if not k.startswith("hydra/") and v and k.split("@")[0] != verl_base.GROUP
    }
    hydra_cfg = cfg.hydra
    with open_dict(cfg):
        del cfg["hydra"]
    OmegaConf.set_struct(cfg, False)

    prov = Provenance()
    comp = verl_base.composition_of(cfg, kind)
    prov.add_verl_defaults(dict(verlref.defaults(comp, resolved=False)), verlref.VERL_VERSION)
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
    for key, (f, text) in given_folders.items():
        src = prov.source_of(key)
        if src is not None and src.kind == "override" and src.where == text:  # not set again on the command line
            prov.record(key, Source("recipe", f"{f}:1 (as its run was given it)", f"recipe={f.stem}"))
    pruned = verl_base.prune(cfg, prov, comp)
    return Composed(
        cfg=cfg,
        choices=choices,
        kind=kind,
        overrides=overrides,
        added=added,
        deleted=deleted,
        provenance=prov,
        origin="compose",
        hydra_cfg=hydra_cfg,
        pruned=pruned,
    )


def _engine_choice(parsed, kind: str, extra_dirs: list[Path]) -> str | None:
    """The ``engine`` option a compose will select, as far as the command line, the recipe chain and the
    root config tell (``None`` when they do not); it only decides which verl tree to store first."""
    for o in reversed(parsed):
        if o.key_or_group == "engine" and isinstance(o.value(), str):
            return o.value()
    recipe = next((o.value() for o in reversed(parsed) if o.key_or_group == "recipe"), None)
    files = recipe_chain(recipe, extra_dirs) if isinstance(recipe, str) else []
    for f in [paths.conf_dir(kind) / "config.yaml", *files][::-1]:
        try:
            data = _safe_load(f) or {}
        except ConfigError:  # reported where the file is composed
            continue
        for entry in (data.get("defaults") or []) if isinstance(data, dict) else []:
            if isinstance(entry, dict):
                for k, v in entry.items():
                    if str(k).replace("override ", "").strip().lstrip("/") == "engine" and isinstance(v, str):
                        return v
    return None


def _starts_with_bom(f: Path) -> bool:
    """True when the file ``f`` starts with a UTF-8 byte-order mark (:data:`fsdpcfg.yamlio.BOM`)."""
    try:
        with open(f, "rb") as fh:
            return fh.read(3) == yamlio.BOM.encode("utf-8")
    except OSError:
        return False


def _needs_global_package(f: Path) -> bool:
    """True when the recipe file ``f`` (``+recipe=f``) has no ``# @package`` header: its keys are then composed
    at the top level (Hydra's ``_global_`` package, from a copy with the header) instead of under ``recipe.``.
    This is what a run folder's ``config.yaml`` (a full config) and a hand-written overlay need.

    Raises:
        UsageError: ``f`` is a verl config file (verl composes it, not fsdpcfg) or not a config at all.
    """
    try:
        _, info = config_file.read(f)
    except (yaml.YAMLError, ConfigError):
        return False  # validate_recipe_file has reported it already; Hydra would too
    if info.kind == "verl":
        from fsdpcfg import verlref

        assert info.base is not None  # a verl config file names the verl config it starts from
        entry = verlref.ENTRY_POINTS.get(info.base, "verl.trainer.main_ppo")
        runner = "torchrun --nproc_per_node=GPUS" if info.tree == "sft" else "python"
        raise UsageError(
            f"{f} is a verl config file (its defaults list starts from verl's {info.base}); verl "
            "composes it, fsdpcfg does not",
            fix=f"check it with `fsdpcfg check {f}`; run it with `{runner} -m {entry} "
            f"--config-path={f.resolve().parent} --config-name={f.stem}` (or the run_verl.sh "
            "beside it)",
        )
    if info.kind == "unrelated":
        raise UsageError(
            f"{f} is not a fsdpcfg or verl config: {info.why}",
            fix="give a recipe file, a recipe name (`fsdpcfg ls`) or a run folder's config.yaml",
        )
    return not config_file.has_package_header(yamlio.read_text(f))


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
    if f.suffix in (".sh", ".bash"):
        raise UsageError(f"{f} is a shell script, not a recipe", fix=f"turn it into one: `fsdpcfg import {f}`")
    try:
        data = yamlio.load_file(f)  # bounded: an alias bomb or deep nesting is refused here
    except ConfigError as e:
        if "not valid YAML" in e.message:
            e.fix = "fix the YAML syntax (`fsdpcfg check FILE` shows every problem)"
        raise
    if data is None:
        raise ConfigError(f"{f} is empty", fix="write a recipe: `fsdpcfg cp qwen_grpo FILE` makes a child recipe")
    if not isinstance(data, dict):
        raise ConfigError(
            f"{f}: a recipe is a mapping of keys, not a {type(data).__name__}",
            fix="`fsdpcfg cp qwen_grpo FILE` writes a minimal recipe to start from",
        )
    if "defaults" in data and not isinstance(data["defaults"], list):
        raise ConfigError(
            f"{f}: `defaults` must be a list (Hydra's defaults list), not a {type(data['defaults']).__name__}",
            fix="write it as a list, e.g. `defaults: [qwen_grpo, _self_]`",
        )


def refuse_package_search_path(o: Any) -> None:
    """Refuse a ``hydra.searchpath`` override with a ``pkg://`` entry: Hydra imports the package to list its
    configs (``ImportlibResourcesConfigSource``), so its code would run in ``check``, ``show`` and a dry run,
    before anything is checked (issue 22 item 1: no code of a config runs before training starts). A folder
    (``file://``) is read, never run.

    Raises:
        ComposeError: naming the override, the entry and the fix.
    """
    if o.key_or_group != "hydra.searchpath":
        return
    value = o.value()
    entries = value if isinstance(value, list) else [value]
    pkgs = [e for e in entries if isinstance(e, str) and e.strip().startswith("pkg://")]
    if pkgs:
        raise ComposeError(
            f"hydra.searchpath entry {pkgs[0]}: Hydra imports that package to read its configs, so its code would "
            "run before anything is checked",
            key="hydra.searchpath",
            value=value,
            fix="give the folder that holds the package's config files instead: hydra.searchpath=[file:///path/to/it]",
            override=o.input_line,
        )


def _recipe_file(name: str, extra_dirs: list[Path]) -> Path | None:
    for d in [paths.recipes_dir(), *extra_dirs]:
        for suffix in YAML_SUFFIXES:
            f = Path(d) / f"{name}{suffix}"
            if f.is_file():
                return f
    return None


def _hydra_compose(
    overrides: list[str],
    parsed,
    kind: str = "ppo",
    search: list[str] | None = None,
    extra_dirs: list[Path] | None = None,
    *,
    cache: bool = True,
    keys: KeyAdvice | None = None,
) -> DictConfig:
    """Hydra's compose of ``overrides`` (parsed: ``parsed``) plus the ``search`` path overrides, with Hydra's
    config node; the group choices' tree is composed once per process (:mod:`fsdpcfg.compose.tree_cache`,
    ``cache=False``: compose it all anew)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.errors import ConfigCompositionException, MissingConfigException

    search = list(search or [])
    stages = tree_cache.split(list(parsed), [*group_folders(kind), "recipe", verl_base.GROUP]) if cache else None
    first = [o.input_line for o in stages[0]] if stages else overrides
    # the search path names a new temporary folder each time: the files it links (extra_dirs) are the key
    folders = dict.fromkeys([paths.conf_dir("ppo"), paths.conf_dir(kind), *(extra_dirs or [])])
    k = tree_cache.key(kind, first, folders, verl_base.stored()) if stages else None
    GlobalHydra.instance().clear()
    try:
        cfg = tree_cache.get(k) if k is not None else None
        if cfg is None:
            try:
                with initialize_config_dir(config_dir=str(paths.conf_dir(kind)), version_base="1.3"):
                    cfg = hydra_compose(
                        config_name="config", overrides=[RUN_DIR_OVERRIDE, *first, *search], return_hydra_config=True
                    )
            except Exception as e:
                if k is not None:
                    tree_cache.put_error(k, e)
                raise
            if k is not None:
                tree_cache.put(k, cfg)
        if stages:
            from hydra.core.override_parser.overrides_parser import OverridesParser

            parse = OverridesParser.create().parse_overrides
            tree_cache.second_stage(cfg, stages[1], [*parse([RUN_DIR_OVERRIDE]), *parsed, *parse(search)])
        return cfg
    except MissingConfigException as e:
        raise _missing_option(e, parsed, kind, extra_dirs) from None
    except ConfigCompositionException as e:
        raise _composition_error(e, parsed, kind, extra_dirs, keys) from None
    except Exception as e:  # omegaconf errors raised while merging (type mismatches and the like)
        if type(e).__module__.startswith(("omegaconf", "hydra", "yaml")) or raised_in_hydra(e):
            full_key = getattr(e, "full_key", None)
            raise ComposeError(
                f"cannot compose the config: {_first_line(e)}",
                key=full_key,
                fix="check the override's value type against the key's default",
                override=_line(_override_of(parsed, full_key)),
            ) from None
        raise
    finally:
        GlobalHydra.instance().clear()


def raised_in_hydra(e: BaseException) -> bool:
    """True when the innermost frame of ``e`` is Hydra's, OmegaConf's or PyYAML's code: a plain ``ValueError``
    or ``TypeError`` they raise about the input (``defaults: [{a: [1]}]``: "Unsupported item value in defaults"),
    not a bug of fsdpcfg."""
    tb = e.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    name = tb.tb_frame.f_code.co_filename if tb is not None else ""
    return isinstance(e, (ValueError, TypeError, KeyError, AssertionError, AttributeError)) and any(
        f"{os.sep}{pkg}{os.sep}" in name for pkg in ("hydra", "omegaconf", "yaml")
    )


def _missing_option(e: Exception, parsed, kind: str = "ppo", extra_dirs: list[Path] | None = None) -> ConfigError:
    """The error for a group option that does not exist: Hydra names it (``missing_cfg_file``:
    ``rollout/bogus``, whether a command-line override or a recipe's defaults list chose it) and its options."""
    msg = str(e)
    missing = getattr(e, "missing_cfg_file", None) or ""
    group, _, option = str(missing).rpartition("/")
    hydra_opts = [str(x) for x in (getattr(e, "options", None) or [])]
    for o in parsed:
        g = o.key_or_group
        if g not in groups(kind) and g != "recipe":
            continue
        val = o.value()
        if not isinstance(val, str) or (group and (g != group or val != option)):
            continue
        opts = available_options(g, kind, extra_dirs)
        if group or val not in opts:
            return _option_error(g, val, hydra_opts or opts, o.input_line)
    if group and option:  # chosen by a recipe file's defaults list, not on the command line
        return _option_error(group, option, hydra_opts or available_options(group, kind, extra_dirs), None)
    return ComposeError(
        f"cannot compose the config: {_first_line(msg)}", fix="`fsdpcfg ls` lists the groups and options"
    )


def group_fallback(group: str, recipe: str | None, kind: str = "ppo", extra_dirs: list[Path] | None = None):
    """``(option, file, line)``: the option of ``group`` the config falls back to when a recipe's defaults list
    chose one that does not exist (the last existing choice of the recipe chain, else the root config's), and the
    file and line of the last choice of ``group`` in the chain that does not exist (``None`` when none does)."""
    opts = set(available_options(group, kind))
    chosen, bad_at = None, None
    files = [paths.conf_dir(kind) / "config.yaml", *(recipe_chain(recipe, extra_dirs) if recipe else [])]
    for f in files:
        try:
            text = yamlio.read_text(f)
            data = yamlio.load(text, str(f))
        except (OSError, ConfigError):
            continue
        for entry in (data.get("defaults") or []) if isinstance(data, dict) else []:
            for k, v in entry.items() if isinstance(entry, dict) else []:
                if str(k).replace("override ", "").strip().lstrip("/") != group or not isinstance(v, str):
                    continue
                if v in opts:
                    chosen = v
                    continue
                for i, line in enumerate(text.splitlines(), 1):
                    if group in line and v in line.split(":", 1)[-1]:
                        bad_at = (f, i)
    return chosen, bad_at


def _option_error(group: str, option: str, opts: list[str], override: str | None) -> ComposeError:
    close = did_you_mean(option, opts)
    hint = f"did you mean {group}={close[0]}? " if close else ""
    where = "" if override is not None else " (chosen in a recipe's defaults list)"
    return ComposeError(
        f"no option `{option}` in group `{group}`{where}; available: {', '.join(opts)}",
        key=group,
        value=option,
        fix=f"{hint}choose one of: {', '.join(opts)} (`fsdpcfg ls` lists them with descriptions)",
        override=override,
    )


def _override_of(parsed, key: str | None, *, delete: bool | None = None):
    """The last parsed override on ``key`` (``delete``: only a ``~key``, only not one, or either), or ``None``."""
    if not key:
        return None
    for o in reversed(list(parsed)):
        if o.key_or_group == key and (delete is None or bool(o.is_delete()) == delete):
            return o
    return None


def _line(o) -> str | None:
    return None if o is None else str(o.input_line)


def _composition_error(
    e: Exception, parsed, kind: str = "ppo", extra_dirs: list[Path] | None = None, keys: KeyAdvice | None = None
) -> ConfigError:
    msg = str(e)
    cause = e.__cause__ or e
    full_key = getattr(cause, "full_key", None)
    if "Could not override" in msg or "Could not delete" in msg or "Could not append" in msg:
        key = msg.split("'")[1] if "'" in msg else full_key
        if "Could not delete" in msg:
            close = _suggest(keys, key, None, kind)
            return ComposeError(
                "cannot delete a key that is not in the config",
                key=key,
                fix=(f"did you mean ~{close}?" if close else _NO_SUCH_KEY),
                override=_line(_override_of(parsed, key, delete=True)),
            )
        o = _override_of(parsed, key, delete=False)
        override = _line(o)
        value = o.value() if o is not None else None
        if "Could not append" in msg:
            return ComposeError(
                "the key already exists, so `+` cannot add it",
                key=key,
                fix=f"set it without the plus: {key}=VALUE (or force with ++{key}=VALUE)",
                override=override,
                reason="plus_refused",
            )
        if kind == "sft":
            listed = key in verlref.keys("sft")
        else:
            listed = keys is not None and isinstance(key, str) and keys.known(key)
        if listed:
            # the tree holds verl's whole composition, so this is a key verl's YAML does not list either (below a
            # free mapping, read by a dataclass, another engine's): verl too needs `+` for it
            return ComposeError(
                "is a key that neither this config tree nor verl's YAML lists",
                key=key,
                fix=f"add it with +{key}=VALUE, as verl needs too",
                override=override,
                reason="needs_plus",
            )
        return unknown_key_error(key, value, override, kind, keys=keys)
    if "in group" in msg.lower() or "Could not find" in msg:
        return _missing_option(e, parsed, kind, extra_dirs)
    o = _override_of(parsed, full_key, delete=False)
    if o is not None and isinstance(full_key, str):
        replaced = keys.section_replaced(full_key, o.value(), kind) if keys is not None else None  # a list on a section
        if replaced is not None:
            return ComposeError(replaced[0], key=full_key, fix=replaced[1], override=_line(o), reason="section")
    return ComposeError(
        f"cannot compose the config: {_first_line(msg)}",
        key=full_key,
        fix="check the override against `fsdpcfg show`",
        override=_line(_override_of(parsed, full_key)),
    )


def unknown_key_error(
    key: str | None,
    value: Any,
    override: str | None,
    kind: str = "ppo",
    config: str | None = None,
    *,
    keys: KeyAdvice | None = None,
) -> ComposeError:
    """The error of ``override`` (``key=value``) on a key the config does not have, with the one real key to
    propose (:meth:`KeyAdvice.propose`; ``config``: verl's composition of the config once it is known, so that
    another engine's key is never proposed) or the sentence that there is no such key (none without ``keys``)."""
    close = _suggest(keys, key, value, kind, config)
    shown = override.split("=", 1)[1] if override and "=" in override else "VALUE"
    return ComposeError(
        "is not a key of the config" + ("" if close or keys is None else f": {keys.no_such_key}"),
        key=key,
        value=value,
        fix=f"did you mean {close}={shown}?" if close else _NO_SUCH_KEY,
        override=override,
        reason="unknown",
    )


#: the fix of an unknown key no real key is close to (:meth:`KeyAdvice.propose`).
_NO_SUCH_KEY = "remove it, or check the name (`fsdpcfg show` prints the tree)"


def _suggest(
    keys: KeyAdvice | None, key: str | None, value: Any, kind: str = "ppo", config: str | None = None
) -> str | None:
    """The real key to propose for the unknown ``key`` set to ``value`` (``None``: a ``~key``), or ``None``:
    :meth:`KeyAdvice.propose` over the ``kind`` tree's keys (``config``: verl's composition, when known; none
    without ``keys``)."""
    if not key or keys is None:
        return None
    pool = _known_keys("sft") if kind == "sft" else None
    return keys.propose(key, value, pool, config, kind)


def _known_keys(kind: str = "ppo") -> tuple[str, ...]:
    """Dotted keys of the root config, every group option and verl's own config of the SFT tree (for
    did-you-mean on its overrides)."""
    from fsdpcfg import verlref
    from fsdpcfg.compose.provenance import yaml_leaf_lines

    conf = paths.conf_dir(kind)
    keys: set[str] = set(yaml_leaf_lines(conf / "config.yaml"))
    for g in groups(kind):
        for f in (conf / g).glob("*.yaml"):
            keys.update(yaml_leaf_lines(f))
    keys.update(verlref.keys(runkind.get(kind).verl_keys))
    return tuple(sorted(keys))
