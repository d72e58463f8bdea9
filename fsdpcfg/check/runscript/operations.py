"""Operations of the bash evaluator on what a word holds (:mod:`fsdpcfg.check.runscript.expand` builds on them):
command substitutions (never run: a few path functions, ``cat <<EOF`` and ``echo`` along a path are computed,
anything else is unknown), here-documents, arithmetic on known integers and the tests of ``[ ]``/``[[ ]]``/
``test``; the source helpers (node text and line) and tree-sitter's parser."""

from __future__ import annotations

import fnmatch
import os
import re

from fsdpcfg.check.runscript.words import _F, Note, Word, _Abort, _Exit, _State

_PARSER = None


def parser():
    """tree-sitter's bash parser (made once per process)."""
    global _PARSER
    if _PARSER is None:
        import tree_sitter
        import tree_sitter_bash

        _PARSER = tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))
    return _PARSER


#: node types that begin with ``$`` (or a backquote): tree-sitter-bash may attach the white space before them
_EXPANSIONS = frozenset(
    {"simple_expansion", "expansion", "command_substitution", "arithmetic_expansion", "process_substitution"}
)


class Operations:
    """The evaluator's operations below word expansion; it sets ``src``, ``environ``, ``extra``, ``script_path``,
    ``notes``, ``env_used``, ``uses_args``, ``in_test``, ``in_case``, ``arith``, ``capture``, ``conditional`` and
    defines the expansion methods (:class:`fsdpcfg.check.runscript.expand.Expander`) and ``statement``."""

    src: bytes
    environ: dict[str, str]
    extra: list[str]
    script_path: str
    notes: list[Note]
    env_used: dict[str, tuple[str, int]]
    uses_args: bool
    in_test: bool
    in_case: bool
    arith: dict[str, str]
    capture: list[_F] | None
    conditional: list[str]  # why the statement being read may not run (bash._Evaluator; control.Control)

    def fields(self, node, st: _State, quoted: bool, pattern: bool = False, assignment: bool = False) -> list[_F]:
        raise NotImplementedError  # expand.Expander

    def scalar(self, node, st: _State, pattern: bool = False, assignment: bool = False) -> Word:
        raise NotImplementedError  # expand.Expander

    def words(self, node, st: _State) -> list[Word]:
        raise NotImplementedError  # expand.Expander

    def lookup(self, name: str, st: _State, node, index: str | None = None) -> list[Word] | None:
        raise NotImplementedError  # expand.Expander

    def statement(self, node, st: _State) -> bool | None:
        raise NotImplementedError  # bash._Evaluator

    # ---- helpers ---------------------------------------------------------------------------------------
    def start(self, node) -> int:
        """The byte where ``node`` begins. tree-sitter-bash puts the white space that separates two expansions
        inside a double-quoted string into the second one (``"$A $B"`` parses as ``$A`` and `` $B``, the
        second's ``$`` token being `` $``); that space is the string's own text, so an expansion starts after it.
        """
        start = node.start_byte
        if node.type in _EXPANSIONS:
            while start < node.end_byte and self.src[start : start + 1] in (b" ", b"\t", b"\n", b"\r"):
                start += 1
        return start

    def text(self, node) -> str:
        return self.src[self.start(node) : node.end_byte].decode(errors="replace")

    def note(self, node, kind: str, message: str) -> None:
        n = Note(node.start_point[0] + 1, kind, message)
        if n not in self.notes:
            self.notes.append(n)

    @staticmethod
    def line(node) -> int:
        return node.start_point[0] + 1

    def substitution(self, node, st: _State) -> _F:
        """``$(...)``/backticks: never run. ``dirname``/``basename``/``realpath``/``readlink -f`` and
        ``cd DIR && pwd`` are computed from their arguments; anything else is unknown."""
        text = self.text(node)
        hidden = self.arith.get(text[2:-1]) if text.startswith("$(__arith") else None
        if hidden is not None:  # `${X:-$((A*B))}`: see bash._hide_arithmetic
            text = f"$(({hidden}))"
        if text.startswith("$((") and text.endswith("))"):
            v = self.arith_text(text[3:-2], st)
            if v is not None:
                return _F(str(v))
            return _F(text, (f"`{text}` is arithmetic on a value the check cannot know",))
        unknown = _F(text, (f"`{text}` is a command substitution (the check runs no command)",))
        body = [c for c in node.named_children if c.type != "comment"]
        if len(body) != 1:
            return unknown
        cmd = body[0]
        if cmd.type == "redirected_statement":
            doc = next((c for c in cmd.children if c.type == "heredoc_redirect"), None)
            doc_argv = self._simple_argv(_unredirected(cmd), st) or []
            if doc is not None and [w.text for w in doc_argv] == ["cat"]:
                out = self.heredoc(doc, st)
                return _F(out.text.rstrip("\n"), out.unknown, out.env)  # $( ) drops the final newlines
            return unknown
        if cmd.type == "list" and len(cmd.children) == 3 and self.text(cmd.children[1]) == "&&":
            first, second = (_unredirected(c) for c in (cmd.children[0], cmd.children[2]))
            a = [w for w in self._simple_argv(first, st) or [] if w.text != "--"]
            b = self._simple_argv(second, st)
            if a and b and a[0].text == "cd" and len(a) == 2 and [w.text for w in b] == ["pwd"] and a[1].known:
                return _F(os.path.abspath(a[1].text), (), a[1].env)
        if cmd.type in ("list", "if_statement", "case_statement", "compound_statement") and self.forking():  # type: ignore[attr-defined]
            return self.captured(cmd, st, unknown)
        if cmd.type == "list":
            return unknown
        argv = self._simple_argv(cmd, st)
        if not argv or any(not w.known for w in argv):
            return unknown
        name, args = argv[0].text, [w.text for w in argv[1:]]
        env = tuple(e for w in argv for e in w.env)
        if name == "dirname" and len(args) == 1:
            return _F(os.path.dirname(args[0].rstrip("/")) or ".", (), env)
        if name == "basename" and len(args) in (1, 2):
            base = os.path.basename(args[0].rstrip("/"))
            if len(args) == 2 and base.endswith(args[1]) and base != args[1]:
                base = base[: -len(args[1])]
            return _F(base, (), env)
        if (name == "realpath" and len(args) == 1) or (name == "readlink" and args[:1] == ["-f"] and len(args) == 2):
            return _F(os.path.abspath(args[-1]), (), env)
        return unknown

    def captured(self, cmd, st: _State, unknown: _F) -> _F:
        """What ``$( cmd )`` prints when only ``echo`` prints in it (``probe && echo npu || echo gpu``): each
        path the check cannot choose between is a choice point of its own (fork.Forker), so the result is
        known along each; ``unknown`` when another command may print."""
        saved = self.capture
        self.capture = []
        try:
            self.statement(cmd, st.copy())
        except _Exit:
            pass
        except _Abort:  # $( ) is a subshell: an arithmetic error ends it, not the script
            return unknown
        finally:
            out, self.capture = self.capture, saved
        if any(f.unknown for f in out):
            return unknown
        f = _F("")
        for g in out:
            f = f + g
        return _F(f.text.rstrip("\n"), (), f.env)

    def heredoc(self, node, st: _State) -> _F:
        """The text a ``<<EOF`` here-document gives its command: expanded as in double quotes unless the
        delimiter is quoted (``<<'EOF'``); ``<<-`` strips leading tabs."""
        start = next((c for c in node.children if c.type == "heredoc_start"), None)
        body = next((c for c in node.children if c.type == "heredoc_body"), None)
        if body is None:
            return _F("")
        quoted = start is not None and any(ch in self.text(start) for ch in "'\"\\")
        strip = any(c.type == "<<-" for c in node.children)
        if quoted:
            out = _F(self.src[body.start_byte : body.end_byte].decode())
        else:
            out = _F("")
            pos = body.start_byte
            for c in body.named_children:
                if c.type == "heredoc_content":
                    continue
                if self.start(c) > pos:
                    out = out + _F(_unescape_heredoc(self.src[pos : self.start(c)].decode()))
                for f in self.fields(c, st, quoted=True):
                    out = out + f
                pos = c.end_byte
            if body.end_byte > pos:
                out = out + _F(_unescape_heredoc(self.src[pos : body.end_byte].decode()))
        if strip:
            out = _F("\n".join(x.lstrip("\t") for x in out.text.split("\n")), out.unknown, out.env)
        return out

    def _simple_argv(self, node, st: _State) -> list[Word] | None:
        if node.type != "command" or any(c.type == "variable_assignment" for c in node.named_children):
            return None
        name = node.child_by_field_name("name")
        if name is None:
            return None
        argv = self.words(name, st)
        for a in node.children_by_field_name("argument"):
            argv.extend(self.words(a, st))
        return argv

    # ---- arithmetic and tests --------------------------------------------------------------------------
    def arith_text(self, expr: str, st: _State) -> int | None:
        """Evaluate the text of an arithmetic expression (parsed on its own as ``$(( expr ))``)."""
        src = f"echo $(( {expr} ))\n".encode()
        tree = parser().parse(src)
        found = [None]

        def find(n) -> None:
            if n.type == "arithmetic_expansion" and found[0] is None:
                found[0] = n
            for c in n.children:
                find(c)

        find(tree.root_node)
        node = found[0]
        if node is None or not node.named_children or tree.root_node.has_error:
            return None
        saved = self.src
        self.src = src
        try:
            return self.arith_node(node.named_children[0], st)
        finally:
            self.src = saved

    def arith_node(self, node, st: _State) -> int | None:
        """Evaluate an arithmetic expression on known integers; ``None`` when any operand is unknown."""
        if node is None:
            return None
        t = node.type
        if t == "number":
            try:
                return int(self.text(node), 0)
            except ValueError:
                return None
        if t in ("variable_name", "word"):
            name = self.text(node)
            if name.lstrip("-").isdigit():
                return int(name)
            vals = self.lookup(name, st, node)
            if vals is None:
                return 0
            return _int(vals[0]) if vals else 0
        if t in ("simple_expansion", "expansion", "string", "concatenation", "command_substitution"):
            w = self.scalar(node, st)
            return _int(w)
        if t == "parenthesized_expression":
            inner = node.named_children
            return self.arith_node(inner[0], st) if inner else None
        if t == "unary_expression":
            op = self.text(node.children[0])
            v = self.arith_node(node.named_children[-1], st)
            if v is None:
                return None
            return {"-": -v, "+": v, "!": int(not v), "~": ~v}.get(op)
        if t == "binary_expression":
            a = self.arith_node(node.child_by_field_name("left"), st)
            b = self.arith_node(node.child_by_field_name("right"), st)
            op = self.text(node.child_by_field_name("operator"))
            if a is None or b is None:
                return None
            if op in ("/", "%") and b == 0:
                self.arith_error(node, f"`{self.text(node)}`: division by 0")
                return None
            if op == "**" and b < 0:
                self.arith_error(node, f"`{self.text(node)}`: exponent less than 0")
                return None
            try:
                return _wrap(_ARITH[op](a, b))
            except (KeyError, ZeroDivisionError, ValueError):
                return None
        if t == "ternary_expression":
            kids = node.named_children
            c = self.arith_node(kids[0], st)
            if c is None or len(kids) < 3:
                return None
            return self.arith_node(kids[1] if c else kids[2], st)
        return None

    def arith_error(self, node, message: str) -> None:
        """An arithmetic error bash reports (``division by 0``, ``exponent less than 0``): where the statement
        surely runs, bash abandons it (:class:`~fsdpcfg.check.runscript.words._Abort`); in a branch the check cannot
        decide, the caller makes the value unknown."""
        if not self.conditional:
            raise _Abort(self.line(node), message)

    def test(self, node, st: _State) -> bool | None:
        """``[ EXPR ]`` / ``[[ EXPR ]]``: True/False when the operands are known, else None."""
        double = self.text(node).startswith("[[")
        exprs = node.named_children
        if not exprs:
            return False
        self.in_test = True  # in a test, an unset variable is the empty string, as bash has it
        try:
            return self.test_expr(exprs[0], st, double)
        finally:
            self.in_test = False

    def test_expr(self, node, st: _State, double: bool) -> bool | None:
        t = node.type
        if t == "parenthesized_expression":
            return self.test_expr(node.named_children[0], st, double) if node.named_children else None
        if t == "unary_expression":
            op = self.text(node.children[0])
            operand = node.named_children[-1]
            if op == "!":
                v = self.test_expr(operand, st, double)
                return None if v is None else not v
            w = self.scalar(operand, st)
            if op == "-v":
                return w.text in st.vars or w.text in self.environ
            if not w.known:
                return None
            if op == "-z":
                return w.text == ""
            if op == "-n":
                return w.text != ""
            return None  # file tests (-f, -d, -e ...) are about the machine that runs the script
        if t == "binary_expression":
            op = self.text(node.child_by_field_name("operator"))
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            if op in ("&&", "-a", "||", "-o"):
                a = self.test_expr(left, st, double)
                if op in ("&&", "-a") and a is False:
                    return False
                if op in ("||", "-o") and a is True:
                    return True
                b = self.test_expr(right, st, double)
                if a is None or b is None:
                    return None if b is None or (op in ("&&", "-a") and b) or (op in ("||", "-o") and not b) else b
                return (a and b) if op in ("&&", "-a") else (a or b)
            pattern = double and right.type not in ("string", "raw_string") and op in ("==", "!=", "=")
            lw, rw = self.scalar(left, st), self.scalar(right, st, pattern=pattern)
            if not lw.known or not rw.known:
                return None
            return _compare(lw.text, op, rw.text, pattern)
        w = self.scalar(node, st)
        return None if not w.known else w.text != ""

    def _test_argv(self, args: list[Word]) -> bool | None:
        if any(not w.known for w in args):
            return None
        a = [w.text for w in args]
        neg = False
        if a and a[0] == "!":
            neg, a = True, a[1:]
        if len(a) == 1:
            r: bool | None = a[0] != ""
        elif len(a) == 2 and a[0] in ("-z", "-n"):
            r = (a[1] == "") == (a[0] == "-z")
        elif len(a) == 3:
            r = _compare(a[0], a[1], a[2], False)
        else:
            r = None
        return None if r is None else (r != neg)


