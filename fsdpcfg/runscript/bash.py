"""Evaluate a bash run script into the commands bash would run, without running anything.

The script is parsed by tree-sitter's bash grammar (``tree-sitter-bash``: a complete grammar of bash, arrays,
``case``, ``[[ ]]`` and ``$(( ))`` included) and its syntax tree is walked here. Only the script's own text is
read: no command runs (a command substitution ``$(...)`` is not run but marked unknown; ``cd X && pwd``,
``dirname``, ``basename``, ``realpath`` are computed as string functions of their arguments), no file is read
or written (redirections are ignored, ``source`` is not followed), no network is touched.

What is evaluated:

- assignments (``=``, ``+=``, arrays ``A=(...)``, ``A+=(...)``, ``A[i]=x``), ``export``/``local``/``declare``/
  ``readonly``, ``unset``, env-prefix assignments (``VAR=x python3 ...``, for that command only);
- parameter expansion: ``$X``, ``${X}``, ``${X:-d}``, ``${X-d}``, ``${X:=d}``, ``${X=d}``, ``${X:+a}``,
  ``${X:?msg}``, ``${#X}``, ``${X#p}``/``##``/``%``/``%%``, ``${X/a/b}`` (literal ``a``), ``${X:o:l}``,
  ``${X^^}``/``${X,,}``, ``"${A[@]}"``, ``${A[*]}``, ``${A[i]}``, ``${#A[@]}``; ``$((...))`` on known integers;
  word splitting of unquoted expansions; ``~``;
- positional arguments ``$1``..., ``$#``, ``shift``, ``set --`` (given as ``args``; ``None`` means "not given":
  ``${1:-x}`` then takes ``x``, as ``bash run.sh`` would, and a bare ``$1`` or ``$#`` is unknown); ``"$@"``/``$*``
  expand to the remaining positional arguments followed by ``extra`` (the overrides given after the script on
  the check's command line);
- variables the script does not set are taken from ``environ`` (the environment of the check), each use noted;
- ``if``/``elif``/``else``, ``case`` (``;;``, ``;&``, ``;;&``), ``&&``/``||``, ``[ ]``/``[[ ]]``/``test`` (string,
  integer and pattern tests), ``for x in LIST``, functions (with ``local`` and ``return``), subshells and
  pipelines (their assignments do not persist), ``exit``, ``exec``.

A condition the check cannot know (a file test, a command's exit status, an unknown value) takes no guess:
every branch is read (the commands in each are returned, marked conditional), and after the construct a
variable the branches left with different values is unknown (a :class:`Note` says so). A path that ends in
``exit`` does not continue. ``while``/``until`` loops are read as "not run or run once" in the same way.
"""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass, field
from typing import Iterable, Mapping, Optional

#: builtins that always succeed and change nothing the check reads (not reported as commands).
_INERT = frozenset({"echo", "printf", "set", ":", "true"})
_MAX_DEPTH = 32


@dataclass(frozen=True)
class Word:
    """One argument of a command as bash would pass it.

    Attributes:
        text: the value; for an unknown value, the script's text of it (e.g. ``$(nproc)``).
        line: the 1-based script line where the word was written (an array element: its own line in the array);
            0 for a word given on the check's command line.
        unknown: why the value cannot be known without running the shell (empty when it is known).
        env: ``NAME=value`` of each environment variable of the check the value was taken from.
        cli: the word is one of the overrides given after the script on the check's command line.
    """

    text: str
    line: int
    unknown: tuple[str, ...] = ()
    env: tuple[str, ...] = ()
    cli: bool = False

    @property
    def known(self) -> bool:
        return not self.unknown


@dataclass
class Command:
    """A simple command the script runs: ``argv`` after expansion, the line its name is on, the env-prefix
    assignments (``VAR=x cmd``), and ``conditional``: why the check cannot tell whether it runs (empty when it
    runs whenever the script reaches it)."""

    argv: list[Word]
    line: int
    prefix: dict[str, Word] = field(default_factory=dict)
    conditional: str = ""
    uses_args: bool = False  # one of its words is "$@" or $*


@dataclass(frozen=True)
class Note:
    """Something the evaluation could not follow or took from outside the script: ``kind`` is ``"condition"``
    (a condition that cannot be known), ``"skipped"`` (a construct not evaluated: ``source``, ``eval``, a loop),
    or ``"exit"`` (the script stops there)."""

    line: int
    kind: str
    message: str


@dataclass
class Evaluation:
    """The result of :func:`evaluate`: the commands in the order bash would run them, the notes, every
    environment variable read (``{name: (value, first line)}``), the line of a syntax error (0 when none)."""

    commands: list[Command]
    notes: list[Note]
    env_used: dict[str, tuple[str, int]]
    syntax_error_line: int = 0


@dataclass
class _F:
    """A field under construction (joined across a concatenation)."""

    text: str
    unknown: tuple[str, ...] = ()
    env: tuple[str, ...] = ()
    line: int = 0
    cli: bool = False

    def __add__(self, o: "_F") -> "_F":
        return _F(self.text + o.text, _union(self.unknown, o.unknown), _union(self.env, o.env), self.line or o.line,
                  self.cli or o.cli)


def _union(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, ...]:
    return a + tuple(x for x in b if x not in a)


def _join(a: list[_F], b: list[_F]) -> list[_F]:
    if not a:
        return b
    if not b:
        return a
    return a[:-1] + [a[-1] + b[0]] + b[1:]


class _Exit(Exception):
    """The script (or a subshell) stops here."""


class _Return(Exception):
    """A function returns."""


@dataclass
class _State:
    vars: dict[str, list[Word]]
    arrays: set[str]
    args: Optional[list[Word]]
    exited: bool = False

    def copy(self) -> "_State":
        return _State(dict(self.vars), set(self.arrays), None if self.args is None else list(self.args), self.exited)


def _parser():
    import tree_sitter
    import tree_sitter_bash

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


