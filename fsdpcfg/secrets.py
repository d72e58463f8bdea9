"""What is a secret (tracker keys, tokens, passwords, URL credentials): the one detector that rule FC720
(:mod:`fsdpcfg.rules.secrets`) and the scrubber of everything fsdpcfg writes and prints (:mod:`fsdpcfg.redact`)
both use. It lives on the ground floor because every stage, composition included, scrubs with it.

A secret is recognised two ways:

* by name (:func:`is_secret_key`): a config key whose last part names a credential (``trainer.wandb_api_key``,
  ``hf_token``, ``*password*``, ``*secret*``, ``*access_key*``, ``*credential*``, ``*_pat``), or an environment
  variable name (under ``fsdpcfg.env`` / ``runtime_env.env_vars``, or any upper-case name) matching the broader
  :data:`ENV_SECRET_NAME`: ``*_KEY``, ``*_TOKEN``, ``*_SECRET``, ``*_PAT``, ``*PASSWORD*``, ``*CREDENTIAL*``,
  ``HF_TOKEN``, ``WANDB_API_KEY``, ...;
* by value shape (:func:`secret_shapes`): the prefixes of known tokens (Hugging Face ``hf_``, OpenAI ``sk-``,
  GitHub ``ghp_``/``gho_``/``github_pat_``, Slack ``xoxb-``, AWS ``AKIA``), a 40-hex Weights & Biases key under
  a wandb-named key, and the password of a URL's user part (``https://user:pass@host``).

A secret may only be written as ``${oc.env:NAME}`` (optionally with an empty or ``null`` default), which
:func:`env_reference` reads.

Source: Weights & Biases and Hugging Face read ``WANDB_API_KEY`` / ``HF_TOKEN`` from the environment; verl
0.9.1 has no config key for a tracker key (``trainer.logger`` only names the trackers); the token prefixes are
the issuers' documented formats (GitHub "About authentication", Hugging Face "User access tokens", AWS access
key ids); issue 14 item 1 (``WANDB_KEY``, ``GITHUB_PAT``, ``OPENAI_KEY`` and URL credentials saved unflagged).
"""

from __future__ import annotations

import re
from typing import Any

from fsdpcfg.verlref import flatten

