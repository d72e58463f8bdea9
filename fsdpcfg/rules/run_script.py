"""What ``fsdpcfg check RUN_SCRIPT.sh`` could not read, or read from outside the script (infos), and verl
entry points that do not exist. The findings are made by :mod:`fsdpcfg.check.runscript.translate` while it reads the
script (``composed.script_notes``); each rule here reports its own. Source: issue 12 (run scripts read the way
bash reads them: a value the check cannot know is an info naming the key it feeds, never a guessed error).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from fsdpcfg.rules.finding import Finding
from fsdpcfg.rules.registry import rule

if TYPE_CHECKING:
    from fsdpcfg.rules.context import Context

_KINDS = ("ppo", "sft")


def script_notes(ctx: Context, rule_id: str) -> Iterator[Finding]:
    """The findings of rule ``rule_id`` that reading the run script produced (none for other inputs)."""
    for f in getattr(ctx.composed, "script_notes", None) or []:
        if f.rule == rule_id:
            yield f


@rule("FC120", "a run script's value taken from the environment the check runs in", severity="info", kinds=_KINDS)
def script_environment(ctx: Context) -> Iterator[Finding]:
    """A variable the script reads but does not set (``$HOME``, ``${MODEL_PATH:-...}`` when ``MODEL_PATH`` is
    exported) was taken from the environment of ``fsdpcfg check``, as bash takes it from the environment the
    script runs in; on the cluster it may differ. Source: issue 12 item 1 (environment variables named in an
    info when used)."""
    yield from script_notes(ctx, "FC120")


@rule("FC121", "a verl command of the run script is not a trainer fsdpcfg checks", severity="info", kinds=_KINDS)
def script_other_entry(ctx: Context) -> Iterator[Finding]:
    """``verl.trainer.main_generation_server``, ``main_eval``, ``recipe.*`` and the other verl entry points read
    configs other than ``ppo_trainer`` and ``sft_trainer_engine``: fsdpcfg names them and does not check them.
    Source: verl 0.9.1 ``verl/trainer/*.py`` (``@hydra.main(config_name=...)``)."""
    yield from script_notes(ctx, "FC121")


@rule("FC122", "overrides given after the run script apply on top of its own", severity="info", kinds=_KINDS)
def script_extra_overrides(ctx: Context) -> Iterator[Finding]:
    """``fsdpcfg check run.sh key=value``: the overrides stand where the script writes ``"$@"``, as
    ``bash run.sh key=value`` would put them; a command without ``"$@"`` gets them at its end, and this info
    says so (bash would not pass them). Source: issue 12 item 1."""
    yield from script_notes(ctx, "FC122")


@rule(
    "FC123",
    "every part of the run script that sets values can be followed without running it",
    severity="info",
    kinds=_KINDS,
)
def script_not_followed(ctx: Context) -> Iterator[Finding]:
    """A condition the check cannot know (a file test, a command's status, an unknown value), a ``while``
    loop, ``source`` or ``eval``: every branch is read and a value the branches set differently is unknown
    (FC107 names the keys it feeds); a command inside such a branch is checked and labelled as maybe run.
    Source: issue 12 item 1 (``case``/``if`` on values the script itself sets)."""
    yield from script_notes(ctx, "FC123")


@rule(
    "FC124",
    "the run script's Hydra options and launcher options are read as verl reads them",
    severity="info",
    kinds=_KINDS,
)
def script_config_options(ctx: Context) -> Iterator[Finding]:
    """``--config-path``/``--config-name`` (verl's own ``ppo_megatron_trainer``, or the script's own config
    file read on top of verl's defaults), torchrun's ``--nproc_per_node``/``--nnodes`` (the world size of an
    SFT run), and options the check does not interpret (``--multirun``). Source: verl 0.9.1
    ``verl/trainer/main_ppo.py``/``sft_trainer.py`` (``@hydra.main``) and torchrun's command line."""
    yield from script_notes(ctx, "FC124")


@rule("FC125", "the run script's verl module exists in the pinned verl", severity="warning", kinds=_KINDS)
def script_missing_module(ctx: Context) -> Iterator[Finding]:
    """``python3 -m verl.trainer.NAME`` where verl 0.9.1 has no such module under ``verl/trainer/``: the command
    fails at once with ``No module named``. Source: verl 0.9.1's ``verl/trainer/`` modules (``main_ppo``,
    ``main_ppo_v0``, ``main_eval``, ``main_generation_server``, ``sft_trainer``, ``sft_trainer_ray``)."""
    yield from script_notes(ctx, "FC125")


@rule("FC132", "a command of the run script is not cut short by `\\ # comment`", severity="error", kinds=_KINDS)
def script_command_cut(ctx: Context) -> Iterator[Finding]:
    """``key=value \\ # comment`` in the middle of a command: the backslash quotes the blank after it instead of
    continuing the line, so bash passes `` #`` and the comment's words to the trainer (Hydra cannot parse
    them: verl stops) and the lines after it become commands of their own, whose overrides verl never gets.
    Source: bash's quoting rules (``man bash``, QUOTING: a backslash preserves the next character), issue 20."""
    yield from script_notes(ctx, "FC132")


@rule("FC133", "the run script has Unix line ends (bash reads a CRLF script's \\r)", severity="error", kinds=_KINDS)
def script_crlf(ctx: Context) -> Iterator[Finding]:
    """A script saved with Windows line ends (CRLF): bash keeps the ``\\r`` as the last character of each line, so
    no ``\\`` line continuation continues (the overrides on the lines after it run as commands of their own and
    never reach verl) and the last word of each line ends in ``\\r`` (``set -e\\r``: invalid option). The check
    reads the script as meant, to report the rest, and this error names the file and the fix (``dos2unix``); made
    by :func:`fsdpcfg.check.sources.check_run_script` for every command of the script. Source: bash's lexer (a line
    ends at a newline only); issue 20."""
    return iter(())


@rule("FC134", "every verl command of the run script is reached", severity="error", kinds=_KINDS)
def script_unreached(ctx: Context) -> Iterator[Finding]:
    """A verl command the script writes that bash never runs, on every path the check follows: the script exits
    before it (``exit 1``, a guard that always fires, a ``die`` function), or an arithmetic error (``$((64 / N))``
    with ``N`` 0, ``2 ** -1``) abandons the statement that holds it (bash goes on with the next statement: the
    command, the loop, the function call it is in never runs). Without it the script would pass as having nothing
    to check. Made by :func:`fsdpcfg.check.sources.check_run_script`; compared with bash itself in
    tests/check/test_bash_oracle.py. Source: bash's ``exit`` and its arithmetic errors; issue 20."""
    return iter(())
