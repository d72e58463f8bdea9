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

import os
from collections.abc import Iterable, Mapping

from fsdpcfg.check.runscript.commands import Commands, _hide_arithmetic, _silent, _to_stdout
from fsdpcfg.check.runscript.control import Control, _Break, _Continue
from fsdpcfg.check.runscript.expand import _concat
from fsdpcfg.check.runscript.fork import Variant, variants
from fsdpcfg.check.runscript.operations import parser
from fsdpcfg.check.runscript.words import (
    _F,
    MAX_ELEMENTS,
    TOO_MANY,
    Command,
    Evaluation,
    Note,
    Word,
    _Abort,
    _Exit,
    _Return,
    _State,
)

#: builtins that always succeed and change nothing the check reads (not reported as commands).
_INERT = frozenset({"echo", "printf", "set", ":", "true"})
_MAX_DEPTH = 32


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
                        ev.top_statement(c, state)
                break
            ev.top_statement(child, state)
    except _Exit:
        pass
    return Evaluation(ev.commands, ev.notes, ev.env_used, error_line), ev.sizes, ev.labels


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


class _Evaluator(Control, Commands):
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
    def top_statement(self, node, st: _State) -> bool | None:
        """A statement of the script itself: an expansion error in it (:class:`_Abort`) abandons all of it, as
        bash does, and the script goes on with the next statement (a note says which lines were not run)."""
        try:
            return self.statement(node, st)
        except _Abort as e:
            first, last = node.start_point[0] + 1, node.end_point[0] + 1
            lines = f"line {first}" if first == last else f"lines {first}-{last}"
            self.notes.append(
                Note(
                    first,
                    "aborted",
                    f"{e.message} (line {e.line}): bash abandons the statement at {lines} and goes on after it",
                    last,
                    tuple(e.spans),
                )
            )
            return False

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
                except _Abort:  # a pipeline's part runs in a subshell: the error ends that subshell only
                    status = False
            return status
        if t == "subshell":
            sub = st.copy()
            try:
                return self.block(node.named_children, sub)
            except _Exit:
                return None
            except _Abort:
                return False
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
        body = self.functions[name]
        try:
            return self.statement(body, st)
        except _Return:
            return None
        except _Abort as e:  # the call is abandoned with the statement that made it: so is the rest of the body
            e.spans.append((body.start_point[0] + 1, body.end_point[0] + 1))  # type: ignore[attr-defined]
            raise
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
                st.vars[name] = cur + vals if len(cur) + len(vals) <= MAX_ELEMENTS else self._too_many(name, node)
                st.arrays.add(name)
            else:
                st.vars[name] = [_concat(cur[0], vals[0])]
            return
        st.vars[name] = vals if len(vals) <= MAX_ELEMENTS else self._too_many(name, node)
        if is_array:
            st.arrays.add(name)
        else:
            st.arrays.discard(name)

    def _too_many(self, name: str, node) -> list[Word]:
        """The unknown value of an array grown past :data:`~fsdpcfg.check.runscript.words.MAX_ELEMENTS`."""
        return [Word(f"${{{name}[@]}}", self.line(node), (TOO_MANY,))]


__all__ = ["Command", "Evaluation", "Note", "Word", "evaluate"]
