"""Inputs of ``fsdpcfg check`` other than command-line overrides: recipe files, full config files (an
fsdpcfg or verl dump) and verl run scripts (``python3 -m verl.trainer.main_ppo key=value ...``).

Each function returns a :class:`Checked`: the findings and, when the config could be built, the composed
config (for the derived numbers). Nothing here runs the script, imports the user's code, or uses the network.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import yaml

from fsdpcfg import verlref
from fsdpcfg.check import check_config, compose_error_finding, unexpected_compose_finding
from fsdpcfg.errors import ConfigError, UsageError
from fsdpcfg.rules.finding import Finding

#: the verl entry point whose overrides a run script is checked for.
VERL_ENTRY = re.compile(r"(^|[/\s])(verl\.trainer\.main_ppo|verl/trainer/main_ppo\.py|main_ppo\.py)$")
_SHELL_OPS = {"&&", "||", "|", ";", "&", "|&"}
_ASSIGN = re.compile(r"^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$")
#: group options that put our tree on verl's defaults before a script's overrides apply.
SCRIPT_BASE = ["launcher=verl", "trainer=gpu_8x", "engine=fsdp", "patches=remove_padding"]


@dataclass
class Checked:
    """The result of checking one input: its label, findings, and the composed config when there is one."""

    label: str
    findings: list[Finding]
    composed: Optional[Any] = None
    notes: list[str] = field(default_factory=list)


def is_full_config(data: Any) -> bool:
    """True for a complete config (a dump of fsdpcfg's or verl's tree), false for a recipe (an overlay
    with a Hydra ``defaults`` list or a few sections)."""
    return isinstance(data, dict) and "defaults" not in data and {"actor_rollout_ref", "data", "trainer",
                                                                  "algorithm"} <= set(data)


def check_yaml_file(path: Path) -> Checked:
    """Check a recipe (composed as ``+recipe=<stem>`` with its folder as an extra recipe folder) or a full
    config file (read as it is; a verl dump without an ``fsdpcfg`` section is checked for ``launcher=verl``).

    Raises:
        UsageError: the file does not exist.
    """
    from fsdpcfg.compose import compose, load_yaml_config
    from fsdpcfg.compose.provenance import Source

    path = Path(path)
    if not path.is_file():
        raise UsageError(f"no such file: {path}")
    label = str(path)
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        return Checked(label, [Finding("FC100", "error", [], f"{where}: not valid YAML: "
                                       f"{str(e).strip().splitlines()[0]}", "fix the YAML syntax")])
    except (OSError, UnicodeDecodeError) as e:
        return Checked(label, [Finding("FC100", "error", [], f"{path}: cannot be read: {e}", "check the file")])
    if data is not None and not isinstance(data, dict):
        return Checked(label, [Finding("FC100", "error", [], f"{path}: expected a mapping of keys at the top level, "
                                       f"got {type(data).__name__}", "write key: value pairs")])
    try:
        if is_full_config(data):
            composed = load_yaml_config(path)
            if "fsdpcfg" not in data:
                composed.cfg["fsdpcfg"] = {"launcher": "verl"}
                composed.provenance.record("fsdpcfg.launcher", Source("file", f"{path} (a verl config: no "
                                                                      "fsdpcfg section, so launcher=verl)"))
        else:
            composed = _compose_recipe_file(path)
    except UsageError:
        raise
    except ConfigError as e:
        return Checked(label, [compose_error_finding(e)])
    except Exception as e:  # Hydra/OmegaConf errors that are not ConfigError: still a finding
        return Checked(label, [unexpected_compose_finding(e, [str(path)])])
    return Checked(label, check_config(composed), composed)


def _compose_recipe_file(path: Path) -> Any:
    """Compose a user's recipe file. A file named like a shipped recipe (``qwen_grpo.yaml``) would be shadowed
    by it in Hydra's search path, so it is selected under a name of its own (a symlink in a temporary folder);
    its ``defaults`` may still name the shipped recipe or other files of its folder."""
    import tempfile

    from fsdpcfg.compose import compose
    from fsdpcfg.compose._compose import available_options

    folder = path.parent.resolve()
    if path.stem not in available_options("recipe"):
        return compose([f"+recipe={path.stem}"], extra_recipe_dirs=[folder])
    with tempfile.TemporaryDirectory(prefix="fsdpcfg-check-") as tmp:
        alias = f"{path.stem}__file"
        (Path(tmp) / f"{alias}.yaml").symlink_to(path.resolve())
        return compose([f"+recipe={alias}"], extra_recipe_dirs=[Path(tmp), folder])


@dataclass
class ScriptCommand:
    """One ``main_ppo`` command of a run script: its overrides and their line numbers."""

    line: int
    overrides: list[tuple[str, int]]
    unresolved: list[tuple[str, int]]
    other_args: list[str]


def parse_run_script(text: str) -> list[ScriptCommand]:
    """Return the ``main_ppo`` commands of a shell script: line continuations joined, ``$VAR`` replaced by
    the script's own literal ``VAR=value`` assignments; overrides that still hold a ``$`` (a variable from
    the environment, a command substitution) are returned as ``unresolved``."""
    lines = text.splitlines()
    env: dict[str, str] = {}
    commands: list[ScriptCommand] = []
    i = 0
    while i < len(lines):
        start = i
        logical = lines[i]
        while logical.rstrip().endswith("\\") and i + 1 < len(lines):
            i += 1
            logical = logical.rstrip()[:-1] + " " + lines[i]
        i += 1
        stripped = logical.strip()
        m = _ASSIGN.match(stripped)
        if m:
            try:
                words = shlex.split(m.group(2), comments=True)
            except ValueError:
                words = []
            if len(words) <= 1:
                env[m.group(1)] = _expand(words[0] if words else "", env)
                continue
        try:
            tokens = shlex.split(logical, comments=True)
        except ValueError:
            continue
        for t, tok in enumerate(tokens):
            if VERL_ENTRY.search(tok):
                commands.append(_command(tokens[t + 1:], start, lines, env))
                break
    return commands


def _expand(s: str, env: dict[str, str]) -> str:
    def sub(m: re.Match) -> str:
        name = m.group(1) or m.group(2)
        return env.get(name, m.group(0))

    return re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)", sub, s)


def _command(tokens: list[str], start: int, lines: list[str], env: dict[str, str]) -> ScriptCommand:
    overrides, unresolved, other = [], [], []
    for tok in tokens:
        if tok in _SHELL_OPS or tok.startswith((">", "2>", "1>", "<")) or tok.endswith(";"):
            break
        line = _line_of(tok, start, lines)
        if tok.startswith("-"):
            other.append(tok)
            continue
        tok = _expand(tok, env)
        if "$" in tok or "`" in tok:
            unresolved.append((tok, line))
        else:
            overrides.append((tok, line))
    return ScriptCommand(start + 1, overrides, unresolved, other)


def _line_of(tok: str, start: int, lines: list[str]) -> int:
    key = tok.split("=", 1)[0]
    for j in range(start, len(lines)):
        if key and key in lines[j]:
            return j + 1
    return start + 1


def hydra_value(v: Any) -> str:
    """Write a plain value (None, bool, number, string, list, mapping) as a Hydra override value."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return "'" + v.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if isinstance(v, list):
        return "[" + ",".join(hydra_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ",".join(f"{k}:{hydra_value(x)}" for k, x in v.items()) + "}"
    return str(v)


def script_overrides(cmd: ScriptCommand) -> tuple[list[str], dict[str, int], list[Finding]]:
    """Translate a script command into fsdpcfg overrides over verl's defaults.

    Our tree is composed with ``launcher=verl`` and the groups closest to verl's defaults (``SCRIPT_BASE``
    plus the rollout group named by the script); every key where that tree still differs from verl 0.9.1's
    default is reset to verl's default; then the script's overrides apply (``+`` added for keys only verl
    knows). Returns (overrides, {key: script line}, findings about what could not be checked).
    """
    from fsdpcfg.compose import compose, verl_base
    from fsdpcfg.compose._compose import available_options
    from omegaconf import OmegaConf

    notes: list[Finding] = []
    lines: dict[str, int] = {}
    user: list[str] = []
    rollout = None
    for tok, line in cmd.overrides:
        key = tok.lstrip("+~").split("=", 1)[0]
        if key == "actor_rollout_ref.rollout.name" and "=" in tok:
            rollout = tok.split("=", 1)[1].strip("'\"")
        lines[key] = line
        user.append(tok)
    base = list(SCRIPT_BASE)
    if rollout in available_options("rollout"):
        base.append(f"rollout={rollout}")
    # verl's `model_engine=megatron` selects the engine's composition, as fsdpcfg's engine= does
    user = verl_base.engine_overrides(user)
    base += [t for t in user if t.startswith("engine=")]
    user = [t for t in user if not t.startswith("engine=")]
    tree = compose(base).cfg
    comp = verl_base.composition_of(tree)
    raw = verlref.flatten(OmegaConf.to_container(tree, resolve=False))
    resets = []
    user_keys = {t.lstrip("+~").split("=", 1)[0] for t in user}
    for key, ours in raw.items():
        if key in user_keys or key not in verlref.keys(comp) or (isinstance(ours, str) and "${" in ours):
            continue
        theirs = verlref.defaults(comp).get(key)
        if theirs != ours and not (isinstance(theirs, str) and "${" in theirs):
            resets.append(f"{key}={hydra_value(theirs)}")
    out = list(base) + resets
    for tok in user:
        key = tok.split("=", 1)[0]
        if not tok.startswith(("+", "~")) and "=" in tok and key not in raw:
            tok = "+" + tok  # verl's own tree has it (or it is unknown: FC102 names the closest key)
        out.append(tok)
    for tok, line in cmd.unresolved:
        key = tok.lstrip("+~").split("=", 1)[0]
        notes.append(Finding("FC107", "info", [key], f"line {line}: `{tok}` holds a shell variable or command "
                             "that only the shell can expand; it was not checked (verl's default was used)",
                             f"set it in the script as a literal (VAR=value) or check with {key}=VALUE"))
    for arg in cmd.other_args:
        notes.append(Finding("FC107", "info", [], f"line {cmd.line}: option `{arg}` (a different verl config?) "
                             "is not interpreted; the check assumes verl's ppo_trainer config",
                             "check the overrides on verl's default config only"))
    return out, lines, notes


def check_run_script(path: Path) -> list[Checked]:
    """Check every ``python -m verl.trainer.main_ppo`` command of a run script (one :class:`Checked` each).

    Raises:
        UsageError: the file does not exist or holds no such command.
    """
    from fsdpcfg.compose import compose
    from fsdpcfg.compose.provenance import Source

    path = Path(path)
    if not path.is_file():
        raise UsageError(f"no such file: {path}")
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"cannot read {path}: {e}") from None
    cmds = parse_run_script(text)
    if not cmds:
        raise UsageError(f"{path}: no `python -m verl.trainer.main_ppo ...` command found",
                         fix="give a shell script that runs verl.trainer.main_ppo, a YAML file, or overrides")
    out = []
    for cmd in cmds:
        label = f"{path}:{cmd.line}"
        try:
            overrides, lines, notes = script_overrides(cmd)
            composed = compose(overrides)
        except ConfigError as e:
            out.append(Checked(label, [compose_error_finding(e)]))
            continue
        except Exception as e:  # Hydra/OmegaConf errors that are not ConfigError: still a finding
            out.append(Checked(label, [unexpected_compose_finding(e, [o for o, _ in cmd.overrides])]))
            continue
        for key, line in lines.items():
            composed.provenance.record(key, Source("file", f"{path}:{line}"))
        composed.script_notes = notes  # reported by rule FC107
        out.append(Checked(label, check_config(composed), composed))
    return out