def _div(a: int, b: int) -> int:
    """C's integer division, truncated toward zero (bash's ``/``), exact on 64-bit values."""
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _wrap(v: int) -> int:
    """``v`` as bash's 64-bit signed arithmetic holds it (it wraps around)."""
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >= 1 << 63 else v


#: bash's arithmetic operators on 64-bit integers (``**`` and ``<<`` reduced modulo 2**64 as they go, so that
#: ``2**10**9`` costs what bash's does)
_ARITH = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": lambda a, b: _div(a, b),
    "%": lambda a, b: a - b * _div(a, b),
    "**": lambda a, b: pow(a, b, 1 << 64),
    "<": lambda a, b: int(a < b),
    ">": lambda a, b: int(a > b),
    "<=": lambda a, b: int(a <= b),
    ">=": lambda a, b: int(a >= b),
    "==": lambda a, b: int(a == b),
    "!=": lambda a, b: int(a != b),
    "&&": lambda a, b: int(bool(a and b)),
    "||": lambda a, b: int(bool(a or b)),
    "<<": lambda a, b: (a << (b & 63)) & ((1 << 64) - 1),
    ">>": lambda a, b: a >> (b & 63),
    "&": lambda a, b: a & b,
    "|": lambda a, b: a | b,
    "^": lambda a, b: a ^ b,
}


