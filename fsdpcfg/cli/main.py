"""Dispatch ``fsdpcfg SUBCOMMAND ...`` to ``fsdpcfg.cli.<subcommand>``; anything else is a run.

``python -m fsdpcfg +recipe=qwen_grpo [OVERRIDES]`` composes, validates, plans and launches a run
(:mod:`fsdpcfg.cli.run`). ``fsdpcfg check|export|ls|show|cp|import|diff|schema|explain|doctor|assets|preview|plot
...`` run the subcommand of that name. Each subcommand module defines ``add_arguments(parser)`` and ``run(args) -> int``
and is imported only when chosen, so ``fsdpcfg check`` stays free of torch.

User mistakes (:class:`fsdpcfg.errors.ConfigError`, and ``OSError`` on a path the user gave) are printed
without a traceback; the exit code is 1 for a bad config or an unusable path and 2 for a usage error.
"""

from __future__ import annotations

import argparse
import importlib
import keyword
import sys

#: subcommand -> one-line help. The module ``fsdpcfg.cli.<name>`` implements it (``<name>_`` for a Python keyword:
#: ``import`` is :mod:`fsdpcfg.cli.import_`).
COMMANDS: dict[str, str] = {
    "run": "compose, check, plan and launch a run (the default when no subcommand is given)",
    "check": "pre-flight checks and lint of a config, recipe files or a verl run script",
    "export": "write a runnable verl script and YAML for a config",
    "ls": "list recipes and every group option",
    "show": "print the resolved config with each value's provenance",
    "cp": "copy a recipe into a new child recipe",
    "import": "turn a verl run script into a fsdpcfg recipe (read, not run)",
    "diff": "difference of two resolved configs",
    "schema": "export JSON Schema from the Pydantic models",
    "explain": "explain a config key or a rule ID",
    "doctor": "validate a model for training and rollout, cheapest stage first",
    "assets": "build the offline assets (tiny models) the offline recipes use",
    "preview": "the first data rows as the model sees them: chat template, token counts, reward of a correct answer",
    "plot": "learning curves of runs (reward, validation, length, entropy, grad norm, step time) as one PNG",
}


def main(argv: list[str] | None = None) -> int:
    """Run the CLI with ``argv`` (default ``sys.argv[1:]``) and return the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    name = "run"
    if argv and argv[0] in COMMANDS:
        name = argv.pop(0)
    elif argv and argv[0] in ("-h", "--help"):
        print(_usage())
        return 0
    elif argv and _looks_like_command(argv[0]):
        # a bare word is never a Hydra override (those hold `=` or start with + ~): a mistyped subcommand
        from fsdpcfg.errors import did_you_mean

        close = did_you_mean(argv[0], COMMANDS)
        hint = f"did you mean `fsdpcfg {close[0]}`? " if close else ""
        print(
            f"fsdpcfg: error: unknown command `{argv[0]}`\n  -> {hint}commands: {', '.join(COMMANDS)}", file=sys.stderr
        )
        return 2
    from fsdpcfg.redact import filter_streams

    restore = filter_streams()  # no line fsdpcfg prints holds a secret's value (fsdpcfg.redact)
    try:
        return _dispatch(name, argv)
    finally:
        restore()


def _dispatch(name: str, argv: list[str]) -> int:
    from fsdpcfg.errors import ConfigError, Interrupted

    module_name = f"fsdpcfg.cli.{name}_" if keyword.iskeyword(name) else f"fsdpcfg.cli.{name}"
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        if e.name == module_name:
            print(f"fsdpcfg: the `{name}` command is not available in this version", file=sys.stderr)
            return 2
        raise
    parser = argparse.ArgumentParser(
        prog=f"fsdpcfg {name}" if name != "run" else "python -m fsdpcfg", description=COMMANDS[name]
    )
    module.add_arguments(parser)
    try:
        args = parser.parse_args(argv) if not getattr(module, "PASS_THROUGH", False) else module.parse(parser, argv)
        return int(module.run(args) or 0)
    except ConfigError as e:
        print(f"fsdpcfg: error: {e}", file=sys.stderr)
        return e.exit_code
    except OSError as e:  # a path the user gave that cannot be read or written (a file where a folder goes, ...)
        where = f" {e.filename}" if getattr(e, "filename", None) else ""
        print(f"fsdpcfg: error: cannot use{where}: {e.strerror or e}", file=sys.stderr)
        return 1
    except Interrupted as e:  # a signal stopped the run; torchrun and its ranks are gone
        print(f"fsdpcfg: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("fsdpcfg: interrupted", file=sys.stderr)
        return 130


def _looks_like_command(word: str) -> bool:
    """True for a bare word such as ``chek`` (no ``=``, ``+``, ``~``, ``-``, ``/``, ``.``): not an override."""
    return word.replace("_", "").replace("-", "").isalnum() and not word.startswith("-")


def _usage() -> str:
    lines = [
        "usage: fsdpcfg [SUBCOMMAND] [ARGS...]",
        "       python -m fsdpcfg +recipe=NAME [OVERRIDES...]",
        "",
        "subcommands:",
    ]
    lines += [f"  {k:<8} {v}" for k, v in COMMANDS.items()]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
