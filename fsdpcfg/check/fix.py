"""``fsdpcfg check --fix`` / ``--diff``: rewrite what has exactly one right answer, as ``ruff --fix`` does.

What is rewritten: a key of an older verl whose verl 0.9.1 home is known (:mod:`fsdpcfg.rules.legacy_keys`,
rule FC701: ``reward_model.reward_manager`` -> ``reward.reward_manager.name``, ``+reward_model.reward_kwargs.X``
-> ``+reward.reward_kwargs.X``), and a removed trainer module (FC708: ``verl.trainer.main_ppo_sync`` ->
``verl.trainer.main_ppo``; ``fsdp_sft_trainer`` -> ``sft_trainer`` with its keys mapped, only when every key
maps). Nothing else: a key with no home, a key whose target is already set to something else in the same
command, a key built from a variable are left for the user (the check still reports them).

How: a run script's override words are edited in place on their own line (the key's literal text; the rest of
the line, quotes, comments and continuation backslashes stay); a YAML file's lines are edited (the legacy line
removed, the value's own text written under the target section, comments elsewhere kept), never re-dumped, and
the edited YAML must load to exactly the migrated tree or nothing is written. Writes go through
:func:`fsdpcfg.paths.atomic_write_text` with the file's permission bits, so an error leaves the original.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from fsdpcfg import keypath
from fsdpcfg.rules import legacy_keys as L


@dataclass
class Fix:
    """The rewrite of one file.

    Attributes:
        path: the file.
        old: its text; new: the rewritten text (equal when nothing has one right answer).
        applied: ``old -> new`` per rewrite, for the report.
        left: what was not rewritten, with why.
    """

    path: Path
    old: str
    new: str
    applied: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)

    def diff(self) -> str:
        """The unified diff of the rewrite (empty when nothing changes)."""
        return "".join(
            difflib.unified_diff(
                self.old.splitlines(keepends=True),
                self.new.splitlines(keepends=True),
                f"a/{self.path}",
                f"b/{self.path}",
            )
        )

    def write(self) -> bool:
        """Write the rewrite atomically, keeping the file's permission bits; False when nothing changes.

        Raises:
            OSError: the file cannot be written (the original is left as it was).
        """
        from fsdpcfg.paths import atomic_write_text

        if self.new == self.old:
            return False
        atomic_write_text(self.path, self.new, mode=self.path.stat().st_mode & 0o7777)
        return True


def fix_file(path: Path) -> Fix:
    """The rewrite of a YAML file (``.yaml``/``.yml``) or of a run script (anything else).

    Raises:
        OSError, UnicodeDecodeError: the file cannot be read.
    """
    path = Path(path)
    with open(path, newline="") as fh:  # the line ends as written: a rewrite keeps each line's own
        raw = fh.read()
    text = raw.replace("\r\n", "\n")
    fix = fix_yaml(text, path) if path.suffix in (".yaml", ".yml") else fix_script(text, path)
    if text == raw:
        return fix
    return Fix(path, raw, _line_ends_of(raw, fix.new), fix.applied, fix.left)


def _line_ends_of(raw: str, new: str) -> str:
    """``new`` (a rewrite of ``raw`` read with Unix line ends) with ``raw``'s line ends put back: each line its own
    when the rewrite kept the line count, else CRLF throughout when ``raw`` had it throughout (a CRLF script is
    FC133's; ``--fix`` rewrites keys, it does not convert the rest of the file)."""
    old_lines = raw.split("\n")
    new_lines = new.split("\n")
    if len(old_lines) == len(new_lines):
        return "\n".join(n + "\r" if o.endswith("\r") else n for o, n in zip(old_lines, new_lines, strict=True))
    if all(line.endswith("\r") for line in old_lines[:-1]):
        return new.replace("\n", "\r\n")
    return new


# -- run scripts ----------------------------------------------------------------------------------------------


def _key_re(key: str) -> re.Pattern[str]:
    """The literal ``[+|++]key=`` of an override word, not inside a longer key."""
    return re.compile(rf"(?<![\w.+])(\+{{0,2}}){re.escape(key)}(?==)")


def fix_script(text: str, path: Path = Path("run.sh")) -> Fix:
    """Rewrite the legacy keys and removed trainer modules of a run script's verl commands (module docstring)."""
    from fsdpcfg.check.sources import parse_run_script

    out = Fix(path, text, text)
    lines = text.splitlines(keepends=True)
    _, cmds = parse_run_script(text, args=[], script_path=str(path))
    for vc in cmds:
        removed = L.removed_module(vc.entry)
        moves, config = (L.REWARD_MOVES + L.RENAMES, "ppo")
        if removed is not None and removed.moves:
            moves, config = removed.moves, "sft"
        edits: list[tuple[int, re.Pattern[str], str, str]] = []  # (line, pattern, replacement, label)
        words = [(w, w.text.partition("=")[0]) for w in vc.overrides if w.known and not w.cli and "=" in w.text]
        present = {k.lstrip("+~") for _, k in words}
        unmapped = []
        for w, raw in words:
            key = raw.lstrip("+")
            t = L.target(key, moves, config)
            if t is None:
                continue
            if t.key is None:
                unmapped.append(f"{path}:{w.line} {key}: {t.move.note or 'no verl 0.9.1 key'}")
                continue
            if t.key in present:
                out.left.append(f"{path}:{w.line} {key}: {t.key} is also set in the command")
                continue
            edits.append((w.line, _key_re(key), ("+" if t.plus else "") + t.key, f"{key} -> {t.key}"))
            present.add(t.key)
        out.left += unmapped
        if removed is not None and removed.moves and unmapped:
            out.left.append(f"{path}:{vc.line} {vc.entry}: not rewritten, some of its keys have no verl 0.9.1 key")
            continue
        if removed is not None:
            module = re.compile(rf"(){re.escape(vc.entry)}(?![\w.])")
            last = min([w.line for w in vc.overrides if w.line] or [vc.line])  # the module is before its overrides
            at = [n for n in range(vc.line, last + 1) if 0 < n <= len(lines) and module.search(lines[n - 1])]
            edits.append(
                (
                    at[0] if len(at) == 1 else vc.line,
                    module,
                    removed.replacement,
                    f"{vc.entry} -> {removed.replacement}",
                )
            )
        for line, pat, new, what in edits:
            i = line - 1
            if not 0 <= i < len(lines) or len(pat.findall(lines[i])) != 1:
                out.left.append(f"{path}:{line} {what}: not written literally on its line (a variable?)")
                continue
            m = pat.search(lines[i])
            assert m is not None
            repl = "++" + new.lstrip("+") if m.group(1) == "++" else new  # `++` adds or sets: right either way
            lines[i] = lines[i][: m.start()] + repl + lines[i][m.end() :]
            out.applied.append(f"{path}:{line} {what}")
    out.new = "".join(lines)
    return out


# -- YAML files -----------------------------------------------------------------------------------------------


@dataclass
class _Leaf:
    key: str
    k: Any  # the key's yaml node
    v: Any  # the value's yaml node
    chain: list[tuple[Any, Any]]  # (key node, mapping node) of each ancestor section, outermost first


def _leaves(node: Any, path: tuple[str, ...] = (), chain: list[tuple[Any, Any]] | None = None):
    chain = chain or []
    for k, v in node.value:
        p = (*path, str(k.value))
        if isinstance(v, yaml.MappingNode) and v.value:
            yield from _leaves(v, p, [*chain, (k, v)])
        else:
            yield _Leaf(".".join(p), k, v, chain)


def _sections(node: Any, path: tuple[str, ...] = ()):
    """``{dotted section: mapping node}`` of a YAML document (the root is ``""``)."""
    out = {".".join(path): node}
    for k, v in node.value:
        if isinstance(v, yaml.MappingNode):
            out.update(_sections(v, (*path, str(k.value))))
    return out


def _last_line(node: Any) -> int:
    """0-based index of the last line a node's text occupies (a block section's last value, not the blank lines
    and comments after it, which PyYAML counts into the section)."""
    if isinstance(node, yaml.MappingNode) and node.value and not node.flow_style:
        return _last_line(node.value[-1][1])
    if isinstance(node, yaml.SequenceNode) and node.value and not node.flow_style:
        return _last_line(node.value[-1])
    end = node.end_mark
    return end.line - 1 if end.column == 0 else end.line


def fix_yaml(text: str, path: Path = Path("config.yaml")) -> Fix:
    """Move the legacy keys of a YAML recipe or config to their verl 0.9.1 keys by editing lines (module
    docstring); the result is checked to load to the migrated tree, else nothing changes."""
    from fsdpcfg import yamlio

    out = Fix(path, text, text)
    try:
        data = yamlio.load(text)
        before = keypath.flatten(data) if isinstance(data, dict) and data else {}
    except Exception:
        return out
    expected = dict(before)
    root0 = yaml.compose(text, Loader=yaml.SafeLoader)
    line_of = {lf.key: lf.k.start_mark.line + 1 for lf in _leaves(root0)} if isinstance(root0, yaml.MappingNode) else {}
    new_text = text
    done: set[str] = set()
    while True:
        root = yaml.compose(new_text, Loader=yaml.SafeLoader)
        if not isinstance(root, yaml.MappingNode):
            break
        leaf = t = None
        for lf in _leaves(root):
            if lf.key in done:
                continue
            tt = L.target(lf.key)
            if tt is None or isinstance(lf.v, yaml.ScalarNode) and lf.v.tag.endswith(":null"):
                continue
            leaf, t = lf, tt
            break
        if leaf is None or t is None:
            break
        done.add(leaf.key)
        if t.key is None:
            out.left.append(f"{path}:{line_of.get(leaf.key)} {leaf.key}: {t.move.note or 'no verl 0.9.1 key'}")
            continue
        moved = _move(new_text, leaf, t.key)
        if moved is None:
            out.left.append(f"{path}:{line_of.get(leaf.key)} {leaf.key}: not a one-line value in a block mapping")
            continue
        new_text = moved
        value = expected.pop(leaf.key)
        expected[t.key] = value
        done.add(t.key)
        out.applied.append(f"{path}:{line_of.get(leaf.key)} {leaf.key} -> {t.key}")
    if out.applied:
        try:
            data = yamlio.load(new_text)
            got = keypath.flatten(data) if isinstance(data, dict) and data else {}
        except Exception:
            got = None
        if got != expected:
            out.left.append(f"{path}: the rewritten YAML would not load to the migrated config; nothing written")
            out.applied = []
            return out
    out.new = new_text
    return out


def _move(text: str, leaf: _Leaf, new: str) -> str | None:
    """``text`` with ``leaf`` moved to the dotted key ``new`` by editing lines, or None when that cannot be done
    safely (a flow-style section, a value over several lines, a target that is a scalar or already set)."""
    k, v = leaf.k, leaf.v
    row = k.start_mark.line
    if not isinstance(v, yaml.ScalarNode) or v.start_mark.line != row or v.end_mark.line != row:
        return None
    if any(m.flow_style for _, m in leaf.chain):
        return None
    lines = text.splitlines(keepends=True)
    if lines[row][: k.start_mark.column].strip():
        return None  # `- key: v` or several keys on the line
    value_text = lines[row][v.start_mark.column : v.end_mark.column]
    comment = lines[row][v.end_mark.column :].rstrip("\r\n")
    if comment.strip().startswith("#"):
        value_text += comment  # the value's own comment moves with it
    # the lines to delete: the leaf, and each ancestor whose section holds nothing else
    first = row
    for key_node, mapping in reversed(leaf.chain):
        if len(mapping.value) != 1:
            break
        first = key_node.start_mark.line
    del lines[first : row + 1]
    if 0 < first < len(lines) and not lines[first - 1].strip() and not lines[first].strip():
        del lines[first]  # a removed section leaves one blank line, not two
    stripped = "".join(lines)
    root = yaml.compose(stripped, Loader=yaml.SafeLoader) if stripped.strip() else None
    secs = _sections(root) if isinstance(root, yaml.MappingNode) else {"": None}
    parts = new.split(".")
    depth = max(i for i in range(len(parts)) if ".".join(parts[:i]) in secs)
    node = secs[".".join(parts[:depth])]
    if ".".join(parts[: depth + 1]) in _flat_keys(root):
        return None  # the target (or a scalar on its way) is set already
    if node is None:
        at, indent = len(lines), 0
    else:
        if node.flow_style:
            return None
        indent = node.value[0][0].start_mark.column if node.value else 0
        at = _last_line(node.value[-1][1]) + 1 if node.value else len(lines)
    if at > 0 and at <= len(lines) and not lines[at - 1].endswith("\n"):
        lines[at - 1] += "\n"
    step = 2
    block = [f"{' ' * (indent + step * j)}{p}:\n" for j, p in enumerate(parts[depth:-1])]
    block.append(f"{' ' * (indent + step * (len(parts) - 1 - depth))}{parts[-1]}: {value_text}\n")
    lines[at:at] = block
    return "".join(lines)


def _flat_keys(root: Any) -> set[str]:
    if not isinstance(root, yaml.MappingNode):
        return set()
    return {lf.key for lf in _leaves(root)}