def _compare(a: str, op: str, b: str, pattern: bool) -> bool | None:
    if op in ("=", "=="):
        return fnmatch.fnmatchcase(a, b) if pattern else a == b
    if op == "!=":
        return not fnmatch.fnmatchcase(a, b) if pattern else a != b
    if op == "=~":
        try:
            return re.search(b, a) is not None
        except re.error:
            return None
    if op in ("<", ">"):
        return a < b if op == "<" else a > b
    ints = {
        "-eq": lambda x, y: x == y,
        "-ne": lambda x, y: x != y,
        "-lt": lambda x, y: x < y,
        "-le": lambda x, y: x <= y,
        "-gt": lambda x, y: x > y,
        "-ge": lambda x, y: x >= y,
    }
    if op in ints:
        try:
            return ints[op](int(a), int(b))
        except ValueError:
            return None
    return None


def _unredirected(node):
    """``cd DIR >/dev/null 2>&1`` -> the ``cd DIR`` command (output redirections do not change its result)."""
    if node.type == "redirected_statement" and node.child_by_field_name("body") is not None:
        return node.child_by_field_name("body")
    return node


def _int(w: Word) -> int | None:
    if not w.known:
        return None
    try:
        return int(w.text.strip() or "0", 0)
    except ValueError:
        return None


def _unescape_heredoc(raw: str) -> str:
    """In an unquoted here-document a backslash quotes only ``$ ` \\`` and a newline (not ``"``)."""
    return re.sub(r"\\([$`\\\n])", lambda m: "" if m.group(1) == "\n" else m.group(1), raw)
