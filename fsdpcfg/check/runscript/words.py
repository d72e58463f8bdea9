"""The values a run script's evaluation produces: :class:`Word` (one argument as bash would pass it, with its
line and, when it cannot be known, why), :class:`Command`, :class:`Note`, :class:`Evaluation`; and the
evaluator's private state."""

from __future__ import annotations

from dataclasses import dataclass, field


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
    cut: int = 0  # the line where `\\ # comment` ends the command (its last ``cut_words`` words come from it)
    cut_words: int = 0


@dataclass(frozen=True)
class Note:
    """Something the evaluation could not follow or took from outside the script: ``kind`` is ``"condition"``
    (a condition that cannot be known), ``"skipped"`` (a construct not evaluated: ``source``, ``eval``, a loop),
    ``"exit"`` (the script stops there) or ``"aborted"`` (an arithmetic error: bash abandons the statement of the
    script that holds it, lines ``line`` to ``end_line``, and goes on with the next one)."""

    line: int
    kind: str
    message: str
    end_line: int = 0
    #: ``"aborted"``: the other line ranges it abandoned (the bodies of the functions it was calling)
    spans: tuple[tuple[int, int], ...] = ()

    def covers(self, line: int) -> bool:
        """True when an ``"aborted"`` note's statement (or a function it was calling) is written over ``line``."""
        return any(a <= line <= b for a, b in ((self.line, self.end_line), *self.spans))


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

    def __add__(self, o: _F) -> _F:
        if TOO_LONG in self.unknown or TOO_LONG in o.unknown or len(self.text) + len(o.text) > MAX_VALUE:
            return _F(
                _head(self.text, o.text), _union(_union(self.unknown, o.unknown), (TOO_LONG,)), self.env, self.line
            )
        return _F(
            self.text + o.text,
            _union(self.unknown, o.unknown),
            _union(self.env, o.env),
            self.line or o.line,
            self.cli or o.cli,
        )


def _head(a: str, b: str, n: int = 200) -> str:
    """The first ``n`` characters of ``a + b`` and ``...`` (what an over-long value shows: the key it sets)."""
    return (a[:n] if len(a) >= n else a + b[: n - len(a)]).removesuffix("...") + "..."


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


class _Abort(Exception):
    """An expansion error (``$((1/0))``): bash abandons the statement of the script being run (the whole of it: a
    loop, an ``if``, a function call, the command itself) and goes on with the next one; a subshell ends."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message
        self.spans: list[tuple[int, int]] = []  # the function bodies it leaves, innermost first


#: the longest value (characters) and array (elements) the reader follows; past them (a string doubled each time
#: round a loop, ``x=$x$x``, grows to gigabytes) the value is unknown, and says so
MAX_VALUE = 1 << 20
MAX_ELEMENTS = 100_000
TOO_LONG = (
    f"its value grows past {MAX_VALUE:,} characters (a string doubled in a loop?); the check stopped following it"
)
TOO_MANY = f"the array grows past {MAX_ELEMENTS:,} elements (doubled in a loop?); the check stopped following it"


class _Return(Exception):
    """A function returns."""


@dataclass
class _State:
    vars: dict[str, list[Word]]
    arrays: set[str]
    args: list[Word] | None
    exited: bool = False
    args_assumed: bool = False  # the arguments were not given, and this path assumes some were

    def copy(self) -> _State:
        return _State(
            dict(self.vars),
            set(self.arrays),
            None if self.args is None else list(self.args),
            self.exited,
            self.args_assumed,
        )