#: leaf names (case-insensitive, ``_``/``-`` separated words) that hold a secret.
_SECRET_LEAF = re.compile(
    r"(^|[_-])(api[_-]?key|apikey|access[_-]?key|private[_-]?key|secret([_-]?key)?|password|"
    r"passwd|credentials?|(auth|access|api|bearer|hub|hf)[_-]?token)($|[_-])|"
    r"(^|[_-])(token|pat)$",
    re.IGNORECASE,
)
#: environment variable names that hold a secret (``WANDB_KEY``, ``GITHUB_PAT``, ``OPENAI_KEY``, ``HF_TOKEN``).
ENV_SECRET_NAME = re.compile(
    r"^(KEY|TOKEN|SECRET|PAT)$|_(KEY|TOKEN|SECRET|PAT|PASS|PWD)$|PASSWORD|PASSWD|SECRET|"
    r"CREDENTIAL|API_?KEY|_TOKEN_",
    re.IGNORECASE,
)
#: environment variable names that look like secrets by the pattern above but hold none.
_ENV_NOT_SECRET = re.compile(
    r"^(TOKENIZERS_PARALLELISM|PYTHONHASHSEED|SSH_AUTH_SOCK|.*_PUBLIC_KEY|.*_KEY_ID|"
    r".*_TOKEN_(PATH|FILE|LEN|LENGTH|ID)|.*_(PATH|FILE|DIR)|.*PASSWORD_(FILE|PATH))$",
    re.IGNORECASE,
)
#: where a dotted key's last part is an environment variable name.
_ENV_MAPPINGS = ("fsdpcfg.env.", ".env_vars.")
#: the shapes of issued tokens (each match is a secret wherever it appears). Random tokens mix cases (and digits):
#: ``hf_`` and ``sk-`` need an upper-case letter (``sk-`` also a digit), so ``/data/sk-learn-experiments-...`` is none.
TOKEN_SHAPES = re.compile(
    r"(?<![A-Za-z0-9_])(?:hf_(?=[a-z0-9]*[A-Z])[A-Za-z0-9]{30,}|"
    r"sk-(?:proj-|ant-|svcacct-)?(?=[A-Za-z_-]*[0-9])(?=[a-z0-9_-]*[A-Z])[A-Za-z0-9_-]{32,}|gh[pousr]_[A-Za-z0-9]{36,}|"
    r"github_pat_[A-Za-z0-9_]{22,}|xox[abposr]-[A-Za-z0-9-]{10,}|(?:AKIA|ASIA)[0-9A-Z]{16})(?![A-Za-z0-9])"
)
#: a URL with a password in its user part: group ``pw`` is the secret.
URL_USERINFO = re.compile(r"(?P<head>\b[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@'\"]+:)(?P<pw>[^/\s@'\"]+)(?P<at>@)")
#: a Weights & Biases API key (40 lower-case hex digits): a secret when the key or variable names wandb.
_WANDB_KEY = re.compile(r"^[0-9a-f]{40}$")
#: token names that are vocabulary entries, not credentials (``eos_token``, ``pad_token_id``, ...).
_VOCAB_TOKEN = re.compile(
    r"(^|[_-])(pad|eos|bos|unk|sep|cls|mask|image|video|audio|special|end|start)[_-]token", re.IGNORECASE
)
#: an ``${oc.env:NAME,DEFAULT}`` whose default is a literal.
_ENV_WITH_DEFAULT = re.compile(r"^\$\{oc\.env:[^,}]+,\s*(?!null\s*\}|''|\"\"|\s*\})")
#: ``${oc.env:NAME}`` or ``${oc.env:NAME,}`` / ``${oc.env:NAME,null}`` / ``${oc.env:NAME,''}``.
ENV_REFERENCE = re.compile(r"""^\$\{oc\.env:\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:,\s*(?:null|''|"")?\s*)?\}$""")


def is_secret_name(name: str) -> bool:
    """True when environment variable ``name`` names a secret (:data:`ENV_SECRET_NAME`, e.g. ``OPENAI_KEY``,
    ``GITHUB_PAT``, ``HF_TOKEN``; not ``TOKENIZERS_PARALLELISM``, ``*_KEY_ID``, ``*_PATH``)."""
    return bool(ENV_SECRET_NAME.search(name)) and not _ENV_NOT_SECRET.match(name)


def is_secret_key(key: str) -> bool:
    """True when the last component of dotted ``key`` names a credential (see the module docstring). Under
    ``fsdpcfg.env`` / ``runtime_env.env_vars``, or when upper-case, it is read as an environment variable name
    (:func:`is_secret_name`)."""
    leaf = key.rsplit(".", 1)[-1]
    if _VOCAB_TOKEN.search(leaf):
        return False
    if any(m in f".{key}" for m in _ENV_MAPPINGS) or leaf.isupper():
        return is_secret_name(leaf)
    return bool(_SECRET_LEAF.search(leaf))


def secret_shapes(value: Any, key: str = "") -> list[str]:
    """The parts of ``value`` that are secrets by their shape (:data:`TOKEN_SHAPES`, a URL's password, a
    40-hex wandb key when ``key`` names wandb); empty for anything else (and for non-strings). An
    ``${oc.env:...}`` reference as a URL password is no secret."""
    if not isinstance(value, str) or not value:
        return []
    found = [m.group(0) for m in TOKEN_SHAPES.finditer(value)]
    found += [m.group("pw") for m in URL_USERINFO.finditer(value) if not m.group("pw").startswith("$")]
    if "wandb" in key.lower() and _WANDB_KEY.match(value.strip()):
        found.append(value.strip())
    return found


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
        if not (isinstance(value, str) and value.strip()) or env_reference(value):
            continue
        if secret_shapes(value, key):  # a token or URL password, whatever the key is called
            out[key] = value
            continue
        if not is_secret_key(key):
            continue
        # another interpolation copies a key that is checked itself; an env default is a literal
        if "${" not in value or _ENV_WITH_DEFAULT.match(value.strip()):
            out[key] = value
    return out
