"""Turn one verl command of a run script into fsdpcfg compose overrides over verl's defaults.

Our tree is composed with ``launcher=verl`` and the groups closest to verl's defaults (:data:`SCRIPT_BASE` for
``main_ppo``, :data:`SFT_BASE` for ``sft_trainer``; plus the group options of verl's ``--config-name``, see
:data:`fsdpcfg.check.runscript.verl_cmd.CONFIG_NAMES`); every key where that tree still differs from verl 0.9.1's
default is reset to verl's default (except keys set by a group option the script chose); then the keys of the
script's own ``--config-path``/``--config-name`` file, then the script's overrides in order (``+`` added for keys
only verl knows). What could not be read becomes an info finding (FC107, FC120-FC125) that names the key it feeds.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from fsdpcfg import verlref
from fsdpcfg.check.runscript.verl_cmd import (
    CONFIG_NAMES,
    OTHER_TRAINER_MODULES,
    VerlCommand,
    config_name_of,
)
from fsdpcfg.check.runscript.words import Evaluation, Word
from fsdpcfg.rules.finding import Finding

#: group options that put our ppo tree on verl's defaults before a script's overrides apply.
SCRIPT_BASE = ["launcher=verl", "trainer=gpu_8x", "engine=fsdp", "patches=remove_padding"]
#: the same for ``verl.trainer.sft_trainer`` (verl's sft_trainer_engine layout: fsdpcfg's SFT tree).
SFT_BASE = ["+recipe=qwen_sft", "launcher=verl", "trainer=gpu_8x"]
#: verl config a kind is checked against when the script names none.
DEFAULT_CONFIG = {"ppo": "ppo_trainer", "sft": "sft_trainer_engine"}
#: verl 0.9.1's own config groups and their default option (the ``defaults`` lists of
#: ``verl/trainer/config/sft_trainer_engine.yaml`` and ``ppo_trainer.yaml``): a script that names the default
#: option (``model=hf_model``, ``engine=fsdp``, ``optim=fsdp``) changes nothing from verl's defaults, which the
#: check starts from, whatever fsdpcfg's own option of that name sets.
VERL_DEFAULT_GROUPS = {
    "sft": {"model": "hf_model", "engine": "fsdp", "optim": "fsdp", "profiler": "profiler"},
    "ppo": {"model_engine": "dp", "data": "legacy_data"},
}
#: torchrun option -> the key that carries the same number in verl's SFT config (fsdpcfg's SFT rules compute
#: the world size from them; verl's torchrun trainer takes it from torchrun). Source: verl 0.9.1 sft_trainer.py.
TORCHRUN_KEYS = {"nproc_per_node": "trainer.n_gpus_per_node", "nnodes": "trainer.nnodes"}


@dataclass
class Translation:
    """Compose overrides for one command, the provenance of each key the script set (``key -> where``) and the
    findings about what could not be read."""

    overrides: list[str]
    lines: dict[str, str]
    notes: list[Finding]
    kind: str
    config: str = "ppo_trainer"
    user_overrides: list[str] = field(default_factory=list)
    resets: list[str] = field(default_factory=list)
    plus_refused: dict[str, str] = field(default_factory=dict)
    unknown_keys: list[str] = field(default_factory=list)
    #: keys below the package of a group option the check cannot compose (FC108) that fsdpcfg's tree lacks: not
    #: checked, neither their values nor their names
    unchecked: list[str] = field(default_factory=list)
    #: the sections those group options fill (``actor_rollout_ref.actor``, SFT's ``engine``)
    packages: list[str] = field(default_factory=list)

    def keys_judged(self) -> tuple[int, int]:
        """``(judged, set)``: of the keys the script sets, how many have a value the check knows (the rest have
        only their name checked, FC107, or are keys of a group option the check cannot compose, FC108)."""
        known = {key_of(t) for t in self.user_overrides if "=" in t} - set(self.unknown_keys)
        return len(known), len(known | set(self.unknown_keys) | set(self.unchecked))


def key_of(override: str) -> str:
    """``+a.b=1`` -> ``a.b``; ``~a.b`` -> ``a.b``."""
    return override.lstrip("+~").split("=", 1)[0]


def not_a_trainer(vc: VerlCommand, label: str) -> Finding:
    """FC121 (another verl entry point) or FC125 (a ``verl.trainer`` module verl 0.9.1 does not have)."""
    if vc.entry.startswith("verl.trainer.") and vc.entry not in OTHER_TRAINER_MODULES:
        return Finding(
            "FC125",
            "warning",
            [],
            f"{label}: `{vc.entry}` is not a module of verl "
            f"{verlref.VERL_VERSION} (its verl/trainer/ has main_ppo, main_ppo_v0, main_eval, "
            "main_generation_server, sft_trainer, sft_trainer_ray): the command fails with "
            "`No module named`",
            "run verl.trainer.main_ppo (or the module of your verl fork)",
        )
    return Finding(
        "FC121",
        "info",
        [],
        f"{label}: `{vc.entry}` is not a trainer fsdpcfg checks (it checks "
        "verl.trainer.main_ppo and verl.trainer.sft_trainer); the command was not checked",
        "check the trainer's own command, or this entry point's config with verl",
    )


def translate(vc: VerlCommand, ev: Evaluation, script: Path, label: str) -> Translation:
    """Return the compose overrides for ``vc`` (a ``ppo`` or ``sft`` command) and the findings about it.

    Raises:
        ConfigError: composing the base tree fails (a group option of the script that does not exist).
    """
    from fsdpcfg.compose import available_options, groups

    kind = vc.kind
    notes: list[Finding] = []
    lines: dict[str, str] = {}

    def where(w: Word) -> str:
        return "command line" if w.cli else f"{script}:{w.line}"

    config, extra_groups, file_items = _config_choice(vc, script, label, notes)
    items = file_items + [(w, where(w)) for w in vc.overrides]
    sft_engine = _sft_engine_option(items) if kind == "sft" else None
    searchpath = searchpath_of(vc)
    user: list[str] = []
    unknown: list[tuple[Word, str]] = []
    unmodelled: list[tuple[Word, str, str, str]] = []  # (word, group, package, why): verl composes them, we cannot
    for w, src in items:
        if not w.known:
            user.append(f"\0{len(unknown)}")  # where its key is judged (below), in the script's order
            unknown.append((w, key_of(w.text)))
            continue
        group, eq, option = w.text.partition("=")
        if (
            kind == "sft"
            and eq
            and group == "optim"
            and unmodelled_option(f"engine={sft_engine}", kind, searchpath, config)
        ):
            # the optimizer config of an engine the check cannot compose (engine=mlite: optim=megatron)
            unmodelled.append(
                (w, group, group, f"the optimizer config of engine={sft_engine}, which it cannot compose")
            )
            continue
        if kind == "sft" and eq and group == "optim":
            if _sft_optim_note(w, option.strip("'\""), sft_engine, label, notes):
                continue
            user.append(w.text)  # not the engine's optimizer config: compose names both options and the fix
            lines["optim"] = src
            continue
        if eq and VERL_DEFAULT_GROUPS[kind].get(group) == option.strip("'\""):
            # verl's default option: verl's defaults (the resets below) already are what it selects
            notes.append(
                Finding(
                    "FC124",
                    "info",
                    [],
                    f"{label}: `{w.text}` (line {w.line}) is verl's default option of "
                    f"its `{group}` group: nothing to change",
                    "nothing to do",
                )
            )
            continue
        if w.text.startswith(("hydra.", "+hydra.", "++hydra.")):
            notes.append(
                Finding(
                    "FC124",
                    "info",
                    [],
                    f"{label}: `{w.text}` (line {w.line}) is a setting of Hydra "
                    "itself, not of verl's config; not checked",
                    "nothing to do",
                )
            )
            continue
        chosen = unmodelled_option(w.text, kind, searchpath, config)
        if chosen is not None:
            unmodelled.append((w, *chosen, ""))
            continue
        user.append(w.text)
        lines[key_of(w.text)] = src
        _env_note(w, key_of(w.text), label, notes)
    _launcher_keys(vc, kind, user, lines, notes, label, script)
    if kind == "ppo":
        # verl's `model_engine=megatron` is the engine= option that selects the same composition (issue 12.2)
        from fsdpcfg.compose import verl_base

        user = verl_base.engine_overrides(user)
        for t in user:
            if t.startswith("engine=") and t.split("=", 1)[1] in verl_base.ENGINE_COMPOSITION:
                config = verl_base.ENGINE_COMPOSITION[t.split("=", 1)[1]]
                lines.setdefault("engine", lines.get("model_engine", ""))
    if kind == "sft" and sft_engine is not None:
        from fsdpcfg.compose import verl_base

        config = verl_base.SFT_ENGINE_COMPOSITION.get(sft_engine, config)
    kind_groups = set(groups(kind))
    user_groups = [t for t in user if "=" in t and not t.startswith(("+", "~")) and key_of(t) in kind_groups]
    rollout = next(
        (t.split("=", 1)[1].strip("'\"") for t in user if key_of(t) == "actor_rollout_ref.rollout.name" and "=" in t),
        None,
    )
    rollout_group = [f"rollout={rollout}"] if kind == "ppo" and rollout in available_options("rollout") else []
    # one option per group (Hydra refuses two): the script's choice over the config name's over ours
    base = _one_per_group(
        list(SCRIPT_BASE if kind == "ppo" else SFT_BASE) + list(extra_groups) + rollout_group, user_groups
    )
    raw, chosen_keys = _base_tree(tuple(base), tuple(user_groups))
    ref_defaults = verlref.defaults(config)
    ref_keys = verlref.keys(config)
    user_keys = {key_of(t) for t in user}
    resets = []
    for key, ours in raw.items():
        if key in user_keys or key not in ref_keys or (isinstance(ours, str) and "${" in ours):
            continue
        if key in chosen_keys:
            continue  # the script chose the group option that sets it: its value stands
        theirs = ref_defaults.get(key)
        if theirs != ours and not (isinstance(theirs, str) and "${" in theirs):
            resets.append(f"{key}={hydra_value(theirs)}")
    out = base + resets
    unknown_keys = []
    plus_refused: dict[str, str] = {}
    named = []
    for tok in user:
        if tok.startswith("\0"):
            w, key = unknown[int(tok[1:])]
            stand_in = _name_only(w, key, ref_defaults, raw)
            if stand_in is None:
                continue
            # the key's name is judged with a stand-in value (its value stays unknown: FC107)
            tok = stand_in
            unknown_keys.append(key)
            lines.setdefault(key, where(w))
        named.append(tok)
    user, unchecked = _under_unmodelled(named, [p for _, _, p, _ in unmodelled if p], raw, ref_keys)
    unknown_keys = [k for k in unknown_keys if k not in unchecked]
    for w, group, package, why in unmodelled:
        below = [k for k in unchecked if package and (k == package or k.startswith(package + "."))]
        notes.append(_unmodelled_note(w, group, package, below, searchpath, label, script, why))
    for tok in user:
        key = tok.split("=", 1)[0]
        own_group = key in kind_groups or (kind == "sft" and key == "optim")  # verl's optim group: see above
        if not tok.startswith(("+", "~")) and "=" in tok and key not in raw and key in ref_keys and not own_group:
            tok = "+" + tok  # verl's own tree has it and ours does not: verl takes it as written
        elif tok.startswith("+") and not tok.startswith("++") and key_of(tok) in raw:
            if key_of(tok) in ref_keys and _plus_refused_by_hydra(tok, ref_defaults.get(key_of(tok))):
                plus_refused[key_of(tok)] = tok  # verl's tree has it: Hydra refuses the `+` (FC112)
            tok = tok[1:]  # (a key only our tree has: verl adds it, as written)
        out.append(tok)
    for w, key in unknown:
        reason = "; ".join(w.unknown)
        notes.append(
            Finding(
                "FC107",
                "info",
                [key] if "=" in w.text else [],
                f"{label}: `{w.text}` (line {w.line}): {reason}; "
                + (
                    f"{key} was not checked (verl's default stands in)"
                    if "=" in w.text
                    else "these words were not checked"
                ),
                f"set it in the script as a literal, or check with `fsdpcfg check {script} {key}=VALUE`"
                if "=" in w.text
                else "write the overrides in the script",
            )
        )
    for w in vc.ignored:
        notes.append(
            Finding(
                "FC124",
                "info",
                [],
                f"{label}: option `{w.text}` (line {w.line}) is not interpreted by the check",
                "nothing to do if it does not change the config",
            )
        )
    if vc.inferred:
        notes.append(
            Finding(
                "FC124",
                "info",
                [],
                f"{label}: the command is `{vc.inferred}` ({'; '.join(vc.inferred_why)}); its arguments are "
                f"verl overrides, checked as {vc.entry}'s (the trainer their keys belong to)",
                f"write the launcher in the script (e.g. `torchrun ... -m {vc.entry}`) to have it read as written",
            )
        )
    if vc.cut:
        cut = " ".join(repr(w.text) for w in vc.cut_words)
        notes.append(
            Finding(
                "FC132",
                "error",
                [],
                f"{label}: line {vc.cut}: `\\ #` ends the command there: the backslash quotes the blank after it, "
                f"so the line does not continue; bash passes {cut} to verl as overrides (Hydra cannot read them) "
                "and runs the lines after it as commands of their own, whose overrides verl never gets",
                f"move the comment to a line of its own above the command, or delete `\\ #...` at line {vc.cut} "
                "and end the line with a bare `\\`",
                location=(str(script), vc.cut),
            )
        )
    if vc.conditional:
        notes.append(
            Finding(
                "FC123",
                "info",
                [],
                f"{label}: this command may not run: {vc.conditional}",
                "check the script with the arguments or variables that select its branch",
            )
        )
    packages = list(dict.fromkeys(p for _, _, p, _ in unmodelled if p))
    return Translation(
        out,
        lines,
        notes,
        kind,
        config,
        user,
        [key_of(r) for r in resets],
        plus_refused,
        unknown_keys,
        unchecked,
        packages,
    )


def searchpath_of(vc: VerlCommand) -> str | None:
    """The value of the command's ``hydra.searchpath=[...]`` override (a package of configs verl composes with its
    own: ``[pkg://verl_mlite.config]``), or None."""
    for w in vc.overrides:
        if w.known and w.text.lstrip("+").startswith("hydra.searchpath="):
            return w.text.split("=", 1)[1]
    return None


def unmodelled_option(text: str, kind: str, searchpath: str | None, config: str) -> tuple[str, str] | None:
    """``(group, package)`` when the override ``text`` selects a group option fsdpcfg's tree cannot compose, else
    None: a group with a package (``actor@actor_rollout_ref.actor=mlite_actor``: verl's own group, or one a
    ``hydra.searchpath`` package adds options to), or, with a ``searchpath``, an option of one of fsdpcfg's groups that
    fsdpcfg does not have (``engine=mlite`` of an SFT command). ``package`` is the section the option fills
    (``actor_rollout_ref.actor``, ``engine``), "" when it is no section of verl's config ``config``. Without a
    search path an option fsdpcfg lacks is a mistake, FC100's. Source: Hydra's ``group@package=option`` override;
    verl's megatron-lite examples; issue 20 item 8."""
    from fsdpcfg.compose import available_options, groups

    group, eq, option = text.partition("=")
    if not eq or text.startswith(("+", "~")) or "." in group.split("@", 1)[0] or not option:
        return None
    sections = verlref.prefixes(config)
    if "@" in group:
        name, package = group.split("@", 1)
        return name, package if package in sections else ""
    if searchpath is None or group not in groups(kind) or option.strip("'\"") in available_options(group, kind):
        return None
    return group, group if group in sections else ""


def _under_unmodelled(
    tokens: list[str], packages: list[str], raw: Mapping[str, Any], ref_keys: frozenset[str]
) -> tuple[list[str], list[str]]:
    """``(tokens kept, keys not checked)``: a key below the package of a group option the check cannot compose that
    neither fsdpcfg's tree nor verl's composition has is the option's own (``actor_rollout_ref.actor.engine.tp`` of
    megatron-lite's actor): left out, not judged (not an unknown key, FC101/FC102). Its keys the tree has stay
    (``actor_rollout_ref.actor.ppo_mini_batch_size``): still judged."""
    kept, unchecked = [], []
    for tok in tokens:
        key = key_of(tok)
        if any(key == p or key.startswith(p + ".") for p in packages) and key not in raw and key not in ref_keys:
            unchecked.append(key)
            continue
        kept.append(tok)
    return kept, list(dict.fromkeys(unchecked))


def _unmodelled_note(
    w: Word,
    group: str,
    package: str,
    below: list[str],
    searchpath: str | None,
    label: str,
    script: Path,
    why: str = "",
) -> Finding:
    """FC108 (info) for a group option of a run script the check cannot compose (``why``: what it is, when not an
    option of a group the search path adds or of verl's own), naming its keys not checked."""
    where = why or (
        f"a group the hydra.searchpath {searchpath} adds" if searchpath else "one of verl's own config groups"
    )
    shown = ", ".join(below[:8]) + (f" and {len(below) - 8} more" if len(below) > 8 else "")
    return Finding(
        "FC108",
        "info",
        [],
        f"{label}: `{w.text}` (line {w.line}) selects an option of `{group}`, {where}; fsdpcfg's tree does not model "
        "it, so what it sets was not checked"
        + (f", nor the keys of {package} the script sets that only it defines ({shown})" if below else "")
        + " (the rest of the command was)",
        "check it with `fsdpcfg check --verl` (verl composes it) where "
        + (f"the package of {searchpath} is installed" if searchpath else "verl is installed"),
        location=(str(script), w.line),
    )


def _missing_searchpath(searchpath: str | None) -> str:
    """The entries of a ``hydra.searchpath=[...]`` value that are not on this machine (``pkg://verl_mlite.config``
    whose top-level package is not installed, a ``file://`` folder that does not exist), "" when none is. Looked up
    with ``importlib.util.find_spec`` of the top-level name, which imports nothing."""
    import importlib.util

    if not searchpath:
        return ""
    out = []
    for entry in searchpath.strip("[]").split(","):
        entry = entry.strip().strip("'\"")
        if entry.startswith("pkg://"):
            top = entry[len("pkg://") :].split(".", 1)[0].split("/", 1)[0]
            if not top or importlib.util.find_spec(top) is None:
                out.append(entry)
        elif entry.startswith("file://") and not Path(entry[len("file://") :]).expanduser().is_dir():
            out.append(entry)
    return ", ".join(out)


def verl_job(vc: VerlCommand, config: str | None = None) -> tuple[dict[str, Any] | None, str]:
    """The command as verl's ``@hydra.main`` gets it, as a job of :mod:`fsdpcfg.check.verl_opinion` (``kind``,
    ``config_dir``: the ``--config-path``, ``config`` for verl's own folder; ``config_name``; ``overrides``: the words
    bash passes, in order, not a tree the check composed), and a note for the report ("" when every word was
    known). A word whose value the check cannot know gets verl's default (its key is still judged, as by
    :func:`_name_only`); one whose key cannot be known is left out. ``config``: the verl composition the keys are
    measured against (:attr:`Translation.config`). ``(None, why)`` when the config verl would read cannot be known.
    """
    if vc.kind not in DEFAULT_CONFIG:
        return None, f"not asked: {vc.entry} is not a trainer fsdpcfg checks"
    name_word = vc.hydra.get("config_name")
    path_word = vc.hydra.get("config_path")
    if "config_dir" in vc.hydra:
        return None, "not asked: --config-dir adds a search path the second opinion does not model"
    for opt, w in (("--config-name", name_word), ("--config-path", path_word)):
        if w is not None and not w.known:
            return None, f"not asked: {opt} cannot be known here ({'; '.join(w.unknown)})"
    missing = _missing_searchpath(searchpath_of(vc))
    if missing:
        return (
            None,
            f"not asked: the command's hydra.searchpath {missing} is not installed here, so verl cannot compose it",
        )
    name = (config_name_of(vc) or DEFAULT_CONFIG[vc.kind]) if name_word is not None else DEFAULT_CONFIG[vc.kind]
    folder = path_word.text if path_word is not None else "config"
    defaults = verlref.defaults(config or DEFAULT_CONFIG[vc.kind])
    words: list[str] = []
    stood_in: list[str] = []
    left_out: list[str] = []
    for w in vc.overrides:
        if w.known:
            words.append(w.text)
            continue
        stand_in = _name_only(w, key_of(w.text), defaults, {})
        if stand_in is None:
            left_out.append(w.text)
        else:
            words.append(stand_in)
            stood_in.append(key_of(w.text))
    note = []
    if stood_in:
        note.append(f"verl's default stood in for the values the check cannot know ({', '.join(stood_in)})")
    if left_out:
        note.append(f"left out the words the check cannot know ({' '.join(left_out)})")
    job = {"kind": vc.kind, "config_dir": folder, "config_name": name, "overrides": words}
    if config is not None:
        job["composition"] = config
    return job, "; ".join(note)


def _name_only(w: Word, key: str, defaults: Mapping[str, Any], raw: Mapping[str, Any]) -> str | None:
    """``key=<stand-in>`` for a script word whose key is known and value is not (``trainer.nnodes=$NNODES``):
    the word's own ``+``/``++``/``~`` kept, the value verl's default (or our tree's, or null), so that the key
    is judged as on the command line (FC101/FC102/FC105/FC112/FC113). None when the key itself is unknown."""
    import re

    text = w.text
    prefix = text[: len(text) - len(text.lstrip("+~"))]
    if "=" not in text or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.\-@/]*", key) or "$" in key:
        return None
    if prefix == "~":
        return None
    value = defaults.get(key, raw.get(key))
    return f"{prefix}{key}={hydra_value(value) if not isinstance(value, (dict, list)) else 'null'}"


