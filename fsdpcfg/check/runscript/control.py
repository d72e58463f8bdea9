"""Control flow of the bash evaluator (:mod:`fsdpcfg.check.runscript.bash`): ``if``/``case``/``&&``/``||``,
``for`` and ``while`` loops; a condition the check cannot know is a choice point (:mod:`.fork`) or, inside
loops and in the merged reading, every branch is read and the values they set differently become unknown."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Sequence
from functools import partial

from fsdpcfg.check.runscript.expand import Expander
from fsdpcfg.check.runscript.fork import SAME, Forker, case_label, cond_label
from fsdpcfg.check.runscript.words import Note, Word, _Exit, _State, _union

#: a `while` loop with a known condition runs at most this many times (then it is read as unknown)
_MAX_LOOPS = 64


class _Break(Exception):
    """``break`` in a loop."""


class _Continue(Exception):
    """``continue`` in a loop."""


class Control(Expander, Forker):
    """Control-flow methods of the evaluator; it sets ``conditional`` and defines ``statement``."""

    conditional: list[str]
    notes: list[Note]

    def statement(self, node, st: _State) -> bool | None:  # bash._Evaluator.statement
        raise NotImplementedError

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


def _status(value: bool, st: _State) -> bool:
    """The status of a path that runs nothing more (the right side of ``A && B`` not run)."""
    return value


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