def evaluate(text: str, *, args: Optional[list[str]] = None, extra: Iterable[str] = (),
             environ: Optional[Mapping[str, str]] = None, script_path: str = "run.sh") -> Evaluation:
    """Evaluate the bash script ``text`` without running it.

    Args:
        text: the script.
        args: its positional arguments (``$1``...), or ``None`` when none were given (then ``${1:-x}`` is ``x``
            and a bare ``$1`` or ``$#`` is unknown).
        extra: words added where the script writes ``"$@"``/``$*`` after its remaining arguments (the overrides
            given after the script on the check's command line).
        environ: the environment variables a script may read (``os.environ`` of the check when ``None``).
        script_path: what ``$0`` and ``${BASH_SOURCE[0]}`` hold (the script's path as given to the check).

    Returns:
        An :class:`Evaluation`. A syntax error is not raised: the evaluation stops before the broken statement
        and ``syntax_error_line`` names its line.
    """
    src = text.encode()
    tree = _parser().parse(src)
    ev = _Evaluator(src, dict(os.environ if environ is None else environ), [str(x) for x in extra], script_path)
    state = _State({}, set(), None if args is None else [Word(a, 0) for a in args])
    error_line, error_byte = _first_error(tree.root_node)
    try:
        for child in tree.root_node.named_children:
            if error_line and child.start_byte >= error_byte:
                break
            if child.type == "ERROR" or child.has_error:
                # the statements before the broken one still run in bash
                for c in child.named_children if child.type == "ERROR" else []:
                    if c.end_byte <= error_byte and not c.has_error:
                        ev.statement(c, state)
                break
            ev.statement(child, state)
    except _Exit:
        pass
    return Evaluation(ev.commands, ev.notes, ev.env_used, error_line)


def _first_error(node) -> tuple[int, int]:
    """(line, byte offset) where bash's grammar first fails to read the script; (0, 0) when it reads it all."""
    if not node.has_error:
        return 0, 0
    stack = [node]
    while stack:
        n = stack.pop(0)
        if n.is_missing:
            return n.start_point[0] + 1, n.start_byte
        if n.type == "ERROR":
            for c in n.children:
                if c.is_named and not c.has_error and c.type in _STATEMENTS:
                    continue  # a complete statement the error node swallowed
                return c.start_point[0] + 1, c.start_byte
            return n.start_point[0] + 1, n.start_byte
        stack = [c for c in n.children if c.has_error or c.is_missing or c.type == "ERROR"] + stack
    return node.start_point[0] + 1, node.start_byte


_STATEMENTS = frozenset({"command", "variable_assignment", "variable_assignments", "declaration_command",
                         "redirected_statement", "pipeline", "list", "if_statement", "case_statement",
                         "for_statement", "while_statement", "function_definition", "comment", "subshell",
                         "compound_statement", "unset_command", "negated_command", "test_command"})


