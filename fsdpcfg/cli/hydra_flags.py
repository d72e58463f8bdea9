"""Hydra's own command-line flags on the run command, as a Hydra app has them.

    python -m fsdpcfg +recipe=qwen_grpo --cfg job            # the composed job config (YAML), nothing started
    python -m fsdpcfg +recipe=qwen_grpo --cfg job --resolve  # ... with interpolations resolved
    python -m fsdpcfg +recipe=qwen_grpo --cfg job -p actor_rollout_ref.actor   # one package of it
    python -m fsdpcfg +recipe=qwen_grpo --cfg hydra          # Hydra's own config for this run
    python -m fsdpcfg +recipe=qwen_grpo --info               # search path, group choices, config groups
    python -m fsdpcfg --version                              # fsdpcfg, the pinned verl, and the stack
    python -m fsdpcfg -cp runs/fsdpcfg/qwen_grpo -cn config  # run a saved config file (= +recipe=DIR/NAME.yaml)
    eval "$(python -m fsdpcfg -sc install=bash)"             # tab completion of groups, options and keys

The flags keep Hydra's names and meanings (``--cfg/-c job|hydra|all``, ``--package/-p``, ``--resolve``,
``--info/-i [all|config|defaults|searchpath]``, ``--config-path/-cp``, ``--config-name/-cn``,
``--shell-completion/-sc install=SHELL|uninstall=SHELL``, ``--version``); the work behind them is fsdpcfg's
compose (:func:`fsdpcfg.compose.compose`), so what they print is exactly what a run composes. Nothing here
imports torch or verl.
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
import shlex
from pathlib import Path
from typing import Any

from fsdpcfg.errors import UsageError

CFG_CHOICES = ("job", "hydra", "all")
INFO_CHOICES = ("all", "config", "defaults", "searchpath")
SHELLS = ("bash", "zsh", "fish")
#: the packages ``--version`` reports (distribution names), read from their metadata without importing them.
STACK = ("verl", "torch", "transformers", "peft", "hydra-core", "omegaconf", "pydantic", "vllm", "sglang")


def version_text() -> str:
    """``fsdpcfg X (verl key set Y)`` and the installed version of each package of :data:`STACK`."""
    from fsdpcfg import __version__, verlref

    lines = [
        f"fsdpcfg {__version__} (verl key set {verlref.verl_version()})",
        f"python {platform.python_version()} ({platform.system()} {platform.machine()})",
    ]
    for dist in STACK:
        try:
            lines.append(f"{dist} {importlib.metadata.version(dist)}")
        except importlib.metadata.PackageNotFoundError:
            lines.append(f"{dist} not installed")
    return "\n".join(lines)


def _select(cfg: dict[str, Any], package: str | None) -> Any:
    if not package:
        return cfg
    from fsdpcfg import keypath

    try:
        node = keypath.get(cfg, package)
    except KeyError:
        raise UsageError(
            f"--package {package}: the config has no `{package}`",
            key=package,
            fix="give a dotted section of the config, e.g. actor_rollout_ref.actor",
        ) from None
    return {package.rsplit(".", 1)[-1]: node} if not isinstance(node, dict) else node


def cfg_text(overrides: list[str], which: str, *, package: str | None = None, resolve: bool = False) -> str:
    """The YAML Hydra's ``--cfg WHICH`` prints for ``overrides``: the job config (``job``), Hydra's own config
    (``hydra``) or both (``all``), optionally one ``package`` of it and with interpolations resolved.

    Raises:
        UsageError: an unknown ``which`` or ``package``.
        ConfigError: the overrides do not compose, or an interpolation does not resolve with ``resolve``.
    """
    from omegaconf import OmegaConf

    from fsdpcfg import yamlio
    from fsdpcfg.check.key_advice import KEY_ADVICE
    from fsdpcfg.compose import compose

    if which not in CFG_CHOICES:
        raise UsageError(f"--cfg {which}: unknown", fix=f"use one of {', '.join(CFG_CHOICES)}")
    composed = compose(overrides, keys=KEY_ADVICE)
    doc: dict[str, Any] = {}
    if which in ("job", "all"):
        doc.update(composed.to_container(resolve=resolve))
    if which in ("hydra", "all"):
        hydra = composed.hydra_cfg
        doc["hydra"] = {} if hydra is None else OmegaConf.to_container(hydra, resolve=False)
    return yamlio.dump(_select(doc, package), default_flow_style=False, width=120)


def info_text(overrides: list[str], mode: str = "all") -> str:
    """What Hydra's ``--info MODE`` reports for ``overrides``: the config search path, the defaults (each group's
    chosen option and the files composed, in order) and the config groups with their options.

    Raises:
        UsageError: an unknown ``mode``.
        ConfigError: the overrides do not compose.
    """
    from fsdpcfg import paths
    from fsdpcfg.catalog.tree import all_options, recipes
    from fsdpcfg.check.key_advice import KEY_ADVICE
    from fsdpcfg.compose import compose

    if mode not in INFO_CHOICES:
        raise UsageError(f"--info {mode}: unknown", fix=f"use one of {', '.join(INFO_CHOICES)}")
    composed = compose(overrides, keys=KEY_ADVICE)
    parts = []
    if mode in ("all", "searchpath"):
        conf = paths.conf_dir(composed.kind)
        parts.append(
            "Config search path\n"
            + "\n".join(
                [f"  main    file://{conf}", f"  recipes file://{paths.recipes_dir()}", "  hydra   pkg://hydra.conf"]
            )
        )
    if mode in ("all", "defaults"):
        rows = [f"  {g}: {o}" for g, o in composed.choices.items()]
        parts.append(f"Defaults (kind {composed.kind}; group: chosen option)\n" + "\n".join(rows))
    if mode in ("all", "config"):
        by_group: dict[str, list[str]] = {}
        for o in all_options():
            if o.kind == composed.kind:
                by_group.setdefault(o.group, []).append(o.name + (" (default)" if o.is_default else ""))
        by_group["recipe"] = [r.name for r in recipes()]
        parts.append("Config groups\n" + "\n".join(f"  {g}: {', '.join(v)}" for g, v in by_group.items()))
    return "\n\n".join(parts)


def config_file_override(config_path: str | None, config_name: str | None) -> str:
    """``+recipe=DIR/NAME.yaml`` for Hydra's ``-cp DIR -cn NAME`` (a recipe file or a saved run ``config.yaml``).

    Raises:
        UsageError: ``-cn`` missing, or the file does not exist.
    """
    if not config_name:
        raise UsageError("--config-path needs --config-name", fix="e.g. -cp runs/fsdpcfg/qwen_grpo -cn config")
    name = config_name if config_name.endswith((".yaml", ".yml")) else f"{config_name}.yaml"
    f = Path(config_path or ".").expanduser() / name
    if not f.is_file() and not name.endswith(".yml") and f.with_suffix(".yml").is_file():
        f = f.with_suffix(".yml")
    if not f.is_file():
        raise UsageError(
            f"no config file {f} (-cn {config_name})",
            fix="give the folder with -cp and the file name without .yaml with -cn",
        )
    return f"+recipe={f}"


# ------------------------------------------------------------------------------------------------ completion

_BASH = """# fsdpcfg tab completion for bash: eval "$({prog} -sc install=bash)"
_fsdpcfg_complete() {{
    local words
    words=$(COMP_LINE="$COMP_LINE" COMP_POINT="$COMP_POINT" {prog} -sc query=bash 2>/dev/null)
    COMPREPLY=($(compgen -W "$words" -- "${{COMP_WORDS[COMP_CWORD]}}"))
    [[ ${{#COMPREPLY[@]}} -eq 1 && ${{COMPREPLY[0]}} == *[=.] ]] && compopt -o nospace
}}
complete -F _fsdpcfg_complete {names}
"""
_ZSH = (
    """# fsdpcfg tab completion for zsh: eval "$({prog} -sc install=zsh)"
autoload -U bashcompinit && bashcompinit
"""
    + _BASH
)
_FISH = """# fsdpcfg tab completion for fish: {prog} -sc install=fish | source
function __fsdpcfg_complete
    set -lx COMP_LINE (commandline -cp)
    {prog} -sc query=fish
end
complete -c fsdpcfg -f -a '(__fsdpcfg_complete)'
"""


def completion_script(action: str, prog: str = "python -m fsdpcfg") -> str:
    """The shell code ``-sc install=SHELL`` prints (to be ``eval``-ed) or ``-sc uninstall=SHELL`` prints.

    Raises:
        UsageError: not ``install=SHELL`` / ``uninstall=SHELL`` with a shell of :data:`SHELLS`.
    """
    verb, _, shell = action.partition("=")
    if verb not in ("install", "uninstall") or shell not in SHELLS:
        raise UsageError(
            f"--shell-completion {action}: unknown",
            fix=f"use install=SHELL or uninstall=SHELL with SHELL one of {', '.join(SHELLS)}",
        )
    names = "fsdpcfg"
    if verb == "uninstall":
        return "complete -e -c fsdpcfg" if shell == "fish" else f"complete -r {names} 2>/dev/null"
    template = {"bash": _BASH, "zsh": _ZSH, "fish": _FISH}[shell]
    return template.format(prog=prog, names=names)


def completions(line: str) -> list[str]:
    """Candidates for the last word of the command line ``line`` (``COMP_LINE``): subcommands (first word),
    ``GROUP=`` and ``GROUP=OPTION``, ``+recipe=NAME``, and dotted config keys one level at a time
    (``actor_rollout_ref.`` -> ``actor_rollout_ref.actor.``, ...), ending in ``=`` at a leaf."""
    from fsdpcfg.catalog.keyinfo import all_keys
    from fsdpcfg.catalog.tree import all_options, recipes
    from fsdpcfg.cli.main import COMMANDS

    try:
        words = shlex.split(line)
    except ValueError:
        words = line.split()
    current = "" if not words or line.endswith(" ") else words[-1]
    before = words[1:] if not current else words[1:-1]
    options: dict[str, list[str]] = {}
    for o in all_options():  # both kinds' trees: an option name once
        if o.name not in options.setdefault(o.group, []):
            options[o.group].append(o.name)
    if "=" in current:
        key, _, _ = current.partition("=")
        if key in ("+recipe", "recipe"):
            return [f"{key}={r.name}" for r in recipes()]
        return [f"{key}={v}" for v in options.get(key.lstrip("+"), [])]
    out: list[str] = []
    if not before:
        out += [c for c in COMMANDS if c != "run"]
    out += ["+recipe="] + [f"{g}=" for g in options]
    prefix = current.lstrip("+~")
    sign = current[: len(current) - len(prefix)]
    keys = all_keys()
    sections = {k.rsplit(".", 1)[0] for k in keys if "." in k}
    seen = set()
    for k in keys:
        if not k.startswith(prefix):
            continue
        rest = k[len(prefix) :]
        cut = rest.find(".", 1 if rest.startswith(".") else 0)
        cand = k if cut < 0 else k[: len(prefix) + cut + 1]
        if cut < 0 and k in sections:
            continue  # a section: completed with its `.`, from its keys
        if cand not in seen:
            seen.add(cand)
            out.append(sign + cand + ("=" if cut < 0 else ""))
    return [c for c in out if c.startswith(current)]


def env_completion_line() -> str:
    """The command line being completed (``COMP_LINE``, cut at ``COMP_POINT``)."""
    line = os.environ.get("COMP_LINE", "")
    point = os.environ.get("COMP_POINT")
    return line[: int(point)] if point and point.isdigit() else line