#: rules that judge a key's name, not its value: kept on a key whose value the script gives but the check
#: cannot know (drop_guessed).
KEY_NAME_RULES = frozenset({"FC100", "FC101", "FC102", "FC105", "FC112", "FC113"})


def _sft_engine_option(items: list[tuple[Word, str]]) -> str | None:
    """The ``engine=X`` group option an SFT command chooses (the last one; ``None`` when it names none)."""
    out = None
    for w, _ in items:
        group, eq, option = w.text.partition("=")
        if w.known and eq and group == "engine":
            out = option.strip("'\"")
    return out


def _sft_optim_note(w: Word, option: str, engine: str | None, label: str, notes: list[Finding]) -> bool:
    """verl's ``optim=X`` of an SFT command: True (and an FC124 info) when it is the optimizer config of the
    command's ``engine`` option (``optim=megatron`` with ``engine=megatron``; ``optim=fsdp``, verl's default,
    with the FSDP engine), which the engine option selects with it in fsdpcfg's SFT tree."""
    from fsdpcfg.compose import verl_base

    engine = engine or VERL_DEFAULT_GROUPS["sft"]["engine"]
    if verl_base.SFT_OPTIM.get(engine) != option:
        return False
    what = (
        "is verl's default option of its `optim` group: nothing to change"
        if engine == VERL_DEFAULT_GROUPS["sft"]["engine"]
        else f"is the optimizer config of `engine={engine}`, which selects it: nothing to change"
    )
    notes.append(Finding("FC124", "info", [], f"{label}: `{w.text}` (line {w.line}) {what}", "nothing to do"))
    return True