class _Evaluator:
    def __init__(self, src: bytes, environ: dict[str, str], extra: list[str], script_path: str) -> None:
        self.src = src
        self.environ = environ
        self.extra = extra
        self.script_path = script_path
        self.commands: list[Command] = []
        self.notes: list[Note] = []
        self.env_used: dict[str, tuple[str, int]] = {}
        self.functions: dict[str, object] = {}
        self.conditional: list[str] = []  # stack of reasons the current branch may not run
        self.locals: list[dict[str, tuple[Optional[list[Word]], bool]]] = []
        self.depth = 0
        self.uses_args = False
        self.in_test = False

    # ---- helpers ---------------------------------------------------------------------------------------
    def text(self, node) -> str:
        return self.src[node.start_byte:node.end_byte].decode(errors="replace")

    def note(self, node, kind: str, message: str) -> None:
        n = Note(node.start_point[0] + 1, kind, message)
        if n not in self.notes:
            self.notes.append(n)

    @staticmethod
    def line(node) -> int:
        return node.start_point[0] + 1

    # ---- statements ------------------------------------------------------------------------------------
    def statement(self, node, st: _State) -> Optional[bool]:
        """Evaluate one statement; return its exit status (True: 0, False: non-zero, None: not known)."""
        if st.exited:
            return None
        t = node.type
        if t in ("comment", "heredoc_body", ";", "&", "\n"):
            return True
        if t in ("program", "compound_statement", "do_group"):
            return self.block(node.named_children, st)
        if t == "variable_assignment":
            self.assign(node, st)
            return True
        if t == "variable_assignments":
            for c in node.named_children:
                self.assign(c, st)
            return True
        if t == "declaration_command":
            return self.declaration(node, st)
        if t == "unset_command":
            for c in node.named_children:
                name = self.text(c)
                self.set_var(st, name, None)
            return True
        if t == "redirected_statement":
            body = node.child_by_field_name("body")
            return self.statement(body, st) if body is not None else True
        if t == "command":
            return self.command(node, st)
        if t == "list":
            return self.and_or(node, st)
        if t == "pipeline":
            status = None
            for c in node.named_children:
                sub = st.copy()
                try:
                    status = self.statement(c, sub)
                except _Exit:
                    status = None
            return status
        if t == "subshell":
            sub = st.copy()
            try:
                return self.block(node.named_children, sub)
            except _Exit:
                return None
        if t == "negated_command":
            inner = [c for c in node.named_children]
            s = self.statement(inner[-1], st) if inner else None
            return None if s is None else not s
        if t in ("test_command",):
            return self.test(node, st)
        if t == "if_statement":
            return self.if_statement(node, st)
        if t == "case_statement":
            return self.case_statement(node, st)
        if t == "for_statement":
            return self.for_statement(node, st)
        if t in ("while_statement", "c_style_for_statement"):
            body = node.child_by_field_name("body")
            what = "a `for ((...))` loop" if t == "c_style_for_statement" else "a `while`/`until` loop"
            reason = f"line {self.line(node)}: inside {what} (it may run any number of times)"
            self.note(node, "condition", f"{what} is read as run once or not at all; a value it changes is "
                                         "not known after it")
            self.branches(node, st, [(body, reason)], include_none=True)
            return None
        if t == "function_definition":
            name = node.child_by_field_name("name")
            self.functions[self.text(name)] = node.child_by_field_name("body")
            return True
        self.note(node, "skipped", f"`{self.text(node).splitlines()[0][:60]}` ({t}) is not evaluated by the check")
        return None

    def block(self, nodes, st: _State) -> Optional[bool]:
        status: Optional[bool] = True
        for c in nodes:
            if st.exited:
                break
            status = self.statement(c, st)
        return status

    def and_or(self, node, st: _State) -> Optional[bool]:
        kids = node.children
        left, op, right = kids[0], self.text(kids[1]), kids[-1]
        s = self.statement(left, st)
        if s is None:
            reason = (f"line {self.line(node)}: after `{self.text(left)[:60]}`, whose result the check cannot know")
            self.note(node, "condition", f"`{self.text(left)[:60]}` cannot be known without running the shell; "
                                         f"`{self.text(right)[:60]}` is read as maybe run")
            self.branches(node, st, [(right, reason)], include_none=True)
            return None
        if (op == "&&" and s) or (op == "||" and not s):
            return self.statement(right, st)
        return s

    def branches(self, node, st: _State, bodies: list[tuple[object, str]], include_none: bool) -> None:
        """Read each of ``bodies`` (maybe run) from a copy of ``st``; then merge: a variable set differently
        by the paths that go on is unknown; when every path exits, the script exits."""
        outcomes: list[_State] = []
        if include_none:
            outcomes.append(st.copy())
        for body, reason in bodies:
            sub = st.copy()
            self.conditional.append(reason)
            try:
                if body is not None:
                    if isinstance(body, list):
                        self.block(body, sub)
                    else:
                        self.statement(body, sub)
            except _Exit:
                sub.exited = True
            finally:
                self.conditional.pop()
            outcomes.append(sub)
        going = [o for o in outcomes if not o.exited]
        if not going:
            st.exited = True
            raise _Exit()
        where = f"line {self.line(node)}"
        names = set().union(*(o.vars.keys() for o in going)) | set(st.vars)
        merged: dict[str, list[Word]] = {}
        arrays = set().union(*(o.arrays for o in going))
        for name in names:
            vals = [o.vars.get(name) for o in going]
            keys = [None if v is None else tuple((w.text, w.unknown) for w in v) for v in vals]
            if all(k == keys[0] for k in keys):
                if vals[0] is not None:
                    merged[name] = vals[0]
            elif name in arrays:
                merged[name] = _merge_arrays([v or [] for v in vals], f"set only in some branches, or differently, "
                                                                      f"of a construct the check cannot decide ({where})")
            else:
                merged[name] = [Word(f"${name}", self.line(node),
                                     (f"`{name}` is set differently by branches the check cannot choose "
                                      f"between ({where})",))]
        st.vars = merged
        st.arrays = arrays
        if any(o.args != going[0].args for o in going):
            st.args = None
        else:
            st.args = going[0].args

    def if_statement(self, node, st: _State) -> Optional[bool]:
        # clauses: (condition nodes, body nodes); else: (None, body nodes)
        clauses: list[tuple[Optional[list], list]] = []
        cond: list = []
        body: list = []
        mode = "cond"
        for c in node.children:
            t = c.type
            if t == "if":
                continue
            if t == "then":
                mode = "body"
                continue
            if t in ("elif_clause", "else_clause"):
                continue
            if t == "fi":
                break
            if not c.is_named:
                continue
            (cond if mode == "cond" else body).append(c)
        clauses.append((cond, body))
        for c in node.named_children:
            if c.type == "elif_clause":
                ccond, cbody, m = [], [], "cond"
                for x in c.children:
                    if x.type == "then":
                        m = "body"
                    elif x.is_named:
                        (ccond if m == "cond" else cbody).append(x)
                clauses.append((ccond, cbody))
            elif c.type == "else_clause":
                clauses.append((None, [x for x in c.named_children]))
        pending: list[tuple[object, str]] = []
        for ccond, cbody in clauses:
            if ccond is None:
                status: Optional[bool] = True
            else:
                status = self.block(ccond, st) if not pending else None
            if pending:
                # an earlier condition could not be known: this clause is one more maybe-branch
                what = "else" if ccond is None else f"`{' '.join(self.text(x) for x in ccond)[:60]}`"
                pending.append((cbody, f"line {self.line(node)}: in the branch {what} of an `if` the check "
                                       "cannot decide"))
                continue
            if status is True:
                return self.block(cbody, st)
            if status is None:
                text = " ".join(self.text(x) for x in ccond)[:80]
                self.note(node, "condition", f"the condition `{text}` cannot be known without running the shell; "
                                             "every branch was read, and a value the branches set differently is "
                                             "not known after the `if`")
                pending.append((cbody, f"line {self.line(node)}: in a branch of an `if` on `{text}`, which the "
                                       "check cannot decide"))
        if pending:
            has_else = clauses[-1][0] is None
            self.branches(node, st, pending, include_none=not has_else)
            return None
        return True

    def case_statement(self, node, st: _State) -> Optional[bool]:
        value = self.scalar(node.child_by_field_name("value"), st)
        items = [c for c in node.named_children if c.type == "case_item"]
        if not value.known:
            self.note(node, "condition", f"the `case` on `{value.text}` cannot be decided "
                                         f"({value.unknown[0]}); every branch was read")
            bodies = [(self._case_body(i), f"line {self.line(i)}: in a branch of a `case` on `{value.text}`, "
                                           "which the check cannot decide") for i in items]
            self.branches(node, st, bodies, include_none=True)
            return None
        falling = False
        for item in items:
            pats = [self.scalar(p, st, pattern=True) for p in item.children_by_field_name("value")]
            matched = falling
            if not matched:
                for p in pats:
                    if not p.known:
                        self.note(item, "condition", f"the `case` pattern `{p.text}` is not known; its branch "
                                                     "was not taken")
                        continue
                    if fnmatch.fnmatchcase(value.text, p.text):
                        matched = True
                        break
            if not matched:
                continue
            self.block(self._case_body(item), st)
            term = self._case_term(item)
            if term == ";&":
                falling = True
                continue
            if term == ";;&":
                falling = False
                continue
            return True
        return True

    @staticmethod
    def _case_body(item) -> list:
        kids = item.children
        start = next((i for i, c in enumerate(kids) if c.type == ")"), -1) + 1
        return [c for c in kids[start:] if c.is_named and c.type not in ("comment",)]

    @staticmethod
    def _case_term(item) -> str:
        for c in item.children:
            if c.type in (";;", ";&", ";;&"):
                return c.type
        return ";;"

    def for_statement(self, node, st: _State) -> Optional[bool]:
        var = self.text(node.child_by_field_name("variable"))
        values = node.children_by_field_name("value")
        body = node.child_by_field_name("body")
        words: list[Word] = []
        if values:
            for v in values:
                words.extend(self.words(v, st))
        else:
            words = self.all_args(st, node)
        if any(not w.known for w in words):
            self.note(node, "condition", f"the `for {var}` loop's list is not known; its body was read once, with "
                                         f"`{var}` unknown")
            sub_reason = f"line {self.line(node)}: inside a `for` loop over a list the check cannot know"
            st.vars[var] = [Word(f"${var}", self.line(node), ("the loop variable of a list the check cannot know",))]
            self.branches(node, st, [(body, sub_reason)], include_none=True)
            return None
        for w in words:
            st.vars[var] = [w]
            st.arrays.discard(var)
            self.statement(body, st)
        return True

    def declaration(self, node, st: _State) -> Optional[bool]:
        keyword = self.text(node.children[0])
        for c in node.named_children:
            if c.type == "variable_assignment":
                name = self._assign_name(c)
                if keyword in ("local", "declare", "typeset") and self.locals:
                    self._save_local(name, st)
                self.assign(c, st)
            elif c.type in ("variable_name", "word") and not self.text(c).startswith("-"):
                name = self.text(c)
                if keyword in ("local", "declare", "typeset") and self.locals:
                    self._save_local(name, st)
                    st.vars.pop(name, None)
        return True

    def _save_local(self, name: str, st: _State) -> None:
        frame = self.locals[-1]
        if name not in frame:
            frame[name] = (st.vars.get(name), name in st.arrays)

    def command(self, node, st: _State) -> Optional[bool]:
        name_node = node.child_by_field_name("name")
        prefix: dict[str, Word] = {}
        for c in node.named_children:
            if c.type == "variable_assignment":
                vals = self.assign_value(c, st)
                prefix[self._assign_name(c)] = vals[0] if vals else Word("", self.line(c))
        if name_node is None:
            return True
        argv = self.words(name_node, st)
        uses_before = self.uses_args
        self.uses_args = False
        for a in node.children_by_field_name("argument"):
            argv.extend(self.words(a, st))
        uses_args, self.uses_args = self.uses_args, uses_before
        if not argv:
            return True
        name = argv[0].text if argv[0].known else ""
        if name in self.functions and argv[0].known:
            return self.call(name, argv[1:], node, st)
        if name in ("exit", "return"):
            if name == "return" and self.locals:
                raise _Return()
            code = argv[1].text if len(argv) > 1 else "0"
            if not self.conditional:
                self.note(node, "exit", f"the script exits here (`{self.text(node)[:40]}`)")
            st.exited = True
            raise _Exit(code)
        if name == "shift":
            n = int(argv[1].text) if len(argv) > 1 and argv[1].known and argv[1].text.isdigit() else 1
            if st.args is not None:
                st.args = st.args[n:]
            return True
        if name == "set":
            rest = [w for w in argv[1:]]
            if rest and rest[0].text == "--":
                st.args = rest[1:]
            return True
        if name in ("source", "."):
            self.note(node, "skipped", f"`{self.text(node)[:60]}` is not followed (the check reads only this "
                                       "script); a value that file sets is not known")
            return None
        if name == "eval":
            self.note(node, "skipped", f"`{self.text(node)[:60]}` is not evaluated")
            return None
        if name == "read":
            for w in argv[1:]:
                if w.known and not w.text.startswith("-"):
                    st.vars[w.text] = [Word(f"${w.text}", self.line(node), (f"`{w.text}` is read from input",))]
            return None
        if name in ("test", "["):
            self.in_test = True
            try:
                args = [w for a in node.children_by_field_name("argument") for w in self.words(a, st)]
            finally:
                self.in_test = False
            return self._test_argv([w for w in args if w.text != "]"])
        if name == "true" or name == ":":
            return True
        if name == "false":
            return False
        if name == "exec" and len(argv) > 1:
            self._record(argv[1:], node, prefix, uses_args)
            if not self.conditional:
                st.exited = True
                raise _Exit("0")
            return None
        if name in ("export", "local", "declare", "readonly", "typeset"):
            return True
        if name in _INERT:
            return True
        self._record(argv, node, prefix, uses_args)
        return None

    def _record(self, argv: list[Word], node, prefix: dict[str, Word], uses_args: bool) -> None:
        self.commands.append(Command(argv, self.line(node), prefix, self.conditional[-1] if self.conditional else "",
                                     uses_args))

    def call(self, name: str, args: list[Word], node, st: _State) -> Optional[bool]:
        if self.depth >= _MAX_DEPTH:
            self.note(node, "skipped", f"`{name}` calls itself too deeply; the call was not followed")
            return None
        saved = st.args
        st.args = args
        self.depth += 1
        self.locals.append({})
        try:
            return self.statement(self.functions[name], st)
        except _Return:
            return None
        finally:
            frame = self.locals.pop()
            self.depth -= 1
            for var, (val, is_arr) in frame.items():
                self.set_var(st, var, val)
                if is_arr:
                    st.arrays.add(var)
            st.args = saved

    # ---- assignments -----------------------------------------------------------------------------------
    def _assign_name(self, node) -> str:
        n = node.child_by_field_name("name")
        if n is not None and n.type == "subscript":
            n = n.child_by_field_name("name")
        return self.text(n) if n is not None else self.text(node).split("=", 1)[0].rstrip("+")

    def set_var(self, st: _State, name: str, value: Optional[list[Word]]) -> None:
        if value is None:
            st.vars.pop(name, None)
            st.arrays.discard(name)
        else:
            st.vars[name] = value

    def assign_value(self, node, st: _State) -> list[Word]:
        value = node.child_by_field_name("value")
        if value is None:
            return [Word("", self.line(node))]
        if value.type == "array":
            out: list[Word] = []
            for el in value.named_children:
                if el.type != "comment":
                    out.extend(self.words(el, st))
            return out
        return [self.scalar(value, st, assignment=True)]

    def assign(self, node, st: _State) -> None:
        name_node = node.child_by_field_name("name")
        name = self._assign_name(node)
        op = next((self.text(c) for c in node.children if c.type in ("=", "+=")), "=")
        value = node.child_by_field_name("value")
        is_array = value is not None and value.type == "array"
        vals = self.assign_value(node, st)
        if name_node is not None and name_node.type == "subscript":
            index = self.arith_node(name_node.child_by_field_name("index"), st)
            cur = list(st.vars.get(name, []))
            if index is None or index < 0:
                st.vars[name] = [Word(f"${{{name}[@]}}", self.line(node), ("an array index the check cannot know",))]
                st.arrays.add(name)
                return
            while len(cur) <= index:
                cur.append(Word("", self.line(node)))
            cur[index] = vals[0]
            st.vars[name] = cur
            st.arrays.add(name)
            return
        if op == "+=":
            cur = list(st.vars.get(name, [])) or ([] if is_array else [Word("", self.line(node))])
            if is_array or name in st.arrays:
                st.vars[name] = cur + vals
                st.arrays.add(name)
            else:
                st.vars[name] = [_concat(cur[0], vals[0])]
            return
        st.vars[name] = vals
        if is_array:
            st.arrays.add(name)
        else:
            st.arrays.discard(name)

    # ---- words -----------------------------------------------------------------------------------------
    def words(self, node, st: _State) -> list[Word]:
        """Expand ``node`` into the fields bash would pass as arguments (word splitting included)."""
        line = self.line(node)
        return [Word(f.text, f.line or line, f.unknown, f.env, f.cli) for f in self.fields(node, st, quoted=False)]

    def scalar(self, node, st: _State, pattern: bool = False, assignment: bool = False) -> Word:
        """Expand ``node`` into one string (no word splitting, as in an assignment's value)."""
        fs = self.fields(node, st, quoted=True, pattern=pattern, assignment=assignment)
        if not fs:
            return Word("", self.line(node))
        f = fs[0]
        for g in fs[1:]:
            f = f + _F(" ") + g
        return Word(f.text, self.line(node), f.unknown, f.env, f.cli)

    def fields(self, node, st: _State, quoted: bool, pattern: bool = False, assignment: bool = False) -> list[_F]:
        t = node.type
        if t in ("word", "number", "extglob_pattern", "regex", "variable_name", "test_operator", "brace_expression",
                 "special_variable_name"):
            raw = self.text(node)
            if t == "word" and not quoted and raw.startswith("~") and (raw == "~" or raw.startswith("~/")):
                home = self.env("HOME", node)
                raw = home.text + raw[1:]
                return [_F(_unescape(raw, pattern), home.unknown, home.env)]
            if t == "word" and assignment and raw.startswith("~/"):
                home = self.env("HOME", node)
                return [_F(home.text + _unescape(raw[1:], pattern), home.unknown, home.env)]
            return [_F(_unescape(raw, pattern) if t in ("word",) else raw)]
        if t == "command_name":
            kids = node.named_children
            return self.fields(kids[0], st, quoted, pattern) if kids else [_F(self.text(node))]
        if t == "raw_string":
            return [_F(self.text(node)[1:-1])]
        if t == "ansi_c_string":
            return [_F(_ansi_c(self.text(node)[2:-1]))]
        if t in ("string", "translated_string"):
            return self.string(node, st)
        if t == "concatenation":
            out: list[_F] = []
            pos = node.start_byte
            for c in node.children:
                if c.start_byte > pos:  # text between parts (not a node of its own)
                    out = _join(out, [_F(self.src[pos:c.start_byte].decode())])
                out = _join(out, self.fields(c, st, quoted, pattern, assignment))
                pos = c.end_byte
            return out
        if t == "simple_expansion":
            name = self.text(node)[1:]
            return self.split(self.param(name, st, node), quoted, name in ("@", "*"))
        if t == "expansion":
            return self.expansion(node, st, quoted)
        if t == "command_substitution":
            return self.split([self.substitution(node, st)], quoted, False)
        if t == "arithmetic_expansion":
            inner = node.named_children[0] if node.named_children else None
            v = self.arith_node(inner, st) if inner is not None else 0
            if v is None:
                return [_F(self.text(node), (f"`{self.text(node)}` is arithmetic on a value the check cannot know",))]
            return [_F(str(v))]
        if t == "process_substitution":
            return [_F(self.text(node), (f"`{self.text(node)}` is a process substitution",))]
        return [_F(self.text(node), (f"`{self.text(node)}` ({t}) is not read by the check",))]

    def string(self, node, st: _State) -> list[_F]:
        """A double-quoted string: one field, except where ``"$@"`` or ``"${A[@]}"`` make several."""
        out: list[_F] = [_F("")]
        pos = node.start_byte + 1 if self.text(node).startswith('"') else node.start_byte
        if self.text(node).startswith('$"'):
            pos = node.start_byte + 2
        end = node.end_byte - 1
        for c in node.named_children:
            if c.start_byte > pos:
                out = _join(out, [_F(_unescape_dq(self.src[pos:c.start_byte].decode()))])
            if c.type == "string_content":
                out = _join(out, [_F(_unescape_dq(self.text(c)))])
            else:
                got = self.fields(c, st, quoted=True)
                if not got and _is_all_elements(self.text(c)):
                    # "$@" / "${A[@]}" with no elements: no field at all (unless other text joins it)
                    if len(node.named_children) == 1:
                        return []
                out = _join(out, got)
            pos = c.end_byte
        if end > pos:
            out = _join(out, [_F(_unescape_dq(self.src[pos:end].decode()))])
        return out

    def split(self, values: list[_F], quoted: bool, all_elements: bool) -> list[_F]:
        """Word splitting of an expansion's values: quoted ``"$@"``/``"${A[@]}"`` keep one field per element;
        quoted otherwise join with a space; unquoted split known values on whitespace."""
        if quoted:
            if all_elements:
                return values
            if not values:
                return [_F("")]
            f = values[0]
            for g in values[1:]:
                f = f + _F(" ") + g
            return [f]
        out: list[_F] = []
        for v in values:
            if v.unknown or v.cli:
                out.append(v)
            else:
                out.extend(_F(p, (), v.env, v.line) for p in v.text.split())
        return out

    def env(self, name: str, node) -> Word:
        """A variable the script does not set, from the environment of the check (its use recorded)."""
        if name in self.environ:
            value = self.environ[name]
            self.env_used.setdefault(name, (value, self.line(node)))
            return Word(value, self.line(node), (), (f"{name}={value}",))
        return Word(f"${name}", self.line(node),
                    (f"`${name}` is not set by the script nor in the environment of the check",))

    def all_args(self, st: _State, node) -> list[Word]:
        self.uses_args = True
        extra = [Word(x, 0, (), (), True) for x in self.extra]
        return (st.args or []) + extra

    def param(self, name: str, st: _State, node) -> list[_F]:
        """The values of parameter ``name`` (several for ``@``, ``*`` and arrays), [] when unset/empty."""
        vals = self.lookup(name, st, node)
        if vals is None:
            return self._unset(name, st, node)
        keep = name in ("@", "*")  # an element keeps its own line; a variable's value takes the word's
        return [_F(w.text, w.unknown, w.env, w.line if keep else 0, w.cli) for w in vals]

    def _unset(self, name: str, st: _State, node) -> list[_F]:
        """``$NAME`` that neither the script nor the environment sets: bash gives nothing, but the script's
        author meant a value, so it is unknown (not a guessed empty string)."""
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) and name not in st.vars and not self.in_test:
            return [_F(f"${name}", (f"`${name}` is not set by the script nor in the environment of the check",))]
        return []

    def lookup(self, name: str, st: _State, node, index: Optional[str] = None) -> Optional[list[Word]]:
        """Return the value(s) of ``name`` (``index`` ``@``/``*``: every element; a number: that element;
        None: element 0 of an array), ``None`` when unset; an unknown value as a list of one unknown Word."""
        line = self.line(node)
        if name in ("@", "*"):
            return self.all_args(st, node)
        if name == "#":
            if st.args is None:
                return [Word("$#", line, ("`$#`: the script's arguments were not given (check it with "
                                          "`fsdpcfg check SCRIPT -- ARGS`)",))]
            return [Word(str(len(st.args)), line)]
        if name.isdigit():
            i = int(name)
            if i == 0:
                return [Word(self.script_path, line)]
            if st.args is None:
                return [Word(f"${name}", line, (f"`${name}`: the script's positional argument was not given "
                                                "(check it with `fsdpcfg check SCRIPT -- ARGS`)",))]
            return [st.args[i - 1]] if i <= len(st.args) else None
        if name in ("?", "$", "!", "-"):
            return [Word(f"${name}", line, (f"`${name}` is only known when the shell runs",))]
        if name == "BASH_SOURCE":
            return [Word(self.script_path, line)]
        if name in ("RANDOM", "SECONDS", "LINENO", "PPID", "BASHPID", "EPOCHSECONDS"):
            return [Word(f"${name}", line, (f"`${name}` is only known when the shell runs",))]
        if name not in st.vars:
            w = self.env(name, node)
            return None if not w.known and name not in self.environ else [w]
        vals = st.vars[name]
        if index is None or name not in st.arrays:
            if index not in (None, "@", "*", "0"):
                return None
            return vals if index in ("@", "*") else vals[:1]
        if index in ("@", "*"):
            return vals
        try:
            i = int(index)
        except ValueError:
            return [Word(f"${{{name}[{index}]}}", line, ("an array index the check cannot know",))]
        return [vals[i]] if -len(vals) <= i < len(vals) else None

    def expansion(self, node, st: _State, quoted: bool) -> list[_F]:
        text = self.text(node)
        kids = [c for c in node.children if c.type not in ("${", "}")]
        name_i = next((i for i, c in enumerate(kids) if c.type in ("variable_name", "special_variable_name",
                                                                      "subscript")), None)
        if name_i is None:
            if re.fullmatch(r"\$\{[0-9]+\}", text):
                return self.split(self.param(text[2:-1], st, node), quoted, False)
            return [_F(text, (f"`{text}` is a parameter expansion the check does not read",))]
        prefix = "".join(self.text(c) for c in kids[:name_i])
        name_node = kids[name_i]
        index = None
        if name_node.type == "subscript":
            idx = name_node.child_by_field_name("index")
            index = self.text(idx)
            if index not in ("@", "*"):
                v = self.arith_node(idx, st)
                index = str(v) if v is not None else index
            name = self.text(name_node.child_by_field_name("name"))
        else:
            name = self.text(name_node)
        rest = kids[name_i + 1:]
        all_elements = index in ("@", "*") or name in ("@", "*")
        if prefix == "!":
            return [_F(text, (f"`{text}` is an indirect expansion the check does not read",))]
        vals = self.lookup(name, st, node, index)
        if vals is not None and not (all_elements and (name in st.arrays or name in ("@", "*"))):
            # a variable's value takes the line of the word it is expanded in; an array element keeps its own
            vals = [Word(w.text, 0, w.unknown, w.env, w.cli) for w in vals]
        if prefix == "#":
            if vals is not None and any(not w.known for w in vals):
                return [_F(text, vals[0].unknown)]
            n = len(vals or []) if all_elements else len((vals or [Word("", 0)])[0].text)
            return [_F(str(n))]
        if not rest:
            if vals is None:
                return self._unset(name, st, node)
            fs = [_F(w.text, w.unknown, w.env, w.line, w.cli) for w in vals]
            if index == "*" and quoted:
                return self.split(fs, True, False)
            return self.split(fs, quoted, all_elements and not (index == "*" and quoted))
        op = self.text(rest[0])
        operand_nodes = rest[1:]
        unknown_val = vals is not None and any(not w.known for w in vals)
        is_set = vals is not None
        is_null = not vals or (len(vals) == 1 and vals[0].known and vals[0].text == "")
        if op in (":-", "-", ":=", "=", ":+", "+", ":?", "?"):
            if unknown_val and not (st.args is None and name.isdigit() and op in (":-", "-", ":=", "=")):
                return [_F(text, vals[0].unknown)]
            if st.args is None and name.isdigit():
                is_set, is_null = False, True  # not given: as `bash run.sh` with no arguments
            use_default = (not is_set) or (op.startswith(":") and is_null)
            if op in (":+", "+"):
                if use_default:
                    return [] if not quoted else [_F("")]
                return self.split([self.operand(operand_nodes, node, st)], quoted, False)
            if op in (":?", "?"):
                if use_default:
                    self.note(node, "exit", f"`{text}`: the script stops here because `{name}` is not set")
                    raise _Exit("1")
                fs = [_F(w.text, w.unknown, w.env, w.line, w.cli) for w in vals]
                return self.split(fs, quoted, all_elements)
            if not use_default:
                fs = [_F(w.text, w.unknown, w.env, w.line, w.cli) for w in vals]
                return self.split(fs, quoted, all_elements)
            d = self.operand(operand_nodes, node, st)
            if op in (":=", "=") and not name.isdigit():
                st.vars[name] = [Word(d.text, self.line(node), d.unknown, d.env)]
            return self.split([d], quoted, False)
        if unknown_val:
            return [_F(text, vals[0].unknown)]
        fs = [_F(w.text, w.unknown, w.env, w.line, w.cli) for w in (vals or [Word("", 0)])]
        out = []
        for f in fs:
            r = self.string_op(f.text, op, operand_nodes, node, st)
            if r is None:
                return [_F(text, (f"`{text}` is a parameter expansion the check does not read",))]
            if isinstance(r, _F):
                out.append(_F(r.text, r.unknown, _union(f.env, r.env), f.line))
            else:
                out.append(_F(r, (), f.env, f.line))
        return self.split(out, quoted, all_elements)

    def operand(self, nodes, parent, st: _State, pattern: bool = False, tilde: bool = True) -> _F:
        """The word after an expansion operator (``${X:-THIS}``), as one string; text between its nodes kept."""
        out = _F("")
        if not nodes:
            return out
        if tilde and self.text(nodes[0]).startswith("~/") and nodes[0].type in ("word", "concatenation"):
            home = self.env("HOME", parent)  # bash expands a tilde in the word of ${X:-~/dir}
            out = _F(home.text, home.unknown, home.env)
            rest = self.operand(nodes, parent, st, pattern, tilde=False)
            return out + _F(rest.text[1:], rest.unknown, rest.env)
        pos = nodes[0].start_byte
        for c in nodes:
            if c.start_byte > pos:
                out = out + _F(self.src[pos:c.start_byte].decode())
            for f in self.fields(c, st, quoted=True, pattern=pattern):
                out = out + f
            pos = c.end_byte
        return out

    def string_op(self, s: str, op: str, operands, node, st: _State):
        groups: list[list] = [[]]
        for c in operands:
            if c.type in ("/", ":") and not c.is_named:
                groups.append([])
            else:
                groups[-1].append(c)
        first = self.operand(groups[0], node, st, pattern=True)
        if first.unknown:
            return _F(self.text(node), first.unknown)
        pat = first.text
        if op in ("#", "##"):
            rng = range(len(s) + 1) if op == "#" else range(len(s), -1, -1)
            for i in rng:
                if fnmatch.fnmatchcase(s[:i], pat):
                    return s[i:]
            return s
        if op in ("%", "%%"):
            rng = range(len(s), -1, -1) if op == "%" else range(len(s) + 1)
            for i in rng:
                if fnmatch.fnmatchcase(s[i:], pat):
                    return s[:i]
            return s
        if op in ("/", "//"):
            rep = self.operand(groups[1], node, st) if len(groups) > 1 else _F("")
            if rep.unknown or any(ch in pat for ch in "*?["):
                return None
            return s.replace(pat, rep.text, 1 if op == "/" else -1)
        if op == ":":
            try:
                off = int(pat)
                length = int(self.operand(groups[1], node, st).text) if len(groups) > 1 else None
            except ValueError:
                return None
            sub = s[off:]
            return sub if length is None else (sub[:length] if length >= 0 else sub[:length])
        if op == "^^":
            return s.upper()
        if op == ",,":
            return s.lower()
        if op == "^":
            return s[:1].upper() + s[1:]
        if op == ",":
            return s[:1].lower() + s[1:]
        return None

    def substitution(self, node, st: _State) -> _F:
        """``$(...)``/backticks: never run. ``dirname``/``basename``/``realpath``/``readlink -f`` and
        ``cd DIR && pwd`` are computed from their arguments; anything else is unknown."""
        text = self.text(node)
        unknown = _F(text, (f"`{text}` is a command substitution (the check runs no command)",))
        body = [c for c in node.named_children if c.type != "comment"]
        if len(body) != 1:
            return unknown
        cmd = body[0]
        if cmd.type == "list" and len(cmd.children) == 3 and self.text(cmd.children[1]) == "&&":
            first, second = (_unredirected(c) for c in (cmd.children[0], cmd.children[2]))
            a = [w for w in self._simple_argv(first, st) or [] if w.text != "--"]
            b = self._simple_argv(second, st)
            if a and b and a[0].text == "cd" and len(a) == 2 and [w.text for w in b] == ["pwd"] and a[1].known:
                return _F(os.path.abspath(a[1].text), (), a[1].env)
            return unknown
        argv = self._simple_argv(cmd, st)
        if not argv or any(not w.known for w in argv):
            return unknown
        name, args = argv[0].text, [w.text for w in argv[1:]]
        env = tuple(e for w in argv for e in w.env)
        if name == "dirname" and len(args) == 1:
            return _F(os.path.dirname(args[0].rstrip("/")) or ".", (), env)
        if name == "basename" and len(args) in (1, 2):
            b = os.path.basename(args[0].rstrip("/"))
            if len(args) == 2 and b.endswith(args[1]) and b != args[1]:
                b = b[:-len(args[1])]
            return _F(b, (), env)
        if (name == "realpath" and len(args) == 1) or (name == "readlink" and args[:1] == ["-f"] and len(args) == 2):
            return _F(os.path.abspath(args[-1]), (), env)
        return unknown

    def _simple_argv(self, node, st: _State) -> Optional[list[Word]]:
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
    def arith_node(self, node, st: _State) -> Optional[int]:
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
            try:
                return _ARITH[op](a, b)
            except (KeyError, ZeroDivisionError, ValueError):
                return None
        if t == "ternary_expression":
            kids = node.named_children
            c = self.arith_node(kids[0], st)
            if c is None or len(kids) < 3:
                return None
            return self.arith_node(kids[1] if c else kids[2], st)
        return None

    def test(self, node, st: _State) -> Optional[bool]:
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

    def test_expr(self, node, st: _State, double: bool) -> Optional[bool]:
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

    def _test_argv(self, args: list[Word]) -> Optional[bool]:
        if any(not w.known for w in args):
            return None
        a = [w.text for w in args]
        neg = False
        if a and a[0] == "!":
            neg, a = True, a[1:]
        if len(a) == 1:
            r: Optional[bool] = a[0] != ""
        elif len(a) == 2 and a[0] in ("-z", "-n"):
            r = (a[1] == "") == (a[0] == "-z")
        elif len(a) == 3:
            r = _compare(a[0], a[1], a[2], False)
        else:
            r = None
        return None if r is None else (r != neg)


