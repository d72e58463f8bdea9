"""Evaluate a bash run script into the commands bash would run, without running anything.

The script is parsed by tree-sitter's bash grammar (``tree-sitter-bash``: a complete grammar of bash, arrays,
``case``, ``[[ ]]`` and ``$(( ))`` included) and its syntax tree is walked here. Only the script's own text is
read: no command runs (a command substitution ``$(...)`` is not run but marked unknown; ``cd X && pwd``,
``dirname``, ``basename``, ``realpath`` are computed as string functions of their arguments), no file is read
or written (redirections are ignored; ``source FILE`` is read, its statements evaluated like the script's),
no network is touched.

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

:func:`evaluate_variants` reads a script once per path where it branches on what the check cannot know (see
:mod:`fsdpcfg.check.runscript.fork`). In :func:`evaluate` (and inside loops),
a condition the check cannot know (a file test, a command's exit status, an unknown value) takes no guess:
every branch is read (the commands in each are returned, marked conditional), and after the construct a
variable the branches left with different values is unknown (a :class:`Note` says so). A path that ends in
``exit`` does not continue. ``while``/``until`` loops are read as "not run or run once" in the same way.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from functools import partial

from fsdpcfg.check.runscript.expand import Expander, _concat, parser
from fsdpcfg.check.runscript.fork import SAME, Forker, Variant, case_label, cond_label, variants
from fsdpcfg.check.runscript.words import (
    _F,
    Command,
    Evaluation,
    Note,
    Word,
    _Exit,
    _Return,
    _State,
    _union,
)

#: builtins that always succeed and change nothing the check reads (not reported as commands).
_INERT = frozenset({"echo", "printf", "set", ":", "true"})
_MAX_DEPTH = 32
#: a `while` loop with a known condition runs at most this many times (then it is read as unknown)
_MAX_LOOPS = 64


class _Break(Exception):
    """``break`` in a loop."""


class _Continue(Exception):
    """``continue`` in a loop."""


def evaluate(
    text: str,
    *,
    args: list[str] | None = None,
    extra: Iterable[str] = (),
    environ: Mapping[str, str] | None = None,
    script_path: str = "run.sh",
) -> Evaluation:
    """Evaluate the bash script ``text`` without running it, every branch the check cannot decide merged.

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
    return _evaluate(text, None, args, extra, environ, script_path)[0]


def evaluate_variants(
    text: str,
    *,
    args: list[str] | None = None,
    extra: Iterable[str] = (),
    environ: Mapping[str, str] | None = None,
    script_path: str = "run.sh",
) -> list[Variant]:
    """Evaluate ``text`` once per path the check cannot choose between (:mod:`fsdpcfg.check.runscript.fork`):
    a device probe, ``case "$1"``, a test of ``$#`` when no arguments are given (``no arguments`` is one path:
    an argument loop then runs zero times, as in bash). Same arguments as :func:`evaluate`; returns the
    :class:`~fsdpcfg.check.runscript.fork.Variant` list in the order the paths were met (the first takes the
    first branch everywhere), one variant with an empty label when the script has no such point."""
    env = dict(os.environ if environ is None else environ)

    def run(choices: list[int] | None):
        return _evaluate(text, choices, args, extra, env, script_path)

    return variants(run)


def _evaluate(text, choices, args, extra, environ, script_path) -> tuple[Evaluation, list[int], list[str]]:
    text, arith = _hide_arithmetic(text)
    src = text.encode()
    tree = parser().parse(src)
    ev = _Evaluator(src, dict(os.environ if environ is None else environ), [str(x) for x in extra], script_path)
    ev.arith = arith
    ev.choices = choices
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
    return Evaluation(ev.commands, ev.notes, ev.env_used, error_line), ev.sizes, ev.labels


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


