"""Recognise verl's entry points in the commands of an evaluated run script.

A command is a verl command when one of its words names a verl module after ``-m``
(``python3 -m verl.trainer.main_ppo``, ``torchrun ... -m verl.trainer.sft_trainer``,
``python -m torch.distributed.run ... -m verl.trainer.sft_trainer``) or a verl file
(``python3 verl/trainer/main_ppo.py``); whatever comes before it (``ray job submit ... --``, ``nohup``, ``env``,
``srun``) is a launcher. After the entry point come Hydra's options (``--config-path``, ``--config-name``) and the
overrides. Source: verl 0.9.1 ``verl/trainer/main_ppo.py`` and ``sft_trainer.py``/``sft_trainer_ray.py``
(``@hydra.main(config_path="config", config_name=...)``) and Hydra's command line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from fsdpcfg.check.runscript.words import Command, Evaluation, Word

#: verl entry point (module) -> the kind of config fsdpcfg checks it on ("ppo": verl's ppo_trainer layout,
#: "sft": sft_trainer_engine). Source: verl 0.9.1 ``verl/trainer/*.py`` ``@hydra.main(config_name=...)``.
TRAINERS: dict[str, str] = {
    "verl.trainer.main_ppo": "ppo",
    "verl.trainer.sft_trainer": "sft",
    "verl.trainer.sft_trainer_ray": "sft",
}

#: verl 0.9.1's other modules under ``verl/trainer/`` that can be run (not trainers fsdpcfg checks).
OTHER_TRAINER_MODULES = frozenset(
    {"verl.trainer.main_eval", "verl.trainer.main_generation_server", "verl.trainer.main_ppo_v0"}
)

#: ``--config-name`` of verl's own configs -> (kind, fsdpcfg group options that select the same tree). The one
#: table for this mapping: ``engine=megatron`` is the group option of verl's Megatron tree (``ppo_megatron_trainer``).
CONFIG_NAMES: dict[str, tuple[str, tuple[str, ...]]] = {
    "ppo_trainer": ("ppo", ()),
    "ppo_megatron_trainer": ("ppo", ("engine=megatron",)),
    "sft_trainer_engine": ("sft", ()),
}

_HYDRA_OPTIONS = {
    "--config-path": "config_path",
    "-cp": "config_path",
    "--config-name": "config_name",
    "-cn": "config_name",
    "--config-dir": "config_dir",
    "-cd": "config_dir",
}
_LAUNCHERS = ("torchrun", "torch.distributed.run", "torch.distributed.launch")
#: torchrun options that take no value.
_TORCHRUN_FLAGS = frozenset({"--standalone", "--no-python", "--no_python", "--module", "--run-path", "--run_path"})


@dataclass
class VerlCommand:
    """One verl command of a run script.

    Attributes:
        entry: the verl module (``verl.trainer.main_ppo``), also when the script names its file.
        kind: ``"ppo"`` or ``"sft"`` for a trainer fsdpcfg checks (:data:`TRAINERS`), ``"other"`` for another
            verl entry point.
        line: the script line of the command.
        overrides: the Hydra overrides after the entry point, in order (``"$@"`` words included).
        hydra: Hydra's options (``config_path``, ``config_name``, ``config_dir``) -> their value.
        ignored: other options after the entry point (``--multirun``, ``--cfg``), not interpreted.
        launcher: ``"torchrun"`` when a torch launcher starts it, ``"ray job submit"`` or ``"python"``.
        launcher_options: the torch launcher's options (``nproc_per_node``, ``nnodes`` ...) -> value.
        conditional: why the check cannot tell whether it runs ("" when it does).
        uses_args: the command line has ``"$@"``/``$*``.
        cut: the line where ``\\ # comment`` ends the command (0 when none); ``cut_words``: the words bash
            reads from it (not overrides: rule FC132 reports them).
        inferred: the unknown command name (``$COMMAND``) of a command read as a trainer from its keys
            (``inferred_why``: why the name is unknown); "" for a command that names verl's module.
    """

    entry: str
    kind: str
    line: int
    overrides: list[Word] = field(default_factory=list)
    hydra: dict[str, Word] = field(default_factory=dict)
    ignored: list[Word] = field(default_factory=list)
    launcher: str = "python"
    launcher_options: dict[str, Word] = field(default_factory=dict)
    conditional: str = ""
    uses_args: bool = False
    cut: int = 0
    cut_words: list[Word] = field(default_factory=list)
    inferred: str = ""
    inferred_why: tuple[str, ...] = ()


def module_of(word: Word, after_m: bool) -> str | None:
    """The verl module a word names (``verl.trainer.main_ppo`` after ``-m``; ``.../verl/trainer/main_ppo.py``
    as a file), else None."""
    if not word.known:
        return None
    t = word.text
    if after_m and re.fullmatch(r"(verl|recipe)(\.[A-Za-z_][A-Za-z0-9_]*)+", t):
        return t
    if t in TRAINERS:  # a launcher module that takes the trainer's module as an argument (`-m pkg.launch MODULE`)
        return t
    if after_m or not t.endswith(".py"):
        return None
    parts = t[:-3].split("/")
    for top in ("verl", "recipe"):  # the last `verl/` of the path is the package (/src/verl/verl/trainer/...)
        if top in parts[:-1]:
            i = len(parts) - 1 - parts[::-1].index(top)
            if all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", p) for p in parts[i:]):
                return ".".join(parts[i:])
    return None


def find_verl_commands(ev: Evaluation) -> list[VerlCommand]:
    """Return the verl commands among ``ev.commands``, in script order."""
    out = []
    for cmd in ev.commands:
        vc = parse_command(cmd)
        if vc is not None:
            out.append(vc)
    return out


def parse_command(cmd: Command) -> VerlCommand | None:
    """Return the :class:`VerlCommand` of one command, or None when it runs no verl entry point."""
    argv = cmd.argv
    if not argv or (argv[0].known and argv[0].text in ("echo", "printf")):
        return None
    at = None
    for j, w in enumerate(argv):
        after_m = j > 0 and argv[j - 1].known and argv[j - 1].text in ("-m", "--module")
        mod = module_of(w, after_m)
        if mod is not None:
            at = (j, mod)
            break
    if at is None:
        return _inferred_command(cmd)
    j, mod = at
    kind = TRAINERS.get(mod, "other")
    before = argv[:j]
    vc = VerlCommand(mod, kind, cmd.line, conditional=cmd.conditional, uses_args=cmd.uses_args)
    launch_at = next((i for i, w in enumerate(before) if w.known and w.text.rsplit("/", 1)[-1] in _LAUNCHERS), None)
    if launch_at is not None:
        vc.launcher = "torchrun"
        vc.launcher_options = _torchrun_options(before[launch_at + 1 :])
    elif any(w.known and w.text == "ray" for w in before) and any(w.known and w.text == "submit" for w in before):
        vc.launcher = "ray job submit"
    vc.cut = cmd.cut
    if cmd.cut_words:
        vc.cut_words = argv[len(argv) - cmd.cut_words :]
        argv = argv[: len(argv) - cmd.cut_words]
    rest = argv[j + 1 :]
    i = 0
    while i < len(rest):
        w = rest[i]
        name, eq, value = w.text.partition("=")
        if name in _HYDRA_OPTIONS and (w.known or eq):  # `--config-path=$DIR`: the option is known, its value not
            key = _HYDRA_OPTIONS[name]
            if eq:
                vc.hydra[key] = Word(value, w.line, w.unknown, w.env, w.cli)
            elif i + 1 < len(rest):
                vc.hydra[key] = rest[i + 1]
                i += 1
            i += 1
            continue
        if w.known and w.text.startswith("-"):
            vc.ignored.append(w)
        else:
            vc.overrides.append(w)
        i += 1
    return vc


#: top-level sections only verl's PPO config has / only its SFT config has (verl 0.9.1 ``ppo_trainer.yaml``,
#: ``sft_trainer_engine.yaml``): they tell which trainer a command whose name is unknown runs.
_PPO_SECTIONS = frozenset({"actor_rollout_ref", "algorithm", "critic", "reward_model", "reward", "ray_kwargs"})
_SFT_SECTIONS = frozenset({"model", "optim", "engine"})
_SHARED_SECTIONS = frozenset({"data", "trainer"})


def _inferred_command(cmd: Command) -> VerlCommand | None:
    """A command whose name the check cannot know (``$COMMAND`` set outside the script) whose arguments are
    verl overrides (three or more ``key=value`` words of verl's top-level sections): checked as the trainer
    its keys belong to (``VerlCommand.inferred`` names the unknown word); None for any other command."""
    argv = cmd.argv
    if not argv or argv[0].known:
        return None
    sections = [w.text.lstrip("+~").split("=", 1)[0].split(".", 1)[0] for w in argv[1:] if w.known and "=" in w.text]
    verl = [s for s in sections if s in _PPO_SECTIONS | _SFT_SECTIONS | _SHARED_SECTIONS]
    if len(verl) < 3:
        return None
    ppo = any(s in _PPO_SECTIONS for s in verl)
    sft = any(s in _SFT_SECTIONS for s in verl)
    if ppo == sft and not (ppo or "data" in verl):
        return None
    entry = "verl.trainer.main_ppo" if ppo or not sft else "verl.trainer.sft_trainer"
    vc = VerlCommand(entry, TRAINERS[entry], cmd.line, conditional=cmd.conditional, uses_args=cmd.uses_args)
    vc.inferred, vc.inferred_why = argv[0].text, argv[0].unknown
    vc.cut = cmd.cut
    words = argv[1 : len(argv) - cmd.cut_words]
    vc.cut_words = argv[len(argv) - cmd.cut_words :] if cmd.cut_words else []
    for w in words:
        if w.known and w.text.startswith("-"):
            vc.ignored.append(w)
        else:
            vc.overrides.append(w)
    return vc


def _torchrun_options(words: list[Word]) -> dict[str, Word]:
    out: dict[str, Word] = {}
    i = 0
    while i < len(words):
        w = words[i]
        if not w.text.startswith("--"):
            i += 1
            continue
        name, eq, value = w.text[2:].partition("=")
        name = name.replace("-", "_")
        if eq:  # `--nproc_per_node=$1`: the name is known even when the value is not
            out[name] = Word(value, w.line, w.unknown, w.env)
        elif f"--{name}" in _TORCHRUN_FLAGS or w.text in _TORCHRUN_FLAGS:
            out[name] = Word("true", w.line)
        elif i + 1 < len(words):
            out[name] = words[i + 1]
            i += 1
        i += 1
    return out


def config_name_of(vc: VerlCommand) -> str | None:
    """The ``--config-name`` value without a ``.yaml`` suffix (None when not given or unknown)."""
    w = vc.hydra.get("config_name")
    if w is None or not w.known:
        return None
    name = w.text
    for suffix in (".yaml", ".yml"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return name