_ARITH = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
          "/": lambda a, b: int(a / b), "%": lambda a, b: a - b * int(a / b), "**": lambda a, b: a ** b,
          "<": lambda a, b: int(a < b), ">": lambda a, b: int(a > b), "<=": lambda a, b: int(a <= b),
          ">=": lambda a, b: int(a >= b), "==": lambda a, b: int(a == b), "!=": lambda a, b: int(a != b),
          "&&": lambda a, b: int(bool(a and b)), "||": lambda a, b: int(bool(a or b)),
          "<<": lambda a, b: a << b, ">>": lambda a, b: a >> b, "&": lambda a, b: a & b, "|": lambda a, b: a | b,
          "^": lambda a, b: a ^ b}


def _merge_arrays(values: list[list[Word]], reason: str) -> list[Word]:
    """Arrays that branches the check cannot choose between left different. Arrays of ``key=value`` overrides
    merge by key: a key every branch gives the same last value stays known, any other key is kept (its text
    from the first branch that has it) but marked unknown, so the key it feeds is still named. Other arrays
    keep the elements they share at the start; the rest are marked unknown."""
    def key(w: Word) -> Optional[str]:
        k = w.text.split("=", 1)[0].lstrip("+~") if "=" in w.text else None
        return k if k and re.fullmatch(r"[A-Za-z_][\w.\-/@]*", k) else None

    if all(key(w) for v in values for w in v):
        finals = [{key(w): w for w in v} for v in values]
        order: list[str] = []
        for v in values:
            order += [k for k in (key(w) for w in v) if k not in order]
        out = []
        for k in order:
            ws = [f.get(k) for f in finals]
            first = next(w for w in ws if w is not None)
            same = all(w is not None and (w.text, w.unknown) == (first.text, first.unknown) for w in ws)
            out.append(first if same else Word(first.text, first.line, _union(first.unknown, (reason,)), first.env,
                                               first.cli))
        return out
    n = 0
    while all(len(v) > n for v in values) and all((v[n].text, v[n].unknown) == (values[0][n].text,
                                                                                values[0][n].unknown) for v in values):
        n += 1
    out = list(values[0][:n])
    seen: set[str] = set()
    for v in values:
        for w in v[n:]:
            if w.text in seen:
                continue
            seen.add(w.text)
            out.append(Word(w.text, w.line, _union(w.unknown, (reason,)), w.env, w.cli))
    return out


