"""FC740: code a config names, which a real run would import and call: Hydra callbacks, logging handlers, and
``_target_`` classes that are not verl's own.

Hydra builds objects from a config in three places, and verl in a fourth:

* ``hydra.callbacks.<name>`` (``{_target_: mod.Class, ...}``): ``hydra.main`` (and fsdpcfg's sweep launch)
  instantiates each one and calls its hooks (``on_multirun_start``, ``on_job_start``, ...);
* ``hydra.hydra_logging`` / ``hydra.job_logging``: a ``logging.config.dictConfig`` dictionary; a handler's
  ``class`` is imported and built (``logging.FileHandler`` opens its ``filename``, ``mode: w`` empties it), a
  ``()`` entry is called;
* ``hydra.launcher`` settings holding a ``_target_`` of their own (built with the launcher plugin);
* a ``_target_`` in verl's sections: verl's ``omega_conf_to_dataclass`` imports and calls it when it builds its
  config classes (``launcher=verl``), before training starts.

Hydra's blocklist of ``_target_`` stops ``os.system`` but not ``builtins.open`` or a plain import, and a module of
the working folder is importable (``python -m`` puts it on ``sys.path``). fsdpcfg itself builds none of these
outside a real run: ``check``, ``show``, ``--cfg``, ``export``, ``preview``, dry runs and sweep planning compose
the config without building callbacks, configuring logging or instantiating a ``_target_``
(:mod:`fsdpcfg.sweep._hydra`, :mod:`fsdpcfg.check.verl_opinion._worker`). What a real run does with each is
the finding's message; ``docs/reliability.md#code-a-config-names`` has the table.

Entries the same as Hydra's shipped logging options (``default``, ``disabled``, ``none``, ``stdout``,
``hydra_debug``, and those of installed ``hydra_plugins``) and ``_target_`` classes of verl's own config tree are
not reported.

Source: Hydra 1.3 ``hydra/_internal/callbacks.py`` (``Callbacks.__init__`` instantiates ``hydra.callbacks``),
``hydra/core/utils.py`` (``configure_log``: ``logging.config.dictConfig``), ``hydra/_internal/target_policy.py``
(the blocklist); verl 0.9.1 ``verl/utils/config.py`` (``omega_conf_to_dataclass``); issue 22 item 1 (a sweep's
``--dry-run`` built a recipe's ``builtins.open(path, "w")`` callback, emptying the file, and imported a module
of the working folder; ``fsdpcfg check`` passed the recipe silently).
"""

from __future__ import annotations

import functools
import importlib.machinery
import importlib.util
import os
import sysconfig
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from fsdpcfg import keypath, verlref, yamlio
from fsdpcfg.rules.context import Context
from fsdpcfg.rules.finding import Finding
from fsdpcfg.rules.registry import rule

RULE = "FC740"
#: Hydra's two logging config nodes and the ``dictConfig`` sections whose entries build objects.
LOGGING_NODES = ("hydra_logging", "job_logging")
LOGGING_SECTIONS = ("handlers", "formatters", "filters")
#: who builds what the ``hydra`` node names (a single run builds none of it), and what fsdpcfg's own commands do.
_SWEEP = "a sweep's launch (`python -m fsdpcfg -m`, not --dry-run)"
_SINGLE = "a single run (`python -m fsdpcfg`, native or verl) ignores it"
_NOTHING = "fsdpcfg check, dry runs, show, export and preview build nothing"


@functools.cache
def verl_targets() -> frozenset[str]:
    """Every ``_target_`` class of verl 0.9.1's own config trees (all its compositions): verl's code, not the
    config's."""
    out: set[str] = set()
    for comp in verlref.COMPOSITIONS:
        out.update(str(v) for k, v in verlref.defaults(comp, resolved=False).items() if k.endswith("_target_"))
    return frozenset(out)


@functools.cache
def shipped_logging() -> dict[str, dict[str, list[Any]]]:
    """``{node: {"section.name": [entry, ...]}}``: the entries of Hydra's shipped logging options (the
    ``hydra/<node>/*.yaml`` files of Hydra and of installed ``hydra_plugins``), read as YAML, nothing imported."""
    roots: list[Path] = []
    for pkg in ("hydra", "hydra_plugins"):
        spec = importlib.util.find_spec(pkg)  # a namespace package (hydra_plugins) runs no code to be found
        for loc in (spec.submodule_search_locations or []) if spec is not None else []:
            roots.append(Path(loc))
    out: dict[str, dict[str, list[Any]]] = {n: {} for n in LOGGING_NODES}
    for node in LOGGING_NODES:
        files = [
            f for r in roots for f in [*r.glob(f"conf/hydra/{node}/*.yaml"), *r.glob(f"*/conf/hydra/{node}/*.yaml")]
        ]
        for f in sorted(files):
            try:
                doc = yamlio.load_file(f)
            except Exception:  # a broken plugin file: its entries are reported, never a crash
                continue
            for section in LOGGING_SECTIONS:
                for name, entry in ((doc or {}).get(section) or {}).items() if isinstance(doc, dict) else []:
                    out[node].setdefault(f"{section}.{name}", []).append(entry)
    return out


