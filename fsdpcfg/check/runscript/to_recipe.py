"""Write one verl command of a run script as a declarative fsdpcfg recipe (``fsdpcfg import``).

The command is the one :func:`fsdpcfg.check.runscript.translate.translate` turns into compose overrides for
``fsdpcfg check SCRIPT`` (nothing in the script runs): its group options become the recipe's Hydra defaults list
(``override /launcher: verl``), every key it sets (and every key reset to verl 0.9.1's default where fsdpcfg's
differs) a nested YAML key in verl's name, with the value Hydra gives the override (parsed by Hydra's own
``OverridesParser``), a ``# run.sh:LINE`` comment and, when it has one, the script's own comment for that line.
A value the script computes (``${MINI_BS}``, ``$((A / 4))``) is written as its value beside the script's text; a
value read from the environment is noted, a secret-looking one written as ``${oc.env:NAME}``.

What a recipe cannot hold (a ``~key`` deletion, a value the reader cannot know: FC107, a group option fsdpcfg's
tree does not model: FC108, a setting of Hydra itself) is listed in the file's header and in
:attr:`ImportedRecipe.dropped`, never dropped silently. Keys of an older verl are moved to their verl 0.9.1 home with
the table ``fsdpcfg check --fix`` uses (:mod:`fsdpcfg.rules.legacy_keys`), each move listed.

Composing the recipe (``+recipe=FILE``) gives the config ``compose(translation.overrides)`` gives, for a command
with no FC107/FC108 note (``tests/cli/test_import.py``).
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from fsdpcfg.check.runscript.translate import Translation, key_of, translate
from fsdpcfg.check.runscript.verl_cmd import TRAINERS, VerlCommand
from fsdpcfg.check.runscript.words import Evaluation, Word

#: OmegaConf's "no value" (``???``): merged from a recipe it keeps the value below, so a recipe cannot set it.
MISSING = "???"
#: notes of the translation that name what the recipe cannot hold (the rest are findings of the check).
_DROPPED_RULES = ("FC107", "FC108")


@dataclass
class ImportedRecipe:
    """The recipe text of one verl command and what the import did.

    Attributes:
        text: the recipe (YAML with a ``# @package _global_`` header and a Hydra defaults list).
        translation: the translation it was written from (of the command with its legacy keys migrated).
        dropped: what the recipe cannot hold, one line each (``run.sh:12 `~a.b`: a deletion ...``).
        migrated: each legacy key moved (``run.sh:20 reward_model.reward_manager -> reward.reward_manager.name``).
        entry: the verl module the command runs (after a removed module's replacement).
        origin: the command's place, ``run.sh:41`` (`` [DEVICE=gpu]`` added for a path of the script).
    """

    text: str
    translation: Translation
    dropped: list[str] = field(default_factory=list)
    migrated: list[str] = field(default_factory=list)
    entry: str = ""
    origin: str = ""


@dataclass
class _Leaf:
    value: Any
    comment: str = ""


def import_command(
    vc: VerlCommand,
    ev: Evaluation,
    script: Path,
    *,
    label: str = "",
    variant: str = "",
    recipe_path: Path | None = None,
) -> ImportedRecipe:
    """Return the recipe of one trainer command ``vc`` (``kind`` ``ppo`` or ``sft``, or a removed trainer module
    :mod:`fsdpcfg.rules.legacy_keys` replaces) of the evaluation ``ev`` of ``script``.

    ``label`` names the command in the translation's notes (default ``script:LINE``); ``variant`` is the label of
    the path of the script it was read on (``DEVICE=gpu``), written in the header; ``recipe_path`` is where the
    recipe will be written (the header's check and run commands name it).

    Raises:
        ValueError: ``vc`` runs no trainer fsdpcfg imports (``vc.kind == "other"``).
        ConfigError: composing the base tree fails (:func:`~fsdpcfg.check.runscript.translate.translate`).
    """
    from fsdpcfg.compose import groups

    script = Path(script)
    label = label or f"{script}:{vc.line}"
    vc, migrated, dropped = _migrate(vc, script)
    if vc.kind not in ("ppo", "sft"):
        raise ValueError(f"{vc.entry} is not a trainer fsdpcfg imports (verl.trainer.main_ppo, sft_trainer)")
    tr = translate(vc, ev, script, label)
    try:
        source_lines = script.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        source_lines = []
    words = {key_of(w.text): w for w in vc.overrides if w.known and "=" in w.text}
    group_names = set(groups(vc.kind)) | {"recipe"} | ({"optim"} if vc.kind == "sft" else set())
    resets = set(tr.resets)
    unknown = set(tr.unknown_keys)
    extends: list[str] = []
    options: dict[str, str] = {}
    tree: dict[str, Any] = {}
    reset_items: list[tuple[str, Any]] = []
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parser = OverridesParser.create()
    for tok in tr.overrides:
        if not tok.strip():
            continue  # an empty word ("${@:1}" with no arguments): no override
        try:
            (o,) = parser.parse_overrides([tok])
        except Exception as e:  # Hydra's OverrideParseException: verl's Hydra refuses the word too
            where = _where(tr.lines.get(key_of(tok), ""), script)
            dropped.append(f"{where} `{tok}`: not a Hydra override ({str(e).splitlines()[0]})")
            continue
        key = o.key_or_group
        if o.is_delete():
            where = _where(tr.lines.get(key, ""), script)
            dropped.append(f"{where} `{tok}`: a deletion cannot be written in a recipe (`~` is Hydra's command line's)")
            continue
        if o.package is None and "." not in key and key in group_names and isinstance(o.value(), str):
            if key == "recipe":
                extends.append(str(o.value()))
            else:
                options[key] = str(o.value())
            continue
        if key in unknown:
            continue  # a stand-in for a value the reader cannot know (FC107): listed below, not written
        value = o.value()
        if value == MISSING:
            dropped.append(_missing_note(key, tr, script, key in resets))
            continue
        if key in resets:
            reset_items.append((key, value))
            continue
        comment, value = _comment(key, value, tr, words.get(key), script, source_lines)
        _put(tree, key.split("."), _Leaf(value, comment))
    for key, value in reset_items:
        _put(tree, key.split("."), _Leaf(value, "verl's default (fsdpcfg's own differs)"), only_new=True)
    dropped += _dropped_notes(tr, vc, script, label)
    head = _header(script, vc, variant, recipe_path, dropped, migrated, ev)
    lines = [*head, "defaults:"]
    lines += [f"  - {name}" for name in extends]
    lines += [f"  - override /{g}: {opt}" for g, opt in options.items()]
    lines += ["  - _self_", ""]
    lines += _emit(tree, 0)
    origin = f"{script}:{vc.line}" + (f" [{variant}]" if variant else "")
    return ImportedRecipe("\n".join(lines).rstrip("\n") + "\n", tr, dropped, migrated, vc.entry, origin)


def _migrate(vc: VerlCommand, script: Path) -> tuple[VerlCommand, list[str], list[str]]:
    """``vc`` with its legacy keys moved to verl 0.9.1's (and a removed trainer module replaced), as
    :func:`fsdpcfg.check.fix.fix_script` rewrites them: ``(command, moves done, keys left out)``. A key whose
    target the command also sets, or that has no 0.9.1 home, is not moved (the second kind is listed)."""
    from fsdpcfg.rules import legacy_keys as L

    migrated: list[str] = []
    dropped: list[str] = []
    moves, config = L.REWARD_MOVES + L.RENAMES, "ppo"
    removed = L.removed_module(vc.entry)
    if removed is not None:
        if removed.moves:
            moves, config = removed.moves, "sft"
        migrated.append(f"{script.name}:{vc.line} {vc.entry} -> {removed.replacement}")
        vc = dataclasses.replace(vc, entry=removed.replacement, kind=TRAINERS.get(removed.replacement, "other"))
    present = {key_of(w.text) for w in vc.overrides if w.known and "=" in w.text}
    out: list[Word] = []
    for w in vc.overrides:
        key = key_of(w.text)
        t = L.target(key, moves, config) if w.known and "=" in w.text and not w.text.startswith("~") else None
        if t is None:
            out.append(w)
            continue
        if t.key is None:
            dropped.append(f"{script.name}:{w.line} `{w.text}`: {t.move.note or 'verl 0.9.1 has no such key'}")
            continue
        if t.key in present:
            dropped.append(f"{script.name}:{w.line} `{w.text}`: not moved, {t.key} is also set in the command")
            continue
        value = w.text.split("=", 1)[1]
        out.append(dataclasses.replace(w, text=f"{'+' if t.plus else ''}{t.key}={value}"))
        present.add(t.key)
        migrated.append(f"{script.name}:{w.line} {key} -> {t.key}")
    return dataclasses.replace(vc, overrides=out), migrated, dropped


def _missing_note(key: str, tr: Translation, script: Path, reset: bool) -> str:
    """The line of :attr:`ImportedRecipe.dropped` for a key whose value is ``???`` (no value)."""
    from fsdpcfg.verlref import VERL_VERSION

    where = f"verl {VERL_VERSION}'s default" if reset else f"{_where(tr.lines.get(key, ''), script)} sets it"
    return (
        f"{key}: {where} is ??? (no value: verl refuses to start without one); a recipe cannot unset a key, so "
        f"fsdpcfg's own value stands (give {key}=VALUE)"
    )


def _where(line_ref: str, script: Path) -> str:
    """``tests/x/run.sh:12`` -> ``run.sh:12`` (another file, ``command line``: as given)."""
    head = f"{script}:"
    return script.name + ":" + line_ref[len(head) :] if line_ref.startswith(head) else line_ref or script.name


def _comment(key: str, value: Any, tr: Translation, w: Word | None, script: Path, source: list[str]) -> tuple[str, Any]:
    """The comment of one key the script sets (where, the script's text of a computed value, the environment it
    read, the script's own comment on that line) and its value (a secret from the environment as ``${oc.env:X}``)."""
    from fsdpcfg.secrets import is_secret_name, secret_shapes

    parts = [_where(tr.lines.get(key, ""), script)]
    text = source[w.line - 1] if w is not None and 0 < w.line <= len(source) else ""
    if w is not None and text:
        written = _word_at(text, key)
        if written is not None and ("$" in written or "`" in written):
            parts[0] += f" (script: {written.split('=', 1)[1]})"
    for e in w.env if w is not None else ():
        name, _, env_value = e.partition("=")
        if is_secret_name(name) or secret_shapes(env_value, key):
            if isinstance(value, str) and env_value and env_value in value:
                value = value.replace(env_value, "${oc.env:" + name + "}")
            parts.append(f"${name} from the environment, written as ${{oc.env:{name}}}")
        else:
            parts.append(f"${name} from the environment ({name}={env_value})")
    own = _own_comment(text)
    if own:
        parts.append(own)
    return "; ".join(parts), value


def _word_at(line: str, key: str) -> str | None:
    """The script's text of the word that sets ``key`` on a source line (``key=${MINI_BS}``), or None when the
    key is not written literally there (built from a variable)."""
    m = re.search(rf"(?<![\w.+~])[+~]*{re.escape(key)}=", line)
    if m is None:
        return None
    return line[m.start() : _word_end(line, m.end())]


def _word_end(line: str, i: int) -> int:
    """Where the word from ``i`` ends for display: at a blank or an unmatched ``)`` outside quotes."""
    quote, depth = "", 0
    while i < len(line):
        c = line[i]
        if quote:
            if c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c in "({":
            depth += 1
        elif c in ")}":
            if depth == 0:
                return i
            depth -= 1
        elif c.isspace() and depth == 0:
            return i
        i += 1
    return i


def _own_comment(line: str) -> str:
    """The comment the script writes at the end of a source line (``# tuned for 8 GPUs``), "" when none (a ``#``
    starts a comment at the start of a word outside quotes, as in bash)."""
    quote = ""
    for i, c in enumerate(line):
        if quote:
            if c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or line[i - 1] in " \t"):
            return line[i + 1 :].strip()
    return ""


def _put(tree: dict[str, Any], path: list[str], leaf: _Leaf, *, only_new: bool = False) -> None:
    """Set ``path`` in the nested ``tree`` as Hydra's ``OmegaConf.update(merge=True)`` would: a mapping value is
    merged into a section the tree has, a later key below a mapping value expands it."""
    node = tree
    for part in path[:-1]:
        child = node.get(part)
        if isinstance(child, _Leaf):
            if not isinstance(child.value, dict):
                if only_new:
                    return
                child = {}  # a key below a scalar: the later override wins (Hydra would refuse it)
            else:
                child = {k: _Leaf(v, child.comment) for k, v in child.value.items()}
            node[part] = child
        elif child is None:
            child = node[part] = {}
        node = child
    last = path[-1]
    old = node.get(last)
    if only_new and old is not None:
        return
    if isinstance(leaf.value, dict) and leaf.value and isinstance(old, dict):
        for k, v in leaf.value.items():
            _put(old, [k], _Leaf(v, leaf.comment))
        return
    if isinstance(leaf.value, dict) and not leaf.value and isinstance(old, dict):
        return  # merging {} changes nothing
    node[last] = leaf


def _scalar(value: Any) -> str:
    """One value as YAML on one line (flow style for lists and mappings)."""
    if isinstance(value, float) and math.isnan(value):
        return ".nan"
    out = yaml.safe_dump(value, default_flow_style=True, width=1 << 30, allow_unicode=True).rstrip("\n")
    return out.removesuffix("\n...").removesuffix("...").rstrip("\n")


def _emit(tree: dict[str, Any], depth: int) -> list[str]:
    out = []
    pad = "  " * depth
    for k, node in tree.items():
        name = _scalar(k)
        if isinstance(node, dict):
            out += [f"{pad}{name}:", *_emit(node, depth + 1)] if node else [f"{pad}{name}: {{}}"]
            continue
        comment = f"  # {node.comment}" if node.comment else ""
        out.append(f"{pad}{name}: {_scalar(node.value)}{comment}")
    return out


def _dropped_notes(tr: Translation, vc: VerlCommand, script: Path, label: str) -> list[str]:
    """What the translation could not turn into keys of the recipe: values the reader cannot know (FC107), group
    options fsdpcfg does not model (FC108), settings of Hydra itself."""
    out = []
    for n in tr.notes:
        hydra = n.rule == "FC124" and "setting of Hydra itself" in n.message
        if n.rule not in _DROPPED_RULES and not hydra:
            continue
        msg = n.message.removeprefix(f"{label}: ")
        msg = re.sub(r"; ([\w.\-@/]+) was not checked \(verl's default stands in\)", r"; \1 not written", msg)
        out.append(f"{script.name}:{vc.line}: {msg}" + ("" if n.rule == "FC107" else "; not written"))
    return out


def _header(
    script: Path,
    vc: VerlCommand,
    variant: str,
    recipe_path: Path | None,
    dropped: list[str],
    migrated: list[str],
    ev: Evaluation,
) -> list[str]:
    from fsdpcfg.secrets import is_secret_name

    launchers = {"torchrun": "torchrun -m", "ray job submit": "ray job submit -- python -m"}
    launcher = launchers.get(vc.launcher, "python -m")
    out = [
        "# @package _global_",
        f"# Imported by `fsdpcfg import` from {script}, line {vc.line}: {launcher} {vc.entry}"
        + (f" [{variant}]" if variant else ""),
        "# Keys are verl's, with the values bash gives them (nothing was run); `# "
        f"{script.name}:LINE` says where each is set.",
    ]
    if recipe_path is not None:
        out += [f"#   Check: fsdpcfg check {recipe_path}", f"#   Run:   python -m fsdpcfg +recipe={recipe_path}"]
    env = [
        f"{name}" if is_secret_name(name) else f"{name}={value}"
        for name, (value, _line) in sorted(ev.env_used.items())
        if _line <= max(vc.line, *(w.line for w in vc.overrides))
    ]
    if env:
        out.append("# Environment variables the script read: " + ", ".join(env))
    if migrated:
        out.append("# Legacy verl keys moved to verl 0.9.1's (as `fsdpcfg check --fix` does):")
        out += [f"#   - {m}" for m in migrated]
    if dropped:
        out.append("# NOT in this recipe (a recipe cannot hold it; give it on the command line or edit the file):")
        out += [f"#   - {d}" for d in dropped]
    return out
