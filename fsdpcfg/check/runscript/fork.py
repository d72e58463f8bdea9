"""Every path of a run script: the evaluator's choice points (:mod:`fsdpcfg.check.runscript.bash`).

Where a script branches on what the check cannot know (a device probe ``$(python3 -c 'import torch_npu' && echo
npu || echo gpu)``, ``case "$1"``, ``if [ "$#" -lt 2 ]``, a file test that sets a value), bash takes one path
when the script runs. The evaluator reads the script once per combination of choices (:func:`variants`): at
each such point it takes the path its choice list names, and records how many paths there were and a label for
the one taken (``DEVICE=npu``, ``no arguments``). A point whose paths all leave the same values, commands and
output (``[ -d repo ] || git clone ...``) is no choice: it is read once, as before. Inside a loop, and beyond
:data:`MAX_RUNS` combinations, branches are merged instead (a value they set differently is unknown).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from fsdpcfg.check.runscript.verl_cmd import parse_command
from fsdpcfg.check.runscript.words import Evaluation, _Exit, _State

#: at most this many combinations of choices are read; a script with more is read once, branches merged.
MAX_RUNS = 16
#: at most this many variants are checked (those that run a verl command, the same commands counted once).
MAX_VARIANTS = 8

#: returned by :meth:`Forker.fork` when the paths do not differ (the caller reads them merged).
SAME = object()


@dataclass
class Variant:
    """One combination of choices: its label (``"DEVICE=gpu; no arguments"``, ``""`` when the script has no
    choice point) and the evaluation along it."""

    label: str
    evaluation: Evaluation


class Forker:
    """Choice points of the evaluator. ``choices`` is None when the evaluator merges every branch (the
    single reading of :func:`fsdpcfg.check.runscript.evaluate`); else the index of the path to take at each
    point met, in order (missing: 0). ``sizes``/``labels``: the points met and the label of each path taken."""

    choices: list[int] | None
    sizes: list[int]
    labels: list[str]
    no_fork: int
    commands: list
    notes: list
    env_used: dict
    functions: dict
    capture: list | None

    def forking(self) -> bool:
        return self.choices is not None and self.no_fork == 0

    def decide(self, labels: list[str]) -> int:
        """Record a choice point with ``labels`` (one per path) and return the index of the path to take."""
        assert self.choices is not None
        k = len(self.sizes)
        self.sizes.append(len(labels))
        c = self.choices[k] if k < len(self.choices) else 0
        c = c if c < len(labels) else 0
        self.labels.append(labels[c])
        return c

    def fork(self, st: _State, options: list[tuple[Callable[[_State], object] | None, str]]) -> object:
        """Take one of ``options`` (``(run it on a state, label)``; None runs nothing) as the choice list says,
        or return :data:`SAME` when every option leaves the same state, commands and output."""
        outcomes = [self._dry(fn, st) for fn, _ in options]
        if all(o == outcomes[0] for o in outcomes):
            return SAME
        c = self.decide([label for _, label in options])
        fn = options[c][0]
        return fn(st) if fn is not None else True

    def _dry(self, fn: Callable[[_State], object] | None, st: _State) -> tuple:
        """What running ``fn`` on a copy of ``st`` leaves (values, arguments, exit, commands, output); nothing
        of it is kept."""
        sub = st.copy()
        saved = (len(self.commands), list(self.notes), dict(self.env_used), dict(self.functions))
        cap = None if self.capture is None else list(self.capture)
        self.no_fork += 1
        try:
            if fn is not None:
                fn(sub)
        except _Exit:
            sub.exited = True
        except Exception:  # a path the reader cannot follow: different from the others
            sub.exited = None  # type: ignore[assignment]
        finally:
            self.no_fork -= 1
        # only the commands the check reads count (a `git clone` on one path only is no choice)
        cmds = tuple(
            tuple((w.text, w.unknown) for w in c.argv)
            for c in self.commands[saved[0] :]
            if parse_command(c) is not None
        )
        out = None if self.capture is None else tuple((f.text, f.unknown) for f in self.capture)
        del self.commands[saved[0] :]
        self.notes[:], self.env_used, self.functions = saved[1], saved[2], saved[3]
        if cap is not None:
            self.capture = cap
        values = tuple(sorted((k, tuple((w.text, w.unknown) for w in v)) for k, v in sub.vars.items()))
        args = None if sub.args is None else tuple(w.text for w in sub.args)
        return values, tuple(sorted(sub.arrays)), args, sub.exited, cmds, out

    def relabel(self, since: int, name: str, value: str) -> None:
        """The choices made while computing the value of ``name`` are labelled by the value they gave it."""
        if len(self.labels) > since:
            self.labels[since] = f"{name}={value}"
            for k in range(since + 1, len(self.labels)):
                self.labels[k] = ""


def cond_label(text: str, truth: bool) -> str:
    """A short label for the path where the test ``text`` is ``truth``: ``DEVICE=npu``/``DEVICE!=npu`` for
    ``[ "$DEVICE" = npu ]``, else ``[ ... ] true``/``false``."""
    m = re.fullmatch(
        r"""\[\[?\s*"?\$\{?([A-Za-z_][A-Za-z0-9_]*|[0-9#])\}?"?\s*(==?|!=)\s*["']?([^"'\]\s]*)["']?\s*\]\]?;?""",
        text.strip(),
    )
    if m:
        name, op, lit = m.groups()
        eq = (op != "!=") == truth
        return f"{name}={lit}" if eq else f"{name}!={lit}"
    short = text.strip().rstrip(";")
    short = short if len(short) <= 50 else short[:47] + "..."
    return f"`{short}` {'true' if truth else 'false'}"


def case_label(word: str, pattern: str) -> str:
    """``DEVICE=gpu`` for the branch ``gpu)`` of ``case "$DEVICE"``; ``DEVICE=other`` for ``*)``."""
    m = re.fullmatch(r"""["']?\$\{?([A-Za-z_][A-Za-z0-9_]*|[0-9#@])\}?["']?""", word.strip())
    name = m.group(1) if m else (word if len(word) <= 30 else word[:27] + "...")
    name = f"${name}" if name.isdigit() else name
    return f"{name}=other" if pattern.strip() == "*" else f"{name}={pattern.strip()}"


def variants(run: Callable[[list[int] | None], tuple[Evaluation, list[int], list[str]]]) -> list[Variant]:
    """Read a script along every combination of choices: ``run(choices)`` evaluates it along ``choices``
    (None: branches merged) and returns the evaluation, the number of paths at each choice point met, and the
    labels of the paths taken. At most :data:`MAX_RUNS` readings; beyond, one merged reading."""
    out: list[Variant] = []
    queue: list[list[int]] = [[]]
    while queue:
        prefix = queue.pop(0)
        ev, sizes, labels = run(prefix)
        out.append(Variant("; ".join(x for x in labels if x), ev))
        if len(out) + len(queue) > MAX_RUNS:
            ev, _, _ = run(None)
            return [Variant("", ev)]
        taken = prefix + [0] * (len(sizes) - len(prefix))
        for k in range(len(prefix), len(sizes)):
            for j in range(1, sizes[k]):
                queue.append(taken[:k] + [j])
    return out