def _compare(a: str, op: str, b: str, pattern: bool) -> Optional[bool]:
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
    ints = {"-eq": lambda x, y: x == y, "-ne": lambda x, y: x != y, "-lt": lambda x, y: x < y,
            "-le": lambda x, y: x <= y, "-gt": lambda x, y: x > y, "-ge": lambda x, y: x >= y}
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


def _int(w: Word) -> Optional[int]:
    if not w.known:
        return None
    try:
        return int(w.text.strip() or "0", 0)
    except ValueError:
        return None


def _concat(a: Word, b: Word) -> Word:
    return Word(a.text + b.text, b.line, _union(a.unknown, b.unknown), _union(a.env, b.env))


def _is_all_elements(text: str) -> bool:
    return text in ("$@", "${@}") or bool(re.fullmatch(r"\$\{[A-Za-z_][A-Za-z0-9_]*\[@\]\}", text))


def _unescape(raw: str, pattern: bool = False) -> str:
    """An unquoted word: a backslash quotes the next character (kept as ``\\x`` in a pattern)."""
    if "\\" not in raw:
        return raw
    out, i = [], 0
    while i < len(raw):
        ch = raw[i]
        if ch == "\\" and i + 1 < len(raw):
            nxt = raw[i + 1]
            if nxt == "\n":
                i += 2
                continue
            out.append(("[" + nxt + "]") if pattern and nxt in "*?[" else nxt)
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _unescape_dq(raw: str) -> str:
    """Inside double quotes a backslash quotes only ``$ ` " \\`` and a newline."""
    return re.sub(r'\\([$`"\\\n])', lambda m: "" if m.group(1) == "\n" else m.group(1), raw)


def _ansi_c(raw: str) -> str:
    table = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "a": "\a", "b": "\b", "e": "\x1b",
             "f": "\f", "v": "\v"}
    return re.sub(r"\\(.)", lambda m: table.get(m.group(1), "\\" + m.group(1)), raw)


__all__ = ["Command", "Evaluation", "Note", "Word", "evaluate"]
