"""What differs between the two kinds of run fsdpcfg composes, checks, plans and starts: one record per kind,
chosen once from ``fsdpcfg.kind``.

    kind = runkind.of(cfg)                   # a resolved config (nested dicts) or a typed one
    kind.entry                               # "fsdpcfg.train": the module torchrun runs on every rank
    plan = kind.load("planner")(cfg)         # fsdpcfg.plan.make_plan (what fsdpcfg.plan.plan_run does)

=======  ============  ======================  =========================================  ==================
kind     conf tree     verl's config           schema (root model)                        trainer entry
=======  ============  ======================  =========================================  ==================
ppo      ``conf/``     ``ppo_trainer``         :class:`fsdpcfg.schema.root.RunConfig`      ``fsdpcfg.train``
sft      ``conf/sft``  ``sft_trainer_engine``  :class:`fsdpcfg.schema.sft.SftRunConfig`    ``fsdpcfg.train.sft``
=======  ============  ======================  =========================================  ==================

The record sits on the ground floor (everything may read it); the parts of later stages it names (schema, planner,
trainer) are ``"module:attribute"`` strings resolved by :meth:`RunKind.load` when asked, so reading a record imports
nothing. Pattern: torchtune's ``_recipe_registry.py`` (a recipe is a record naming its file) and torchtitan's
``protocols/model_spec.py`` (one bundle per model of what the trainer builds it with).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from fsdpcfg.errors import ConfigError


@dataclass(frozen=True)
class RunKind:
    """One kind of run.

    Attributes:
        name: the value of ``fsdpcfg.kind`` (``ppo``, ``sft``).
        title: what it trains, for people.
        conf: its Hydra tree, relative to ``conf/`` (``.``: the root tree).
        verl_config: verl's config it follows (``ppo_trainer``, ``sft_trainer_engine``; the exported YAML's name).
        verl_keys: the key set of :func:`fsdpcfg.verlref.keys` its unknown-key messages suggest from.
        model_key: the section holding ``path``, ``tokenizer_path`` and the LoRA keys.
        trainer: what a checkpoint's model card calls the trainer (``grpo``, ``sft``).
        schema: ``"module:Class"`` of the Pydantic root model of a resolved config.
        parse: ``"module:function"`` turning a resolved config into that model (raises ConfigError).
        planner: ``"module:function"`` deriving the run's plan from a resolved or typed config.
        entry: the module ``torchrun ... -m <entry> <config.yaml>`` runs on every rank.
        memory: ``"module:function"`` describing the run's memory estimate for ``fsdpcfg check`` (``cfg -> text``);
            ``None``: the kind has no estimate.
    """

    name: str
    title: str
    conf: str
    verl_config: str
    verl_keys: str
    model_key: str
    trainer: str
    schema: str
    parse: str
    planner: str
    entry: str
    memory: str | None = None

    def load(self, part: str) -> Any:
        """The object a ``"module:attribute"`` field names (``part``: ``schema``, ``parse``, ``planner`` or
        ``memory``), imported now.

        Raises:
            ValueError: ``part`` is not such a field of the record.
        """
        spec = getattr(self, part, None)
        if part not in ("schema", "parse", "planner", "memory") or not isinstance(spec, str):
            raise ValueError(f"RunKind.load: {part!r} names no set field (schema, parse, planner, memory)")
        module, _, attr = spec.partition(":")
        return getattr(importlib.import_module(module), attr)


PPO = RunKind(
    name="ppo",
    title="RL post-training (GRPO) on verl's ppo_trainer keys",
    conf=".",
    verl_config="ppo_trainer",
    verl_keys="ppo_trainer",
    model_key="actor_rollout_ref.model",
    trainer="grpo",
    schema="fsdpcfg.schema.root:RunConfig",
    parse="fsdpcfg.schema.validate:parse_run_config",
    planner="fsdpcfg.plan._plan:make_plan",
    entry="fsdpcfg.train",
    memory="fsdpcfg.estimate.memory:describe_for_check",
)
SFT = RunKind(
    name="sft",
    title="supervised fine-tuning on verl's sft_trainer_engine keys",
    conf="sft",
    verl_config="sft_trainer_engine",
    verl_keys="sft",
    model_key="model",
    trainer="sft",
    schema="fsdpcfg.schema.sft:SftRunConfig",
    parse="fsdpcfg.schema.validate:parse_sft_config",
    planner="fsdpcfg.plan.sft:make_sft_plan",
    entry="fsdpcfg.train.sft",
)

#: every kind by name, the default (``ppo``: a config without ``fsdpcfg.kind``) first.
KINDS: dict[str, RunKind] = {k.name: k for k in (PPO, SFT)}
DEFAULT = PPO.name


def get(name: Any) -> RunKind:
    """The record of kind ``name`` (``None``: the default, ``ppo``).

    Raises:
        ConfigError: no such kind (key ``fsdpcfg.kind``, the kinds named).
    """
    kind = KINDS.get(DEFAULT if name is None else name)
    if kind is None:
        raise ConfigError(
            f"unknown run kind {name!r}",
            key="fsdpcfg.kind",
            value=name,
            fix=f"set fsdpcfg.kind to one of {', '.join(KINDS)} (or start from a recipe of that kind)",
        )
    return kind


def name_of(cfg: Any) -> Any:
    """The ``fsdpcfg.kind`` a config says (``None`` when it says none): ``cfg`` is nested dicts (a resolved
    config) or a typed model with a ``fsdpcfg`` section (:func:`fsdpcfg.schema.parse_config`)."""
    section = cfg.get("fsdpcfg") if isinstance(cfg, dict) else getattr(cfg, "fsdpcfg", None)
    if isinstance(section, dict):
        return section.get("kind")
    return getattr(section, "kind", None)


def of(cfg: Any) -> RunKind:
    """The record of the kind ``cfg`` says (:func:`name_of`; the default when it says none).

    Raises:
        ConfigError: ``fsdpcfg.kind`` names no kind.
    """
    return get(name_of(cfg))


def model_of(cfg: Any) -> Any:
    """The model section of ``cfg`` (:attr:`RunKind.model_key`): a dict for a resolved config, the typed
    section for a typed one.

    Raises:
        ConfigError: ``fsdpcfg.kind`` names no kind.
    """
    node = cfg
    for part in of(cfg).model_key.split("."):
        node = node[part] if isinstance(node, dict) else getattr(node, part)
    return node
