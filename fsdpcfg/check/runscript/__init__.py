"""Read verl run scripts the way bash reads them, without running them.

:mod:`fsdpcfg.check.runscript.bash` (statements; :mod:`~fsdpcfg.check.runscript.expand`: word expansion) parses a script
with tree-sitter's bash grammar and evaluates the subset of bash that run scripts use (assignments, arrays, parameter
expansion, ``case``/``if``/``[[ ]]`` on values the script sets, functions, ``"$@"``) into the commands bash would run,
each argument a :class:`Word` with its script line and, when the check cannot know it, the reason.
:mod:`fsdpcfg.check.runscript.verl_cmd` recognises verl's entry points in those commands (``python -m
verl.trainer.main_ppo``, ``torchrun -m verl.trainer.sft_trainer``, ``ray job submit -- ...``). Nothing in the script is
executed: no command runs, no file is read or written but the script.
"""

from fsdpcfg.check.runscript.bash import evaluate, evaluate_variants
from fsdpcfg.check.runscript.verl_cmd import VerlCommand, find_verl_commands
from fsdpcfg.check.runscript.words import Command, Evaluation, Note, Word

__all__ = [
    "Command",
    "Evaluation",
    "Note",
    "VerlCommand",
    "Word",
    "evaluate",
    "evaluate_variants",
    "find_verl_commands",
]