_STATEMENTS = frozenset(
    {
        "command",
        "variable_assignment",
        "variable_assignments",
        "declaration_command",
        "redirected_statement",
        "pipeline",
        "list",
        "if_statement",
        "case_statement",
        "for_statement",
        "while_statement",
        "function_definition",
        "comment",
        "subshell",
        "compound_statement",
        "unset_command",
        "negated_command",
        "test_command",
    }
)


class _Evaluator(Expander, Forker):
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
        self.locals: list[dict[str, tuple[list[Word] | None, bool]]] = []
        self.depth = 0
        self.uses_args = False
        self.in_test = False
        self.stdin: _F | None = None  # the here-document of the command being evaluated
        self.arith: dict[str, str] = {}  # hidden arithmetic expansions (_hide_arithmetic)
        self.choices: list[int] | None = None  # fork.Forker: the path to take at each choice point
        self.sizes: list[int] = []
        self.labels: list[str] = []
        self.no_fork = 0
        self.capture: list[_F] | None = None  # what echo prints inside $( ) (None: not capturing)
        self.silent = False  # the command's output is redirected away from $( )
        self.in_case = False
        self.sourced = 0  # depth of `source` being read

    # ---- statements ------------------------------------------------------------------------------------
    def statement(self, node, st: _State) -> bool | None:
        """Evaluate one statement; return its exit status (True: 0, False: non-zero, None: not known)."""
        if st.exited:
            return None
        t = node.type
        if t in ("comment", "heredoc_body", ";", "&", "\n"):
            return True
        if t == "compound_statement" and node.children and node.children[0].type == "((":
            return self.arith_command(node, st)
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
            heredoc = next((c for c in node.children if c.type == "heredoc_redirect"), None)
            self.stdin = self.heredoc(heredoc, st) if heredoc is not None else None
            silent = self.silent
            self.silent = silent or any(_to_stdout(self.text(c)) for c in node.children if c.type == "file_redirect")
            try:
                return self.statement(body, st) if body is not None else True
            finally:
                self.stdin = None
                self.silent = silent
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
            if t == "while_statement":
                try:
                    if self._while_known(node, body, st):
                        return True
                except _Break:
                    return True
            self.note(
                node, "condition", f"{what} is read as run once or not at all; a value it changes is not known after it"
            )
            self.no_fork += 1
            try:
                self.branches(node, st, [(body, reason)], include_none=True)
            except (_Break, _Continue):
                pass
            finally:
                self.no_fork -= 1
            return None
        if t == "function_definition":
            name = node.child_by_field_name("name")
            self.functions[self.text(name)] = node.child_by_field_name("body")
            return True
        self.note(node, "skipped", f"`{self.text(node).splitlines()[0][:60]}` ({t}) is not evaluated by the check")
        return None

    def _while_known(self, node, body, st: _State) -> bool:
        """Run a ``while`` (``until``) loop as bash does while its condition is known (``while [[ $# -gt 0 ]]``
        over given arguments; with no arguments it runs zero times); True when it ended so. False when the
        condition becomes unknown (the caller reads the rest as run once or not at all)."""
        until = bool(node.children) and node.children[0].type == "until"
        cond = [c for c in node.named_children if c.type not in ("do_group", "comment")]
        if not cond:
            return False
        for _ in range(_MAX_LOOPS):
            status = self.block(cond, st)
            if status is None:
                return False
            if status is until:
                return True
            self.no_fork += 1
            try:
                self.statement(body, st)
            except _Continue:
                pass
            finally:
                self.no_fork -= 1
        return False

    def block(self, nodes, st: _State) -> bool | None:
        status: bool | None = True
        for c in nodes:
            if st.exited:
                break
            status = self.statement(c, st)
        return status

    def and_or(self, node, st: _State) -> bool | None:
        kids = node.children
        left, op, right = kids[0], self.text(kids[1]), kids[-1]
        s = self.statement(left, st)
        if s is None and self.forking():
            text = self.text(left)[:50]
            run_right = (op == "&&", op == "||")
            got = self.fork(
                st,
                [
                    (partial(self.statement, right), f"`{text}` {'succeeds' if run_right[0] else 'fails'}"),
                    (partial(_status, op == "||"), f"`{text}` {'fails' if run_right[0] else 'succeeds'}"),
                ],
            )
            if got is not SAME:
                return got if isinstance(got, bool) or got is None else None
        if s is None:
            reason = f"line {self.line(node)}: after `{self.text(left)[:60]}`, whose result the check cannot know"
            self.note(
                node,
                "condition",
                f"`{self.text(left)[:60]}` cannot be known without running the shell; "
                f"`{self.text(right)[:60]}` is read as maybe run",
            )
            self.branches(node, st, [(right, reason)], include_none=True)
            return None
        if (op == "&&" and s) or (op == "||" and not s):
            return self.statement(right, st)
        return s

    def branches(self, node, st: _State, bodies: Sequence[tuple[object, str]], include_none: bool) -> None:
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
                merged[name] = _merge_arrays(
                    [v or [] for v in vals],
                    f"set only in some branches, or differently, of a construct the check cannot decide ({where})",
                )
            else:
                merged[name] = [
                    Word(
                        f"${name}",
                        self.line(node),
                        (f"`{name}` is set differently by branches the check cannot choose between ({where})",),
                    )
                ]
        st.vars = merged
        st.arrays = arrays
        if any(o.args != going[0].args for o in going):
            st.args = None
        else:
            st.args = going[0].args

    def if_statement(self, node, st: _State) -> bool | None:
        # clauses: (condition nodes, body nodes); else: (None, body nodes)
        clauses: list[tuple[list | None, list]] = []
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
                ccond: list = []
                cbody: list = []
                m = "cond"
                for x in c.children:
                    if x.type == "then":
                        m = "body"
                    elif x.is_named:
                        (ccond if m == "cond" else cbody).append(x)
                clauses.append((ccond, cbody))
            elif c.type == "else_clause":
                clauses.append((None, [x for x in c.named_children]))
        pending: list[tuple[object, str]] = []
        for maybe_cond, cbody in clauses:
            if maybe_cond is None:
                status: bool | None = True
            else:
                status = self.block(maybe_cond, st) if not pending else None
            if pending:
                # an earlier condition could not be known: this clause is one more maybe-branch
                what = "else" if maybe_cond is None else f"`{' '.join(self.text(x) for x in maybe_cond)[:60]}`"
                pending.append(
                    (cbody, f"line {self.line(node)}: in the branch {what} of an `if` the check cannot decide")
                )
                continue
            if status is True:
                return self.block(cbody, st)
            if status is None and self.forking():
                assert maybe_cond is not None
                text = " ".join(self.text(x) for x in maybe_cond)
                i = clauses.index((maybe_cond, cbody))
                rest = clauses[i + 1 :]
                got = self.fork(
                    st,
                    [
                        (partial(self.block, cbody), cond_label(text, True)),
                        (partial(self._if_rest, rest, node), cond_label(text, False)),
                    ],
                )
                if got is not SAME:
                    return got if isinstance(got, bool) or got is None else None
            if status is None:
                assert maybe_cond is not None  # an `else` (no condition) has status True
                text = " ".join(self.text(x) for x in maybe_cond)[:80]
                self.note(
                    node,
                    "condition",
                    f"the condition `{text}` cannot be known without running the shell; "
                    "every branch was read, and a value the branches set differently is "
                    "not known after the `if`",
                )
                pending.append(
                    (
                        cbody,
                        f"line {self.line(node)}: in a branch of an `if` on `{text}`, which the check cannot decide",
                    )
                )
        if pending:
            has_else = clauses[-1][0] is None
            self.branches(node, st, pending, include_none=not has_else)
            return None
        return True

    def _if_rest(self, clauses: list, node, st: _State) -> bool | None:
        """The ``elif``/``else`` clauses after a condition taken as false (a path of :meth:`if_statement`)."""
        for maybe_cond, cbody in clauses:
            status = True if maybe_cond is None else self.block(maybe_cond, st)
            if status is True:
                return self.block(cbody, st)
            if status is None:
                text = " ".join(self.text(x) for x in maybe_cond or [])
                rest = clauses[clauses.index((maybe_cond, cbody)) + 1 :]
                got = (
                    self.fork(
                        st,
                        [
                            (partial(self.block, cbody), cond_label(text, True)),
                            (partial(self._if_rest, rest, node), cond_label(text, False)),
                        ],
                    )
                    if self.forking()
                    else SAME
                )
                if got is SAME:
                    self.branches(node, st, [(cbody, f"line {self.line(node)}: in a branch of an `if`")], True)
                    return None
                return got if isinstance(got, bool) or got is None else None
        return True

    def case_statement(self, node, st: _State) -> bool | None:
        self.in_case = True
        try:
            value = self.scalar(node.child_by_field_name("value"), st)
        finally:
            self.in_case = False
        items = [c for c in node.named_children if c.type == "case_item"]
        if not value.known and self.forking():
            word = self.text(node.child_by_field_name("value"))
            options: list = []
            for i, item in enumerate(items):
                texts = [self.text(p) for p in item.children_by_field_name("value")]
                options.append((partial(self._case_from, items, i), case_label(word, "|".join(texts))))
            if not any(p == "*" for i in items for p in (self.text(q) for q in i.children_by_field_name("value"))):
                options.append((None, case_label(word, "*")))
            got = self.fork(st, options)
            if got is not SAME:
                return got if isinstance(got, bool) or got is None else None
        if not value.known:
            self.note(
                node,
                "condition",
                f"the `case` on `{value.text}` cannot be decided ({value.unknown[0]}); every branch was read",
            )
            bodies = [
                (
                    self._case_body(i),
                    f"line {self.line(i)}: in a branch of a `case` on `{value.text}`, which the check cannot decide",
                )
                for i in items
            ]
            self.branches(node, st, bodies, include_none=True)
            return None
        falling = False
        for item in items:
            pats = [self.scalar(p, st, pattern=True) for p in item.children_by_field_name("value")]
            matched = falling
            if not matched:
                for p in pats:
                    if not p.known:
                        self.note(
                            item, "condition", f"the `case` pattern `{p.text}` is not known; its branch was not taken"
                        )
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

    def _case_from(self, items: list, k: int, st: _State) -> bool | None:
        """Run the ``case`` branch ``items[k]`` and the ones it falls through to (``;&``)."""
        for item in items[k:]:
            self.block(self._case_body(item), st)
            if self._case_term(item) != ";&":
                break
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

    def for_statement(self, node, st: _State) -> bool | None:
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
            self.note(
                node,
                "condition",
                f"the `for {var}` loop's list is not known; its body was read once, with `{var}` unknown",
            )
            sub_reason = f"line {self.line(node)}: inside a `for` loop over a list the check cannot know"
            st.vars[var] = [Word(f"${var}", self.line(node), ("the loop variable of a list the check cannot know",))]
            self.branches(node, st, [(body, sub_reason)], include_none=True)
            return None
        for w in words:
            st.vars[var] = [w]
            st.arrays.discard(var)
            try:
                self.statement(body, st)
            except _Continue:
                continue
            except _Break:
                break
        return True

    def declaration(self, node, st: _State) -> bool | None:
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

    def command(self, node, st: _State) -> bool | None:
        name_node = node.child_by_field_name("name")
        if self._split_assignment(node, name_node, st):
            return True
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
        argv.extend(self.arg_words(node.children_by_field_name("argument"), st))
        cut = self._cut_words(node)
        argv.extend(cut)
        uses_args, self.uses_args = self.uses_args, uses_before
        if not argv:
            return True
        name = argv[0].text if argv[0].known else ""
        if name in self.functions and argv[0].known:
            return self.call(name, argv[1:], node, st)
        if name in ("break", "continue") and not self.conditional:
            raise _Break() if name == "break" else _Continue()
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
        if name in ("source", ".") and len(argv) > 1 and self._source(argv[1], st):
            return True
        if name in ("source", "."):
            self.note(
                node,
                "skipped",
                f"`{self.text(node)[:60]}` is not followed (the check reads only this "
                "script); a value that file sets is not known",
            )
            return None
        if name == "eval":
            self.note(node, "skipped", f"`{self.text(node)[:60]}` is not evaluated")
            return None
        if name == "read" and self.stdin is not None:
            return self.read_heredoc(argv[1:], node, st)
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
        if name == "echo" and self.capture is not None:
            words = argv[1:]
            nl = not (words and words[0].text == "-n")
            words = [w for w in words if w.text not in ("-n", "-e", "-E")]
            f = _F("")
            for i, w in enumerate(words):
                f = f + _F((" " if i else "") + w.text, w.unknown, w.env)
            self.capture.append(f + _F("\n" if nl else ""))
            return True
        if name in _INERT:
            return True
        if self.capture is not None and not self.silent and not _silent(argv):
            self.capture.append(_F(self.text(node), (f"`{self.text(node)[:60]}` prints what the check cannot know",)))
        self._record(argv, node, prefix, uses_args)
        if cut:
            self.commands[-1].cut, self.commands[-1].cut_words = cut[0].line, len(cut)
        return None

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
        if not path.known or self.sourced >= _MAX_DEPTH:
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

    def _record(self, argv: list[Word], node, prefix: dict[str, Word], uses_args: bool) -> None:
        self.commands.append(
            Command(argv, self.line(node), prefix, self.conditional[-1] if self.conditional else "", uses_args)
        )

    def call(self, name: str, args: list[Word], node, st: _State) -> bool | None:
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

    def set_var(self, st: _State, name: str, value: list[Word] | None) -> None:
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
            return self.arg_words([el for el in value.named_children if el.type != "comment"], st)
        return [self.scalar(value, st, assignment=True)]

    def assign(self, node, st: _State) -> None:
        name_node = node.child_by_field_name("name")
        name = self._assign_name(node)
        op = next((self.text(c) for c in node.children if c.type in ("=", "+=")), "=")
        value = node.child_by_field_name("value")
        is_array = value is not None and value.type == "array"
        since = len(self.labels)
        vals = self.assign_value(node, st)
        if len(vals) == 1 and vals[0].known:
            self.relabel(since, name, vals[0].text)
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


