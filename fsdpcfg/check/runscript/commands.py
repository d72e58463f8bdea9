"""Commands of the bash evaluator that tree-sitter-bash reads oddly or that read other text
(:mod:`fsdpcfg.check.runscript.bash`): an assignment split from its value, ``source FILE``, a command cut by
``\\ # comment``, ``(( ))``, ``read VAR <<EOF``; and arithmetic hidden from the grammar before parsing."""

from __future__ import annotations

import os
import re

from fsdpcfg.check.runscript.expand import Expander
from fsdpcfg.check.runscript.fork import Forker
from fsdpcfg.check.runscript.operations import parser
from fsdpcfg.check.runscript.words import _F, Word, _State

_MAX_SOURCED = 32


def _hide_arithmetic(text: str, start: int = 0) -> tuple[str, dict[str, str]]:
    """tree-sitter-bash cannot read ``$(( ))`` inside ``${X:-...}`` (``${X:-$(((A + B) * 2))}``): each such
    arithmetic expansion is replaced by the command substitution ``$(__arithN)`` on the same line, and the
    returned table gives its expression back (:meth:`Expander.substitution` evaluates it)."""
    out: list[str] = []
    table: dict[str, str] = {}
    depth = 0  # open `${`
    i = 0
    while i < len(text):
        if text.startswith("${", i):
            depth += 1
        elif text[i] == "}" and depth:
            depth -= 1
        elif depth and text.startswith("$((", i):
            j, level = i + 3, 2
            while j < len(text) and level:
                level += {"(": 1, ")": -1}.get(text[j], 0)
                j += 1
            expr = text[i + 3 : j - 2]
            if level == 0 and "\n" not in expr:
                key = f"__arith{start + len(table)}"
                table[key] = expr
                out.append(f"$({key})")
                i = j
                continue
        out.append(text[i])
        i += 1
    return "".join(out), table


