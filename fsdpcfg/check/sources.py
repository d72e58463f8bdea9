"""Inputs of ``fsdpcfg check`` other than command-line overrides: recipe files, full config files (an
fsdpcfg or verl dump), verl config files (``defaults: [ppo_trainer, _self_]``), YAML that is no config (skipped,
FC130; the classification is :mod:`fsdpcfg.compose.config_file`) and verl run scripts
(``python3 -m verl.trainer.main_ppo key=value ...``).

Each function returns a :class:`Checked`: the findings and, when the config could be built, the composed
config (for the derived numbers). Nothing here runs the script, imports the user's code, or uses the network.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from fsdpcfg.check.config import check_config, compose_error_finding, compose_for_check, unexpected_compose_finding
from fsdpcfg.errors import ConfigError, UsageError
from fsdpcfg.rules.finding import Finding


def __getattr__(name: str) -> Any:
    """``SCRIPT_BASE`` and ``hydra_value`` live in :mod:`fsdpcfg.check.runscript.translate` (imported only when a run
    script is checked); kept here for callers of this module."""
    if name in ("SCRIPT_BASE", "hydra_value"):
        from fsdpcfg.check.runscript import translate

        return getattr(translate, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass
class Checked:
    """The result of checking one input: its label, findings, and the composed config when there is one.

    ``origin`` is the user's own place the input starts at, ``(file, line or None)``: the line of a recipe file's
    defaults list that names the recipe it extends, a run script's command; a finding none of whose keys the
    user wrote is located there (:func:`fsdpcfg.cli.check.location`), never in a file of fsdpcfg's tree.
    """

    label: str
    findings: list[Finding]
    composed: Any | None = None
    notes: list[str] = field(default_factory=list)
    #: a run script's command: (keys whose value the check judged, keys the script sets); None for other inputs
    keys_judged: tuple[int, int] | None = None
    #: of the keys the script sets, those of a group option the check cannot compose (FC108): not checked
    keys_unchecked: int = 0
    origin: tuple[str, int | None] | None = None
    #: a run script's command as verl's Hydra gets it (the script's own overrides, its --config-path and
    #: --config-name) and a note on the words the check could not know: what ``check --verl`` asks verl
    #: (:func:`fsdpcfg.check.runscript.translate.verl_job`); None for other inputs
    verl_job: tuple[dict[str, Any] | None, str] | None = None


@dataclass
class Located:
    """What a report of many inputs keeps of each composed config: the provenance that places each finding
    (:func:`fsdpcfg.cli.check.location`) and the run kind: ~80 KB a file, where the composed config is ~900 KB
    (measured with ``tracemalloc`` over 10 recipe files; ``tests/check/test_many_inputs_memory.py``)."""

    provenance: Any
    kind: str = "ppo"


def located(composed: Any) -> Any:
    """``composed`` reduced to its :class:`Located` part (``None`` stays ``None``)."""
    if composed is None:
        return None
    return Located(composed.provenance, getattr(composed, "kind", "ppo"))


def is_full_config(data: Any) -> bool:
    """True for a complete config (a dump of fsdpcfg's or verl's tree, PPO or SFT layout), false for a recipe
    (an overlay with a Hydra ``defaults`` list or a few sections); :func:`fsdpcfg.compose.config_file.classify`."""
    from fsdpcfg.compose.config_file import classify

    return classify(data).kind == "full"


def check_yaml_file(path: Path) -> Checked:
    """Check one YAML file, as :func:`fsdpcfg.compose.config_file.classify` reads it:

    * a recipe: composed as ``+recipe=<stem>`` with its folder as an extra recipe folder;
    * a full config (a run folder's ``config.yaml``, a verl dump) or a verl config file (``fsdpcfg export``'s
      ``config.yaml``: ``defaults: [ppo_trainer, _self_]``): :func:`fsdpcfg.compose.config_file.load`
      (a file without an ``fsdpcfg`` section is checked for ``launcher=verl``);
    * not a fsdpcfg or verl config (a workflow, docker-compose, a k8s manifest): the info FC130, nothing else.

    Raises:
        UsageError: the file does not exist.
    """
    from fsdpcfg.compose import config_file
    from fsdpcfg.rules.inputs import not_a_config

    path = Path(path)
    if not path.is_file():
        raise UsageError(f"no such file: {path}", fix="check the path (a folder: give the YAML files in it)")
    label = str(path)
    try:
        data, info = config_file.read(path)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        return Checked(
            label,
            [
                Finding(
                    "FC100",
                    "error",
                    [],
                    f"{where}: not valid YAML: {str(e).strip().splitlines()[0]}",
                    "fix the YAML syntax",
                    location=(label, mark.line + 1 if mark is not None else None),
                )
            ],
        )
    except ConfigError as e:  # past a bound of fsdpcfg.yamlio (alias bomb, depth, size), not UTF-8, unreadable
        line = re.match(rf"{re.escape(label)}:(\d+):", e.message)  # yamlio names the line of a syntax error
        loc: tuple[str, int | None] = (label, int(line.group(1)) if line else None)
        return Checked(label, [Finding("FC100", "error", [], e.message, e.fix or "fix the file", location=loc)])
    if info.kind == "unrelated":
        return Checked(label, [not_a_config("FC130", label, info.why)])
    try:
        failed: list[Finding] = []
        if info.kind in ("full", "verl"):
            composed = config_file.load(path)
        else:
            composed, failed = _compose_recipe_file(path)
    except UsageError:
        raise
    except ConfigError as e:
        return Checked(label, [compose_error_finding(e)])
    except Exception as e:  # Hydra/OmegaConf errors that are not ConfigError: still a finding
        return Checked(label, [unexpected_compose_finding(e, [str(path)])])
    origin = (label, _extends_line(path) if info.kind == "recipe" else None)
    if composed is None:
        return Checked(label, failed, origin=origin)
    return Checked(label, check_config(composed), composed, origin=origin)


def _extends_line(path: Path) -> int | None:
    """The line of a recipe file's defaults list that names the recipe it extends (``- qwen_grpo``), or ``None``."""
    from fsdpcfg.compose import available_options

    names = set(available_options("recipe"))
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    for i, line in enumerate(lines, 1):
        m = re.match(r"^\s*-\s*['\"]?/?(?:recipe/)?([\w.-]+?)(?:@[\w.]+)?['\"]?\s*(#.*)?$", line)
        if m and m.group(1) in names:
            return i
    return None