def _one_per_group(base: list[str], user_groups: list[str]) -> list[str]:
    """``base`` with a later option of a group replacing an earlier one, and without the groups the script
    chooses itself (``user_groups``)."""
    chosen = {t.split("=", 1)[0] for t in user_groups}
    out: dict[str, str] = {}
    for t in base:
        group = t.split("=", 1)[0]
        if group.lstrip("+") not in chosen:
            out[group] = t
    return list(out.values())


@lru_cache(maxsize=8)
def _base_tree(base: tuple[str, ...], user_groups: tuple[str, ...]) -> tuple[dict[str, Any], frozenset[str]]:
    """The flat tree of ``base`` + the script's group options (composed once per process for each choice), and
    the keys those group options set."""
    from omegaconf import OmegaConf

    from fsdpcfg.check.key_advice import KEY_ADVICE
    from fsdpcfg.compose import compose

    tree = compose(list(base + user_groups), keys=KEY_ADVICE)
    raw = verlref.flatten(OmegaConf.to_container(tree.cfg, resolve=False))
    chosen = set(user_groups)
    keys = set()
    for key in raw:
        src = tree.provenance.source_of(key)
        if src is not None and src.kind == "group" and src.option in chosen:
            keys.add(key)
    return raw, frozenset(keys)


def drop_guessed(findings: list[Finding]) -> list[Finding]:
    """Errors and warnings on a key whose value the script gives but the check cannot know (FC107 names it) are
    guesses on verl's default that stood in: they are left out, and that FC107 info names the rules left out."""
    unknown = {k for f in findings if f.rule == "FC107" for k in f.keys}
    out: list[Finding] = []
    dropped: dict[str, set[str]] = {}
    for f in findings:
        hit = [k for k in f.keys if k in unknown]
        if f.severity in ("error", "warning") and hit and f.rule not in KEY_NAME_RULES:
            for k in hit:
                dropped.setdefault(k, set()).add(f.rule)
            continue
        out.append(f)
    for f in out:
        rules = sorted(set().union(*(dropped.get(k, set()) for k in f.keys))) if f.rule == "FC107" else []
        if rules and "left out" not in f.message:
            f.message += f"; {', '.join(rules)} on it left out (they would judge that default, not the script's value)"
    return out


