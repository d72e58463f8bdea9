"""fsdpcfg: declarative configuration, pre-flight checks and launch for FSDP/FSDP2 post-training.

The pipeline runs in one direction, one subpackage per stage:
``compose`` (Hydra) -> ``schema`` (Pydantic) and ``rules`` (static checks) -> ``plan`` -> ``launch`` -> ``train``.
Nothing on the compose/schema/rules/plan path imports torch, transformers or verl.
"""

__version__ = "0.1.0"