def _compose_recipe_file(path: Path) -> tuple[Any, list[Finding]]:
    """Compose a user's recipe file with :func:`fsdpcfg.check.compose_for_check` (a group option its defaults
    list names that does not exist is reported and the rest still checked): ``(composed or None, findings)``.
    A file named like a shipped recipe (``qwen_grpo.yaml``) would be shadowed by it in Hydra's search path, so
    it is selected under a name of its own (a symlink in a temporary folder); its ``defaults`` may still name
    the shipped recipe or other files of its folder."""
    import tempfile

    from fsdpcfg.compose import available_options

    folder = path.parent.resolve()
    if path.stem not in available_options("recipe"):
        return compose_for_check([f"+recipe={path}"], extra_recipe_dirs=[folder])
    with tempfile.TemporaryDirectory(prefix="fsdpcfg-check-") as tmp:
        alias = Path(tmp) / f"{path.stem}__file.yaml"
        alias.symlink_to(path.resolve())
        return compose_for_check([f"+recipe={alias}"], extra_recipe_dirs=[Path(tmp), folder])


def parse_run_script(
    text: str,
    *,
    args: list[str] | None = None,
    extra: Sequence[str] = (),
    environ: Mapping[str, str] | None = None,
    script_path: str = "run.sh",
):
    """Evaluate a run script as bash would (nothing is run) and return ``(evaluation, verl commands)``: see
    :func:`fsdpcfg.check.runscript.evaluate` (``args``: its positional arguments, ``None`` when not given; ``extra``:
    the words ``"$@"`` adds; ``environ``: the variables it may read) and
    :func:`fsdpcfg.check.runscript.find_verl_commands`."""
    from fsdpcfg.check.runscript import evaluate, find_verl_commands

    ev = evaluate(text, args=args, extra=extra, environ=environ, script_path=script_path)
    return ev, find_verl_commands(ev)