def _env_note(w: Word, key: str, label: str, notes: list[Finding]) -> None:
    for e in w.env:
        name, _, value = e.partition("=")
        notes.append(
            Finding(
                "FC120",
                "info",
                [key] if key else [],
                f"{label}: `${name}` (line {w.line}) is not set by the script; the check took it from "
                f"its own environment ({name}={value})" + (f", giving {key}" if key else ""),
                f"make sure {name} is the same where the script runs, or set {key} in the script",
            )
        )


def _launcher_keys(
    vc: VerlCommand, kind: str, user: list[str], lines: dict[str, str], notes: list[Finding], label: str, script: Path
) -> None:
    """torchrun's ``--nproc_per_node``/``--nnodes`` give an SFT run's world size: carried as verl's
    ``trainer.n_gpus_per_node``/``trainer.nnodes`` unless the script sets those keys itself."""
    if kind != "sft" or vc.launcher != "torchrun":
        return
    user_keys = {key_of(t) for t in user}
    for opt, key in TORCHRUN_KEYS.items():
        w = vc.launcher_options.get(opt)
        if w is None or key in user_keys:
            continue
        if not w.known or not w.text.isdigit():
            notes.append(
                Finding(
                    "FC107",
                    "info",
                    [key],
                    f"{label}: torchrun --{opt}={w.text} (line {w.line}): "
                    f"{'; '.join(w.unknown) or 'not a number'}; {key} was not checked (verl's default "
                    "stands in)",
                    f"check with `fsdpcfg check {script} -- ARGS` or {key}=N",
                )
            )
            continue
        user.append(f"{key}={w.text}")
        lines[key] = f"{script}:{w.line} (torchrun --{opt})"
        notes.append(
            Finding(
                "FC124",
                "info",
                [key],
                f"{label}: torchrun --{opt}={w.text} (line {w.line}) is checked as {key}={w.text}",
                "nothing to do",
            )
        )


