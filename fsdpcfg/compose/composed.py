"""A composed config and what is known about how it was made (:class:`Composed`), and a full config file read
as one (:func:`load_yaml_config`).

Composition (:func:`fsdpcfg.compose.compose`) and the config-file reader (:func:`fsdpcfg.compose.config_file.load`)
both make one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from fsdpcfg import yamlio
from fsdpcfg.compose import resolvers
from fsdpcfg.compose.provenance import Provenance
from fsdpcfg.errors import ConfigError, UsageError


@dataclass
class Composed:
    """A composed config and what is known about how it was made.

    Attributes:
        cfg: the composed config (verl key names plus the ``fsdpcfg`` section), interpolations unresolved.
        choices: group -> chosen option (``recipe`` included when one was selected).
        overrides: the command-line overrides as given.
        added: dotted keys that overrides created with ``+``/``++`` (they exist in no config file).
        deleted: dotted keys removed with ``~``.
        provenance: where each value came from.
        origin: ``"compose"`` (Hydra tree) or ``"file"`` (a full config file read as it is).
        kind: ``"ppo"`` (verl's ppo_trainer layout) or ``"sft"`` (sft_trainer_engine layout).
        pruned: keys of fsdpcfg's own FSDP-engine defaults left out because the chosen engine's verl
            composition has no such key (:func:`fsdpcfg.compose.verl_base.prune`; ``engine=megatron``).
        hydra_cfg: Hydra's own ``hydra`` node of the composition (``--cfg hydra``), unresolved; for a verl config
            file read as it is, the file's own ``hydra`` section (verl's entry point composes it); ``None`` for
            other files.
        plus_needed: key -> the override that lacked ``+`` (set by ``compose_for_check``, reported by FC108).
        plus_refused: key -> a ``+key`` override on a key verl's tree already has (``compose_for_check``, FC112).
        script_notes: for a config read from a run script, the findings of reading it (FC107, FC120-FC125);
            ``None`` when the config did not come from a script.
        refused: the findings of the overrides (or a recipe's group choices) Hydra refused, which
            ``compose_for_check`` dropped so that the rest composes and is checked; :func:`fsdpcfg.check.check_config`
            reports them (all errors: the run refuses to start).
        unmodelled: the sections a run script's group option fills that the check cannot compose
            (``actor_rollout_ref.actor`` of ``actor@actor_rollout_ref.actor=mlite_actor``, FC108): their engine
            layout is not known, so no rule judges it (:func:`fsdpcfg.rules._common.engine_sizes`).
    """

    cfg: DictConfig
    choices: dict[str, str] = field(default_factory=dict)
    kind: str = "ppo"
    overrides: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    provenance: Provenance = field(default_factory=Provenance)
    origin: str = "compose"
    pruned: list[str] = field(default_factory=list)
    hydra_cfg: DictConfig | None = None
    plus_needed: dict[str, str] = field(default_factory=dict)
    plus_refused: dict[str, str] = field(default_factory=dict)
    script_notes: list[Any] | None = None
    refused: list[Any] = field(default_factory=list)
    unmodelled: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # every composed config names its secrets before anything prints or writes it (fsdpcfg.redact)
        from fsdpcfg.redact import register_config

        try:
            register_config(self.to_container(resolve=False))
        except Exception:  # a tree OmegaConf cannot convert is reported by whoever reads it next
            pass

    def to_container(self, resolve: bool = True) -> dict[str, Any]:
        """Return the config as plain dicts and lists (interpolations resolved unless ``resolve=False``).

        Raises:
            ConfigError: an interpolation cannot be resolved (names the key and the reference).
        """
        try:
            return OmegaConf.to_container(self.cfg, resolve=resolve)  # type: ignore[return-value]
        except Exception as e:  # omegaconf.errors.InterpolationResolutionError and friends
            key = getattr(e, "full_key", None)
            raise ConfigError(
                f"cannot resolve an interpolation: {_first_line(e)}",
                key=key,
                fix="set the referenced key, or replace the ${...} value with a literal",
            ) from None


def load_yaml_config(path: Path) -> Composed:
    """Read a full config file (a dumped fsdpcfg or verl config) as it is, with provenance from its lines.

    Raises:
        ConfigError: the file is missing, is not YAML, or is not a mapping.
    """
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"no such file: {path}")
    data = yamlio.load_file(path)
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of keys at the top level", fix="write key: value pairs")
    resolvers.register()
    cfg = OmegaConf.create(data)
    prov = Provenance()
    prov.add_file(path, "file")
    return Composed(cfg=cfg, provenance=prov, origin="file")


def _first_line(e: Any) -> str:
    """The first line of an error's text (its type's name when the text is empty)."""
    return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