def check_run_script(
    path: Path,
    overrides: Sequence[str] = (),
    *,
    args: list[str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> list[Checked]:
    """Check every verl trainer command of a run script, along every path the check cannot choose between
    (one :class:`Checked` per command and path, labelled ``path:line`` and, where the script branches on what
    the check cannot know, ``[DEVICE=gpu]``: :func:`fsdpcfg.check.runscript.evaluate_variants`).

    The script is read by :mod:`fsdpcfg.check.runscript` (bash's grammar; nothing runs). ``overrides`` (given after
    the script on the check's command line) stand where the script writes ``"$@"``, else at the end of each
    command (FC122 says so); ``args`` are the script's positional arguments (``fsdpcfg check run.sh -- ARGS``);
    ``environ`` is the environment the script's unset variables come from (``os.environ`` when ``None``).

    Raises:
        UsageError: the file does not exist or runs no verl command on any path.
    """
    from fsdpcfg.check.runscript.fork import MAX_VARIANTS

    read = read_run_script(path, overrides, args=args, environ=environ)
    path, raw, text, variants, kept = Path(path), read.raw, read.text, read.variants, read.kept
    crlf = _crlf_finding(path, raw)
    never = _never_reached(path, text, variants)
    if not kept and not never:
        no_verl_command(path, variants[0].evaluation)
    out = []
    for label, ev, cmds in kept[:MAX_VARIANTS]:
        for vc in cmds:
            where = f"{path}:{vc.line}" + (f" [{label}]" if label else "")
            out.append(_check_command(path, ev, vc, where, overrides))
    out += never
    if crlf is not None:
        for checked in out:
            checked.findings.insert(0, crlf)
    if len(kept) > MAX_VARIANTS:
        out[-1].findings.append(
            Finding(
                "FC123",
                "info",
                [],
                f"{path}: the script has {len(kept)} paths the check cannot choose between; "
                f"the first {MAX_VARIANTS} were checked",
                "give the script's arguments (`-- ARGS`) or the variables that choose its branches",
            )
        )
    return out


@dataclass
class ScriptRead:
    """A run script read along every path the check cannot choose between (:func:`read_run_script`).

    Attributes:
        raw: the file's text as bash reads it (``\\r`` kept); ``text``: with Unix line ends (what was evaluated).
        variants: every :class:`~fsdpcfg.check.runscript.fork.Variant` of the script.
        kept: ``(label, evaluation, verl commands)`` per path that runs verl commands, paths that run the same
            commands merged into one (their labels joined by `` | ``, ``""`` when the script has no choice point).
    """

    raw: str
    text: str
    variants: list[Any]
    kept: list[tuple[str, Any, list[Any]]]


def read_run_script(
    path: Path,
    overrides: Sequence[str] = (),
    *,
    args: list[str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> ScriptRead:
    """Read a run script as :func:`check_run_script` does (nothing runs): evaluate it along each path and keep the
    paths that run verl commands (``kept`` may be empty: :func:`no_verl_command` says why).

    Raises:
        UsageError: the file does not exist or cannot be read as text.
    """
    from fsdpcfg.check.runscript import evaluate_variants, find_verl_commands

    path = Path(path)
    if not path.is_file():
        raise UsageError(f"no such file: {path}")
    try:
        with open(path, newline="") as fh:  # as bash reads it: a \r at a line's end is kept
            raw = fh.read()
    except UnicodeDecodeError as e:
        raise UsageError(
            f"cannot read {path}: not UTF-8 text (byte {e.start})",
            fix=f"save it as UTF-8 (e.g. iconv -f latin1 -t utf-8 {path} > fixed.sh), then check that file",
        ) from None
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror or e}", fix="check the path and its permissions") from None
    text = raw.replace("\r\n", "\n")  # read as meant, so that the rest is checked too (FC133 says what bash does)
    try:
        variants = evaluate_variants(text, args=args, extra=overrides, environ=environ, script_path=str(path))
    except RecursionError:  # expansions nested thousands deep (`${A:-${A:-...}}`): no run script is written so
        raise UsageError(
            f"{path}: its expansions nest too deep to read (thousands of levels)",
            fix="flatten the nested ${...} expansions",
        ) from None
    kept: list[tuple[str, Any, list]] = []
    seen: dict[tuple, int] = {}
    for v in variants:
        cmds = find_verl_commands(v.evaluation)
        if not cmds:
            continue
        sig = tuple(tuple((w.text, w.unknown) for w in c.overrides) + (c.entry, c.line) for c in cmds)
        if sig in seen:  # the same commands along another path: one check, both labels
            i = seen[sig]
            kept[i] = (f"{kept[i][0]} | {v.label}" if kept[i][0] and v.label else "", kept[i][1], kept[i][2])
            continue
        seen[sig] = len(kept)
        kept.append((v.label, v.evaluation, cmds))
    return ScriptRead(raw, text, list(variants), kept)


def _crlf_finding(path: Path, raw: str) -> Finding | None:
    """FC133 for a script with Windows line ends (CRLF), None for one without: bash keeps the ``\r`` as the last
    character of each line, so ``\\`` + CR continues no command, the lines after it run as commands of their own,
    and each line's last word ends in ``\r`` (``set -x\r``: invalid option). Source: bash's lexer (only a newline
    ends a line); issue 20."""
    lines = [i for i, line in enumerate(raw.split("\n"), 1) if line.endswith("\r")]
    if not lines:
        return None
    continued = sum(1 for line in raw.split("\n") if line.endswith("\\\r"))
    return Finding(
        "FC133",
        "error",
        [],
        f"{path} has Windows line ends (CRLF) on {len(lines)} line(s), from line {lines[0]}: bash keeps the \\r as "
        "the last character of each line"
        + (
            f", so none of the {continued} `\\` line continuations continues its command (the overrides on the "
            "lines after each run as commands of their own, never reaching verl)"
            if continued
            else ""
        )
        + ", and the last word of each line ends in \\r (`set -e\\r`: invalid option); the check read it as if "
        "the line ends were Unix ones",
        f"convert the line ends: dos2unix {path} (or sed -i 's/\\r$//' {path})",
        location=(str(path), lines[0]),
    )


#: a verl trainer named in a script's text (``-m verl.trainer.main_ppo``, ``verl/trainer/main_ppo.py``)
_VERL_TEXT = re.compile(r"(?:^|[\s=])-m\s+(?:verl|recipe)\.\w+(?:\.\w+)+|(?:^|[\s/\"'])verl/trainer/\w+\.py")


def _never_reached(path: Path, text: str, variants: Sequence[Any]) -> list[Checked]:
    """FC134 for each verl command written in the script that bash never runs because the script stops before it
    on every path the check follows: an ``exit`` before it, or an arithmetic error (``$((64 / N))`` with N 0) in
    the statement that holds it, which bash abandons (it goes on after it). A command on a branch the check's
    arguments do not take (``case "$1"``) is not one. Compared with bash in tests/check/test_bash_oracle.py."""
    from fsdpcfg.check.runscript import find_verl_commands

    written = [
        i
        for i, line in enumerate(text.splitlines(), 1)
        if not line.lstrip().startswith("#") and _VERL_TEXT.search(line.split(" #", 1)[0])
    ]
    out = []
    for line in written:
        reasons = []
        for v in variants:
            ev = v.evaluation
            if any(_spans(c, line) for c in find_verl_commands(ev)):
                break  # run on this path
            aborted = next((n for n in ev.notes if n.kind == "aborted" and n.covers(line)), None)
            stop = next((n for n in ev.notes if n.kind == "exit" and n.line < line), None)
            if aborted is None and stop is None:
                break  # not stopped before it (a branch not taken): not this rule's
            if aborted is not None:
                reasons.append(aborted.message)
            elif stop is not None:
                detail = stop.message.removeprefix("the script exits here (").removesuffix(")")
                reasons.append(f"the script stops at line {stop.line} before it ({detail})")
        else:
            out.append(
                Checked(
                    f"{path}:{line}",
                    [
                        Finding(
                            "FC134",
                            "error",
                            [],
                            f"{path}:{line}: the verl command is never reached: {reasons[0]}",
                            "remove what stops the script before the command (fix the arithmetic, or the exit's "
                            "condition), or give the arguments that take it there (`-- ARGS`)",
                            location=(str(path), line),
                        )
                    ],
                    origin=(str(path), line),
                )
            )
    return out


def _spans(vc: Any, line: int) -> bool:
    """True when the verl command ``vc`` is written over ``line`` (from its name to its last word)."""
    last = max([vc.line, *(w.line for w in vc.overrides if w.line), *(w.line for w in vc.hydra.values() if w.line)])
    return vc.line <= line <= last


def no_verl_command(path: Path, ev: Any) -> None:
    """Raise the usage error of a script that runs no verl command, saying why (a syntax error, an exit, a
    command the check cannot know)."""
    where = f" (bash's grammar stops reading it at line {ev.syntax_error_line})" if ev.syntax_error_line else ""
    exits = [n for n in ev.notes if n.kind == "exit"]
    if exits:
        where += f" (with these arguments it stops at line {exits[0].line}: {exits[0].message})"
    unknown = [c for c in ev.commands if not c.argv[0].known]
    if unknown:
        where += f" (the command at line {unknown[0].line} cannot be known: {unknown[0].argv[0].unknown[0]})"
    raise UsageError(
        f"{path}: no verl command found{where} (`python3 -m verl.trainer.main_ppo ...`, "
        "`torchrun ... -m verl.trainer.sft_trainer ...`)",
        fix="give a shell script that runs a verl trainer, a YAML file, or overrides",
    )


def _check_command(path: Path, ev: Any, vc: Any, label: str, overrides: Sequence[str]) -> Checked:
    """Check one verl command of one path of a run script (see :func:`check_run_script`)."""
    from fsdpcfg.check.runscript import Word
    from fsdpcfg.check.runscript.translate import drop_guessed, key_of, not_a_trainer, translate, verl_job
    from fsdpcfg.check.runscript.verl_cmd import TRAINERS
    from fsdpcfg.compose.provenance import Source
    from fsdpcfg.rules.legacy_keys import REMOVED_MODULES, removed_module_finding
    from fsdpcfg.verlref import VERL_VERSION

    notes = _script_notes(ev, vc, label)
    if overrides and not vc.uses_args:
        vc.overrides.extend(Word(o, 0, (), (), True) for o in overrides)
        notes.append(
            Finding(
                "FC122",
                "info",
                [key_of(o) for o in overrides if "=" in o],
                f'{label}: the command has no "$@", so bash would not pass the overrides given '
                f"after the script ({' '.join(overrides)}); the check applied them at its end",
                'add "$@" at the end of the command to pass overrides to it',
            )
        )
    removed = removed_module_finding(vc.entry, label, [key_of(w.text) for w in vc.overrides if "=" in w.text])
    if removed is not None:  # FC708: a trainer module verl removed, checked as its replacement where it has one
        notes.append(removed)
        replacement = REMOVED_MODULES[vc.entry]
        if replacement.moves or replacement.replacement not in TRAINERS:
            return Checked(label, notes)  # another config layout: the keys are named in the finding
        vc.entry, vc.kind = replacement.replacement, TRAINERS[replacement.replacement]
    if vc.kind == "other":
        return Checked(label, notes + [not_a_trainer(vc, label)])
    tr = None
    try:
        tr = translate(vc, ev, path, label)
        searchpath = next(
            (w.text.split("=", 1)[1] for w in vc.overrides if w.text.lstrip("+").startswith("hydra.searchpath=")), None
        )
        composed, errors = compose_for_check(tr.overrides, verl_composes=True, searchpath=searchpath)
    except ConfigError as e:
        errors, composed = [compose_error_finding(e)], None
    except Exception as e:  # Hydra/OmegaConf errors that are not ConfigError: still a finding
        return Checked(label, [unexpected_compose_finding(e, [w.text for w in vc.overrides])] + notes)
    for f in errors + (list(composed.refused) if composed is not None else []):
        for key in f.keys:  # the script line the refused word is on
            if tr is not None and key in tr.lines:
                f.provenance[key] = tr.lines[key]
                file, _, line = tr.lines[key].rpartition(":")
                if f.location is None and file and line.isdigit():
                    f.location = (file, int(line))
    job = verl_job(vc, tr.config if tr is not None else None)
    if composed is None:
        checked = Checked(label, errors + notes + (tr.notes if tr is not None else []), origin=(str(path), vc.line))
        checked.keys_judged = tr.keys_judged() if tr is not None else None
        checked.keys_unchecked = len(tr.unchecked) if tr is not None else 0
        checked.verl_job = job
        return checked
    assert tr is not None
    composed.overrides = list(tr.user_overrides)  # the script's own words; the base and resets are ours
    composed.plus_refused = {**tr.plus_refused, **(getattr(composed, "plus_refused", None) or {})}
    for key in tr.resets:
        composed.provenance.record(
            key, Source("default", f"verl {VERL_VERSION}'s default ({tr.config}; the run script does not set it)")
        )
    for key, where in tr.lines.items():
        composed.provenance.record(key, Source("override", where) if where == "command line" else Source("file", where))
    composed.script_notes = notes + tr.notes  # reported by rules FC107, FC108, FC120-FC125, FC132 and FC708
    composed.unmodelled = tuple(tr.packages)  # sections whose engine layout the check cannot know (FC108)
    checked = Checked(label, drop_guessed(check_config(composed)), composed, origin=(str(path), vc.line))
    checked.keys_judged = tr.keys_judged()
    checked.keys_unchecked = len(tr.unchecked)
    checked.verl_job = job
    return checked


def _script_notes(ev, vc, label: str) -> list[Finding]:
    """The findings about the script as a whole that bear on the command ``vc``: what could not be followed
    before it (FC123), environment variables read outside its overrides (FC120), a bash syntax error (FC123)."""
    out = []
    for n in ev.notes:
        if n.line > vc.line or n.kind == "exit":
            continue
        out.append(
            Finding(
                "FC123",
                "info",
                [],
                f"{label}: line {n.line}: {n.message}",
                "give the script's arguments (`-- ARGS`) or set the values it tests in the script",
            )
        )
    fed = {e.split("=", 1)[0] for w in vc.overrides for e in w.env}
    for name, (value, line) in ev.env_used.items():
        if name not in fed and line <= vc.line:
            out.append(
                Finding(
                    "FC120",
                    "info",
                    [],
                    f"{label}: `${name}` (line {line}) is not set by the script; the "
                    f"check took it from its own environment ({name}={value})",
                    f"make sure {name} is the same where the script runs",
                )
            )
    if ev.syntax_error_line:
        out.append(
            Finding(
                "FC123",
                "info",
                [],
                f"{label}: bash's grammar cannot read line {ev.syntax_error_line}; the script was read up to it",
                "check the script with `bash -n`",
            )
        )
    return out