def _config_choice(
    vc: VerlCommand, script: Path, label: str, notes: list[Finding]
) -> tuple[str, tuple[str, ...], list[tuple[Word, str]]]:
    """Return (verl config the defaults come from, fsdpcfg group options for it, the override words of the
    script's own config file with their ``file:line``)."""
    default = DEFAULT_CONFIG[vc.kind]
    name_word = vc.hydra.get("config_name")
    path_word = vc.hydra.get("config_path") or vc.hydra.get("config_dir")
    if name_word is None and path_word is None:
        return default, (), []
    # no --config-name: @hydra.main's own config_name (verl's default config), searched in --config-path
    name = config_name_of(vc) if name_word is not None else default
    if name is None:
        assert name_word is not None  # config_name_of is None only for a given but unknown name
        notes.append(
            Finding(
                "FC124",
                "info",
                [],
                f"{label}: --config-name={name_word.text} (line {name_word.line}) "
                f"cannot be known ({'; '.join(name_word.unknown)}); the check uses verl's {default}",
                "write the config name in the script",
            )
        )
        return default, (), []
    if path_word is None:
        assert name_word is not None  # both None returned above
        if name in CONFIG_NAMES:
            return _named(name, default, label, name_word, notes)
        notes.append(
            Finding(
                "FC124",
                "info",
                [],
                f"{label}: --config-name={name} (line {name_word.line}) is not one "
                f"of verl's configs ({', '.join(CONFIG_NAMES)}); the check uses verl's {default}",
                "give --config-path with the folder of that config",
            )
        )
        return default, (), []
    if not path_word.known:
        notes.append(
            Finding(
                "FC124",
                "info",
                [],
                f"{label}: --config-path={path_word.text} (line {path_word.line}) "
                f"cannot be known ({'; '.join(path_word.unknown)}); config {name} was not read, the check "
                f"uses verl's {default}",
                "write the folder in the script",
            )
        )
        return default, (), []
    folder = Path(path_word.text).expanduser()
    if not folder.is_absolute():
        # Hydra: a relative --config-path is relative to the file of @hydra.main (verl/trainer/), so `config`
        # is verl's own config folder
        if os.path.normpath(path_word.text) == "config" and name in CONFIG_NAMES:
            return _named(name, default, label, name_word, notes)
        notes.append(
            Finding(
                "FC124",
                "info",
                [],
                f"{label}: --config-path={path_word.text} (line {path_word.line}) is "
                "relative to verl/trainer/ (Hydra reads a relative config path from the folder of the "
                f"trainer's file); config {name} was not read, the check uses verl's {default}",
                'give an absolute --config-path (e.g. "$(pwd)/config") to have it checked',
            )
        )
        return default, (), []
    f = _find_config(folder, name)
    if f is None:
        notes.append(
            Finding(
                "FC124",
                "info",
                [],
                f"{label}: config {name}.yaml was not found in --config-path="
                f"{path_word.text} (line {path_word.line}); the check uses verl's {default}",
                "check the folder and the name",
            )
        )
        return default, (), []
    return _config_file(f, default, label, notes)


