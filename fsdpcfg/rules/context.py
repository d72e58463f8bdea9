"""What a rule sees: the effective config, where each value came from, and (lazily) the model's files."""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Any

from fsdpcfg import keypath, verlref
from fsdpcfg.rules.finding import Finding, Severity

if TYPE_CHECKING:
    from fsdpcfg.compose import Composed

_ABSENT = object()
_NOT_IN_CFG = object()  # distinct from _ABSENT, which makes get_dotted raise


#: ``tree[a][b][c]`` for ``key="a.b.c"``; ``default`` (or ``KeyError``) when a part is absent:
#: :func:`fsdpcfg.keypath.get`, the one key walker.
get_dotted = keypath.get


class _Chain:
    """Read-only lookup in the first mapping that holds a key."""

    def __init__(self, *maps: Any) -> None:
        self.maps = maps

    def get(self, key: str, default: Any = None) -> Any:
        for m in self.maps:
            if key in m:
                return m[key]
        return default

    def __contains__(self, key: str) -> bool:
        return any(key in m for m in self.maps)


class Context:
    """The input of every rule.

    Args:
        composed: the composed config (``fsdpcfg.compose.Composed``), for provenance and ``+``/``~`` keys.
        cfg: the resolved config as nested dicts (verl key names plus the ``fsdpcfg`` section).

    A key absent from ``cfg`` reads as verl 0.9.1's default (``fsdpcfg.verlref``), with the source
    "verl 0.9.1 default": verl fills it in exactly so when the config is handed over, and the native
    launcher's schema defaults are the same values.
    """

    def __init__(self, composed: Composed, cfg: dict[str, Any]) -> None:
        self.composed = composed
        self.cfg = cfg
        #: dotted key -> why its interpolation failed; those keys are left out of ``cfg`` (set by ``check_config``)
        self.unresolved: dict[str, str] = {}
        #: keys whose value an interpolation derived (set by ``check_config``, read by the schema rules)
        self.derived: frozenset[str] = frozenset()

    @cached_property
    def raw(self) -> dict[str, Any]:
        """The composed config as plain containers, interpolations kept (``${oc.env:NAME}`` as written)."""
        return self.composed.to_container(resolve=False)

    # -- values ---------------------------------------------------------------------------------------
    def get(self, key: str, default: Any = None) -> Any:
        """Return the effective value of dotted ``key``: the config's, else verl's default, else ``default``."""
        v = get_dotted(self.cfg, key, _NOT_IN_CFG)
        if v is not _NOT_IN_CFG:
            return v
        d = self.verl_defaults().get(key, _ABSENT)
        return default if d is _ABSENT else d

    @cached_property
    def verl_config(self) -> str:
        """verl's composition this config belongs to (``ppo_trainer``, ``ppo_megatron_trainer`` ...,
        ``sft_trainer_engine``, ``sft_megatron_trainer`` ...), from verl's own ``model_engine`` key (SFT: the
        ``engine._target_`` class) (:mod:`fsdpcfg.compose.verl_base`)."""
        from fsdpcfg.compose.verl_base import composition_of

        return composition_of(self.cfg, getattr(self.composed, "kind", "ppo") or "ppo")

    def verl_defaults(self, resolved: bool = True) -> Any:
        """``{dotted key: verl's default}`` of :attr:`verl_config`, then of every other ``main_ppo`` engine
        (a key of another engine reads as that engine's default)."""
        own = verlref.defaults(self.verl_config, resolved)
        if self.verl_config in verlref.SFT_COMPOSITIONS:
            return own
        return _Chain(own, verlref.defaults("ppo", resolved))

    def is_set(self, key: str) -> bool:
        """True when ``key`` is present in the config itself (not only a verl default)."""
        return get_dotted(self.cfg, key, _NOT_IN_CFG) is not _NOT_IN_CFG

    @property
    def launcher(self) -> str:
        """``native`` or ``verl`` (``fsdpcfg.launcher``)."""
        return str(self.get("fsdpcfg.launcher", "native"))

    @property
    def world_size(self) -> int:
        """Trainer ranks: ``trainer.nnodes x trainer.n_gpus_per_node``."""
        return int(self.get("trainer.nnodes", 1)) * int(self.get("trainer.n_gpus_per_node", 1))

    # -- provenance -----------------------------------------------------------------------------------
    def source(self, key: str) -> str:
        """Where the value of ``key`` came from: ``file:line``, ``group=option (file:line)``, the command
        line, or ``verl 0.9.1 default`` when the config does not hold it."""
        if not self.is_set(key):
            return f"verl {verlref.VERL_VERSION} default"
        src = self.composed.provenance.source_of(key)
        return str(src) if src is not None else "unknown"

    def finding(
        self,
        rule: str,
        keys: list[str],
        message: str,
        fix: str,
        *,
        severity: Severity = "error",
        derivation: str | None = None,
    ) -> Finding:
        """Build a :class:`Finding` whose provenance covers ``keys``."""
        return Finding(
            rule=rule,
            severity=severity,
            keys=list(keys),
            message=message,
            fix=fix,
            derivation=derivation,
            provenance={k: self.source(k) for k in keys},
        )

    # -- model files (read as JSON, never executed) ---------------------------------------------------
    @cached_property
    def model(self) -> Any:
        """The model inspection (``fsdpcfg.model_files.inspect_model``) for
        ``actor_rollout_ref.model.path``, or ``None`` when the path cannot be inspected here."""
        from fsdpcfg.model_files import inspect_model

        return inspect_model(
            self.get("actor_rollout_ref.model.path"), self.get("actor_rollout_ref.model.tokenizer_path")
        )