def _short(v: Any, n: int = 120) -> str:
    text = repr(v)
    return text if len(text) <= n else text[: n - 3] + "..."


def call_text(target: str, node: dict[str, Any]) -> str:
    """``target(arg=value, ...)`` as Hydra's ``instantiate`` would call it (``_args_`` first, the ``_..._``
    settings left out), values shortened."""
    args = [_short(a) for a in node.get("_args_") or []] if isinstance(node.get("_args_"), list) else []
    args += [f"{k}={_short(v)}" for k, v in node.items() if not (str(k).startswith("_") and str(k).endswith("_"))]
    text = f"{target}({', '.join(args)})"
    return text if len(text) <= 240 else text[:237] + "..."


def module_text(target: str) -> str:
    """Where the module of ``target`` (``mod.sub.Class``) would be imported from, found without importing it:
    ``module mycb (/work/proj/mycb.py, in the working folder)``, ``module os (the standard library)``."""
    top = target.split(".", 1)[0]
    if top in ("builtins",) or importlib.machinery.BuiltinImporter.find_spec(top) is not None:
        return f"module {top} (built into Python)"
    cwd = os.getcwd()
    spec = importlib.machinery.PathFinder.find_spec(top, [cwd])
    if spec is not None:
        return f"module {top} ({spec.origin or cwd}, in the working folder)"
    spec = importlib.machinery.PathFinder.find_spec(top)
    if spec is None:
        return f"module {top} (not found on this machine)"
    where = spec.origin or next(iter(spec.submodule_search_locations or []), "?")
    if Path(where).resolve().is_relative_to(Path(sysconfig.get_paths()["stdlib"]).resolve()):
        return f"module {top} (the standard library)"
    return f"module {top} ({where})"


def _handler_effect(entry: dict[str, Any]) -> str:
    """What building a logging entry does to a file, when it opens one: `` (opens x.log for writing; mode 'w'
    empties it)``; ``""`` otherwise."""
    filename = entry.get("filename")
    if not isinstance(filename, str):
        return ""
    mode = str(entry.get("mode", "a"))
    empties = "; mode 'w' empties it" if "w" in mode else ""
    return f" (opens {filename} for writing{empties})"


def _hydra_node(ctx: Context) -> dict[str, Any]:
    """The ``hydra`` node of the config as plain dicts, interpolations kept: Hydra's own node of a composition
    (``Composed.hydra_cfg``), or a ``hydra:`` section of a config file."""
    from omegaconf import OmegaConf

    hydra_cfg = getattr(ctx.composed, "hydra_cfg", None)
    node: Any
    if hydra_cfg is not None:
        node = OmegaConf.to_container(hydra_cfg, resolve=False)
    else:
        node = ctx.composed.to_container(resolve=False).get("hydra")
    return {str(k): v for k, v in node.items()} if isinstance(node, dict) else {}


def _runner(ctx: Context) -> str:
    """Who would build the Hydra node's objects for this input: verl's entry point for a verl config file (read
    as a file, its ``hydra`` node kept as ``hydra_cfg``: :func:`fsdpcfg.compose.config_file.load`), else a
    sweep's launch."""
    if getattr(ctx.composed, "origin", "compose") == "file" and getattr(ctx.composed, "hydra_cfg", None) is not None:
        return "verl's entry point (`python -m verl.trainer.main_ppo --config-path ...`, a hydra.main app)"
    return _SWEEP


def _source(ctx: Context, key: str) -> str:
    src = ctx.composed.provenance.source_of(key)
    if src is not None:
        return str(src)
    for o in getattr(ctx.composed, "overrides", None) or []:
        if o.lstrip("+~").split("=", 1)[0].startswith(key.rsplit("._target_", 1)[0]):
            return f"command line ({o})"
    return "the config"


def _finding(ctx: Context, key: str, message: str, fix: str, severity: Any = "warning") -> Finding:
    return Finding(RULE, severity, [key], message, fix, provenance={key: _source(ctx, key)})