def _status(value: bool, st: _State) -> bool:
    """The status of a path that runs nothing more (the right side of ``A && B`` not run)."""
    return value


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


def _merge_arrays(values: list[list[Word]], reason: str) -> list[Word]:
    """Arrays that branches the check cannot choose between left different. Arrays of ``key=value`` overrides
    merge by key: a key every branch gives the same last value stays known, any other key is kept (its text
    from the first branch that has it) but marked unknown, so the key it feeds is still named. Other arrays
    keep the elements they share at the start; the rest are marked unknown."""

    def key(w: Word) -> str | None:
        k = w.text.split("=", 1)[0].lstrip("+~") if "=" in w.text else None
        return k if k and re.fullmatch(r"[A-Za-z_][\w.\-/@]*", k) else None

    if all(key(w) for v in values for w in v):
        finals = [{key(w): w for w in v} for v in values]
        order: list[str] = []
        for v in values:
            order += [k for k in (key(w) for w in v) if k is not None and k not in order]
        out = []
        for k in order:
            ws = [f.get(k) for f in finals]
            first = next(w for w in ws if w is not None)
            same = all(w is not None and (w.text, w.unknown) == (first.text, first.unknown) for w in ws)
            out.append(
                first if same else Word(first.text, first.line, _union(first.unknown, (reason,)), first.env, first.cli)
            )
        return out
    n = 0
    while all(len(v) > n for v in values) and all(
        (v[n].text, v[n].unknown) == (values[0][n].text, values[0][n].unknown) for v in values
    ):
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


__all__ = ["Command", "Evaluation", "Note", "Word", "evaluate"]