class Commands(Expander, Forker):
    """Command methods of the evaluator; it sets ``stdin``, ``sourced`` and defines ``statement``/``assign``."""

    stdin: _F | None
    sourced: int

    def statement(self, node, st: _State) -> bool | None:  # bash._Evaluator.statement
        raise NotImplementedError

    def assign(self, node, st: _State) -> None:  # bash._Evaluator.assign
        raise NotImplementedError

    def _assign_name(self, node) -> str:  # bash._Evaluator._assign_name
        raise NotImplementedError

    def _split_assignment(self, node, name_node, st: _State) -> bool:
        """``P=$A/$B/f``: tree-sitter-bash reads ``P=$A/$`` as an assignment prefix and ``B/f`` as a command
        name. When the name touches the assignment and nothing follows, bash reads one assignment: do it
        and return True."""
        kids = [c for c in node.named_children if c.type == "variable_assignment"]
        args = node.children_by_field_name("argument")
        if name_node is None or not kids or kids[-1].end_byte != name_node.start_byte:
            return False
        group = [name_node] + [a for a in args if a.start_byte == name_node.end_byte]
        if len(group) <= len(args):  # words after it: a command after all
            return False
        for c in kids[:-1]:
            self.assign(c, st)
        last = kids[-1]
        value = last.child_by_field_name("value")
        parts = ([value] if value is not None else []) + [
            n.named_children[0] if n.type == "command_name" else n for n in group
        ]
        fs = self.joined(parts, st, quoted=True, assignment=True)
        f = fs[0] if fs else _F("")
        name = self._assign_name(last)
        st.vars[name] = [Word(f.text, self.line(node), f.unknown, f.env)]
        st.arrays.discard(name)
        return True

    def _source(self, path: Word, st: _State) -> bool:
        """``source FILE``/``. FILE``: read FILE's statements into this script's state, as bash does (FILE
        as given, else next to the script); False when it cannot be known or found. Nothing in it runs."""
        if not path.known or self.sourced >= _MAX_SOURCED:
            return False
        here = os.path.dirname(self.script_path)
        found = next(
            (p for p in (path.text, os.path.join(here, path.text)) if os.path.isfile(p)),
            None,
        )
        if found is None:
            return False
        try:
            text = open(found, encoding="utf-8").read()
        except (OSError, UnicodeDecodeError):
            return False
        text, arith = _hide_arithmetic(text, start=len(self.arith))
        self.arith.update(arith)
        src = text.encode()
        tree = parser().parse(src)
        saved = self.src
        self.src, self.sourced = src, self.sourced + 1
        try:
            for child in tree.root_node.named_children:
                if child.type == "ERROR" or child.has_error:
                    break
                self.statement(child, st)
        finally:
            self.src, self.sourced = saved, self.sourced - 1
        return True

    def _cut_words(self, node) -> list[Word]:
        """The words bash reads from ``\\ # comment`` after a command: tree-sitter-bash reads a comment there, but
        the backslash quotes the blank, so bash passes `` #`` and the comment's words as arguments, and the
        command ends at that line (the continuation lines after it are commands of their own)."""
        nxt = node.next_sibling
        if nxt is None or nxt.type != "comment" or nxt.start_point[0] != node.end_point[0]:
            return []
        gap = self.src[node.end_byte : nxt.start_byte].decode(errors="replace")
        m = re.fullmatch(r"[ \t]*\\ ([ \t]*)", gap)
        if m is None:
            return []
        line = self.line(nxt)
        if m.group(1):
            return [Word(" ", line)]
        tokens = self.text(nxt).split()
        return [Word(" " + tokens[0], line)] + [Word(t, line) for t in tokens[1:]]

    def arith_command(self, node, st: _State) -> bool | None:
        """``(( EXPR ))``: status 0 when EXPR is not 0; ``(( X = E ))``/``+=`` ... set X."""
        inner = [c for c in node.named_children if c.type != "comment"]
        if not inner:
            return None
        expr = inner[0]
        op_node = expr.child_by_field_name("operator") if expr.type == "binary_expression" else None
        op = self.text(op_node) if op_node is not None else ""
        if op in ("=", "+=", "-=", "*=", "/="):
            name = self.text(expr.child_by_field_name("left"))
            right = self.arith_node(expr.child_by_field_name("right"), st)
            cur = self.arith_node(expr.child_by_field_name("left"), st) if op != "=" else 0
            if right is None or cur is None:
                st.vars[name] = [Word(f"${name}", self.line(node), (f"`{self.text(node)}` on an unknown value",))]
                return None
            value = {"=": right, "+=": cur + right, "-=": cur - right, "*=": cur * right}.get(op)
            if op == "/=" and right == 0:
                self.arith_error(node, f"`{self.text(node)}`: division by 0")
            if op == "/=":
                value = int(cur / right) if right else None
            if value is None:
                return None
            st.vars[name] = [Word(str(value), self.line(node))]
            st.arrays.discard(name)
            return value != 0
        v = self.arith_node(expr, st)
        return None if v is None else v != 0

    def read_heredoc(self, argv: list[Word], node, st: _State) -> bool | None:
        """``read [-r] [-d ''] VAR... <<EOF``: the variables take the here-document's text (all of it with
        ``-d ''``, else its first line), split on white space over the names as ``read`` does."""
        body = self.stdin
        assert body is not None
        names: list[str] = []
        whole, raw = False, False
        i = 0
        while i < len(argv):
            t = argv[i].text
            if t == "-d" and i + 1 < len(argv):
                whole = argv[i + 1].text == ""
                i += 2
                continue
            if t.startswith("-"):
                raw = raw or "r" in t
            else:
                names.append(t)
            i += 1
        text = body.text if whole else body.text.split("\n", 1)[0]
        if not raw:
            text = text.replace("\\\n", "")
        parts = text.split(None, max(len(names) - 1, 0)) if names else []
        for j, name in enumerate(names or ["REPLY"]):
            value = parts[j].strip() if j < len(parts) else ""
            st.vars[name] = [Word(value, self.line(node), body.unknown, body.env)]
            st.arrays.discard(name)
        return not whole  # `read -d ''` reaches the end of input: status 1 (hence `|| true`)


def _to_stdout(redirect: str) -> bool:
    """A redirection that takes a command's standard output away (``>/dev/null``, ``&>f``, ``1>f``)."""
    r = redirect.strip()
    return r.startswith(("&>", ">", "1>")) and not r.startswith(">&2")


def _silent(argv: list[Word]) -> bool:
    """A probe that prints nothing: ``python3 -c 'import torch_npu'`` (only imports)."""
    a = [w.text for w in argv]
    return (
        len(a) == 3
        and re.fullmatch(r"python[0-9.]*", os.path.basename(a[0])) is not None
        and a[1] == "-c"
        and re.fullmatch(r"\s*(import [\w., ]+|from [\w.]+ import [\w., ]+)\s*;?\s*", a[2]) is not None
    )