def _named(
    name: str, default: str, label: str, word: Word | None, notes: list[Finding]
) -> tuple[str, tuple[str, ...], list]:
    _kind, groups = CONFIG_NAMES[name]
    if groups:
        where = f" (line {word.line})" if word is not None else ""
        notes.append(
            Finding(
                "FC124",
                "info",
                [],
                f"{label}: --config-name={name}{where} is checked as {' '.join(groups)}",
                "nothing to do",
            )
        )
    return (name if name in _reference_configs() else default), groups, []


def _reference_configs() -> frozenset[str]:
    from fsdpcfg.verlref import _load

    return frozenset(_load()["configs"])


def _find_config(folder: Path, name: str) -> Path | None:
    for suffix in (".yaml", ".yml"):
        f = folder / f"{name}{suffix}"
        if f.is_file():
            return f
    return None


def _config_file(f: Path, default: str, label: str, notes: list[Finding]) -> tuple[str, tuple[str, ...], list]:
    """The script's own config file: its ``defaults`` entry that names a verl config picks the base; its keys
    become override words with their file lines."""
    import yaml

    from fsdpcfg.compose.provenance import yaml_leaf_lines

    try:
        data = yaml.safe_load(f.read_text()) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        notes.append(
            Finding(
                "FC124",
                "info",
                [],
                f"{label}: the script's config {f} cannot be read ({e}); the check uses verl's {default}",
                "fix the file",
            )
        )
        return default, (), []
    if not isinstance(data, dict):
        return default, (), []
    config, others = default, []
    groups: tuple[str, ...] = ()
    for entry in data.get("defaults") or []:
        ref = entry if isinstance(entry, str) else None
        if ref is not None and ref.split("@")[0].strip("/") in CONFIG_NAMES:
            kind_groups = CONFIG_NAMES[ref.split("@")[0].strip("/")]
            config = ref.split("@")[0].strip("/") if ref.split("@")[0].strip("/") in _reference_configs() else default
            groups = kind_groups[1]
        elif entry != "_self_":
            others.append(str(entry))
    if others:
        notes.append(
            Finding(
                "FC124",
                "info",
                [],
                f"{label}: the defaults entries {', '.join(others)} of {f} are not "
                "composed by the check; its keys are read on top of verl's " + config,
                "write those values as keys of the file",
            )
        )
    leaf_lines = yaml_leaf_lines(f)
    items = []
    body = {k: v for k, v in data.items() if k not in ("defaults", "hydra")}
    for key, value in verlref.flatten(body).items():
        line = leaf_lines.get(key, 1)
        items.append((Word(f"{key}={hydra_value(value)}", line), f"{f}:{line}"))
    notes.append(
        Finding(
            "FC124",
            "info",
            [],
            f"{label}: the script's config {f} ({len(items)} keys) was read on top of verl's {config}",
            "nothing to do",
        )
    )
    return config, groups, items


def _plus_refused_by_hydra(tok: str, current: Any) -> bool:
    """Whether Hydra refuses ``+key=value`` on a key verl's tree has: only when the key's value is not null and the
    added value is no list or dict (``ConfigLoaderImpl._apply_overrides_to_config``: an add is merged when
    ``OmegaConf.select(cfg, key) is None or isinstance(value, (dict, list))``; verl's examples add
    ``+...override_transformer_config.recompute_granularity=full`` on a null default)."""
    value = tok.split("=", 1)[1].strip() if "=" in tok else ""
    return current is not None and not value.startswith(("[", "{"))


def hydra_value(v: Any) -> str:
    """Write a plain value (None, bool, number, string, list, mapping) as a Hydra override value."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return "'" + v.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if isinstance(v, list):
        return "[" + ",".join(hydra_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ",".join(f"{k}:{hydra_value(x)}" for k, x in v.items()) + "}"
    return str(v)
