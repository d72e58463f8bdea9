"""FC720: secrets (tracker keys, tokens, passwords) only through environment references.

A key whose name says it holds a secret (``WANDB_API_KEY``, ``trainer.wandb_api_key``, ``hf_token``,
``*password*``, ``*secret*``, ``*access_key*``) may only hold ``${oc.env:NAME}`` (optionally with an empty or
``null`` default): a literal value ends up in the recipe file, in shell history and in every saved config.
The same name test drives :func:`fsdpcfg.runinfo.redact`, which keeps saved configs free of the value an
environment reference resolved to.

Source: Weights & Biases and Hugging Face read ``WANDB_API_KEY`` / ``HF_TOKEN`` from the environment; verl
0.9.1 has no config key for a tracker key (``trainer.logger`` only names the trackers).
"""

from __future__ import annotations

import re
from typing import Any, Iterable

from omegaconf import OmegaConf

from fsdpcfg.rules.context import Context
from fsdpcfg.rules.finding import Finding
from fsdpcfg.rules.registry import rule
from fsdpcfg.verlref import flatten

#: leaf names (case-insensitive, ``_``/``-`` separated words) that hold a secret.
_SECRET_LEAF = re.compile(r"(^|[_-])(api[_-]?key|apikey|access[_-]?key|secret([_-]?key)?|password|passwd|"
                          r"(auth|access|api|bearer|hub|hf)[_-]?token)($|[_-])|(^|[_-])token$", re.IGNORECASE)
#: token names that are vocabulary entries, not credentials (``eos_token``, ``pad_token_id``, ...).
_VOCAB_TOKEN = re.compile(r"(^|[_-])(pad|eos|bos|unk|sep|cls|mask|image|video|audio|special|end|start)[_-]token",
                          re.IGNORECASE)
#: an ``${oc.env:NAME,DEFAULT}`` whose default is a literal.
_ENV_WITH_DEFAULT = re.compile(r"^\$\{oc\.env:[^,}]+,\s*(?!null\s*\}|''|\"\"|\s*\})")
#: ``${oc.env:NAME}`` or ``${oc.env:NAME,}`` / ``${oc.env:NAME,null}`` / ``${oc.env:NAME,''}``.
ENV_REFERENCE = re.compile(r"""^\$\{oc\.env:\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:,\s*(?:null|''|"")?\s*)?\}$""")


def is_secret_key(key: str) -> bool:
    """True when the last component of dotted ``key`` names a credential (see the module docstring)."""
    leaf = key.rsplit(".", 1)[-1]
    return bool(_SECRET_LEAF.search(leaf)) and not _VOCAB_TOKEN.search(leaf)


def env_reference(value: Any) -> str | None:
    """The environment variable name of a ``${oc.env:NAME}`` value (empty/``null`` default allowed), else None."""
    m = ENV_REFERENCE.match(value.strip()) if isinstance(value, str) else None
    return m.group(1) if m else None


def literal_secrets(raw: dict[str, Any]) -> dict[str, str]:
    """``{dotted key: value}`` of the secret-named keys of the unresolved config ``raw`` that hold a literal
    (not an environment reference, nor an interpolation of another key; an ``${oc.env:NAME,DEFAULT}`` with a
    literal default counts; ``None``, empty strings, booleans and numbers are no secrets)."""
    out = {}
    for key, value in flatten(raw).items():
        if not (isinstance(value, str) and value.strip() and is_secret_key(key)) or env_reference(value):
            continue
        # another interpolation copies a key that is checked itself; an env default is a literal
        if "${" not in value or _ENV_WITH_DEFAULT.match(value.strip()):
            out[key] = value
    return out


def _mask(value: str) -> str:
    return f"{value[:2]}... ({len(value)} characters)" if len(value) > 6 else f"({len(value)} characters)"


@rule("FC720", "a literal secret (tracker key, token, password) in the config", keys=["fsdpcfg.env"],
      example=["+fsdpcfg.env.WANDB_API_KEY=0123456789abcdef"], kinds=("ppo", "sft"))
def literal_secret(ctx: Context) -> Iterable[Finding]:
    """A credential written as a literal lands in the recipe YAML, shell history and every saved config;
    tracker keys and tokens belong in the environment, referenced as ``${oc.env:NAME}``.

    Source: fsdpcfg's run-folder policy (saved configs never hold a secret); wandb and huggingface_hub read
    ``WANDB_API_KEY``/``HF_TOKEN`` from the environment.
    """
    raw = OmegaConf.to_container(ctx.composed.cfg, resolve=False)
    for key, value in literal_secrets(raw).items():
        name = key.rsplit(".", 1)[-1].upper().replace("-", "_")
        where = ctx.source(key).replace(value, "<secret>")  # a command-line source quotes the override
        f = ctx.finding("FC720", [key], f"{key} holds a literal secret {_mask(value)}: it would be saved in "
                        "the recipe, the shell history and the run folder",
                        f"export {name}=... in the environment and write {key}: ${{oc.env:{name}}}")
        f.provenance = {key: where}
        yield f