def _hydra_findings(ctx: Context) -> Iterator[Finding]:
    hydra = _hydra_node(ctx)
    runner = _runner(ctx)
    single = "" if runner != _SWEEP else f"; {_SINGLE}"
    callbacks = hydra.get("callbacks")
    for name, node in callbacks.items() if isinstance(callbacks, dict) else []:
        key = f"hydra.callbacks.{name}"
        target = node.get("_target_") if isinstance(node, dict) else None
        what = call_text(str(target), node) if isinstance(target, str) else _short(node)
        where = f", importing {module_text(target)}" if isinstance(target, str) else ""
        yield _finding(
            ctx,
            key,
            f"{key} is a Hydra callback: {runner} builds {what}{where}, and calls its hooks (on_multirun_start, "
            f"on_job_start, ...){single} ({_NOTHING})",
            f"remove {key} unless you mean that run to execute this code",
        )
    shipped = shipped_logging()
    for node_name in LOGGING_NODES:
        node = hydra.get(node_name)
        for section in LOGGING_SECTIONS:
            entries = node.get(section) if isinstance(node, dict) else None
            for name, entry in entries.items() if isinstance(entries, dict) else []:
                if entry in shipped[node_name].get(f"{section}.{name}", []):
                    continue  # Hydra's own option
                key = f"hydra.{node_name}.{section}.{name}"
                entry = entry if isinstance(entry, dict) else {}
                factory = entry.get("()") or entry.get("class")
                default = {"handlers": "?", "formatters": "logging.Formatter", "filters": "logging.Filter"}[section]
                target = str(factory) if factory else default
                args = {k: v for k, v in entry.items() if k not in ("()", "class", "formatter", "level", "filters")}
                built = call_text(target, args)
                where = f", importing {module_text(target)}" if factory else ""
                yield _finding(
                    ctx,
                    key,
                    f"{key} is a logging {section[:-1]} beyond Hydra's own: {runner} configures logging with it "
                    f"(logging.config.dictConfig), which builds {built}{_handler_effect(entry)}{where}{single} "
                    f"({_NOTHING})",
                    f"remove {key}, or choose one of Hydra's options (hydra/{node_name}=default|disabled|none)",
                )
    launcher = hydra.get("launcher")
    for key, target in keypath.targets(launcher, "hydra.launcher") if isinstance(launcher, dict) else []:
        if key == "hydra.launcher._target_":
            continue  # the plugin class: Hydra takes only an installed plugin of hydra_plugins
        yield _finding(
            ctx,
            key,
            f"{key}={target!r} is an object inside the launcher's settings: Hydra would build it (import and "
            "call it) with the launcher plugin, so a sweep refuses it; a single run ignores it",
            "give the launcher's settings as plain values (hydra.launcher.<option>=VALUE)",
        )


def _target_findings(ctx: Context) -> Iterator[Finding]:
    own = verl_targets()
    native = ctx.launcher == "native"
    for key, target in keypath.targets(ctx.cfg):
        if key.split(".", 1)[0] == "hydra" or not isinstance(target, str) or target in own:
            continue
        section = key.rsplit("._target_", 1)[0] if key != "_target_" else "the config"
        node = keypath.get(ctx.cfg, section, {}) if key != "_target_" else ctx.cfg
        call = call_text(target, node if isinstance(node, dict) else {})
        verl = (
            f"launcher=verl: verl imports {module_text(target)} and calls {call} when it builds its config "
            f"classes (omega_conf_to_dataclass), before training starts"
        )
        if native:
            yield _finding(
                ctx,
                key,
                f"{key}={target!r} is not one of verl's config classes: the native launcher builds none of them, "
                f"so it would never run ({verl}; {_NOTHING})",
                f"remove {key} (verl's own class is the default), or use launcher=verl if you mean verl to run "
                "that code",
                severity="error",
            )
        else:
            yield _finding(
                ctx,
                key,
                f"{key}={target!r} is not one of verl's config classes: {verl} ({_NOTHING})",
                f"remove {key} to keep verl's own class, unless you mean verl to run that code",
            )


@rule(
    RULE,
    "the config names code a run would import and call (Hydra callbacks, logging handlers, a _target_)",
    severity="warning",
    keys=("hydra.callbacks", "hydra.hydra_logging", "hydra.job_logging"),
    example=["+hydra.callbacks.marker._target_=mymodule.Marker"],
    kinds=("ppo", "sft"),
)
def config_code(ctx: Context) -> Iterable[Finding]:
    """A config is data, but Hydra and verl build objects from parts of it: ``hydra.callbacks`` (instantiated
    and called by a sweep's launch and by ``hydra.main`` apps such as verl's entry points), logging handlers,
    formatters and filters of ``hydra.hydra_logging``/``hydra.job_logging`` beyond Hydra's shipped options
    (``logging.config.dictConfig`` imports their class, opens their file, calls a ``()`` factory), objects
    inside the launcher's settings, and a ``_target_`` in verl's sections that is not verl's own class (verl's
    ``omega_conf_to_dataclass`` imports and calls it under launcher=verl; the native launcher never builds it,
    an error, as any key the native launcher does not implement). Each finding names the key, what a real run
    would build (with its arguments and the module it would import, found without importing it) and which run
    would: fsdpcfg's own check, dry runs, show, ``--cfg``, export, preview and sweep planning build none of them.

    Source: Hydra 1.3 ``hydra/_internal/callbacks.py``, ``hydra/core/utils.py`` ``configure_log``; verl 0.9.1
    ``verl/utils/config.py`` ``omega_conf_to_dataclass``; issue 22 item 1.
    """
    yield from _hydra_findings(ctx)
    yield from _target_findings(ctx)
