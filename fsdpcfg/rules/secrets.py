"""FC720: secrets (tracker keys, tokens, passwords, URL credentials) only through environment references.

A secret is recognised two ways by :mod:`fsdpcfg.secrets` (the detector), and both drive this rule and
:mod:`fsdpcfg.redact` (what fsdpcfg writes and prints):

* by name (:func:`is_secret_key`): a config key whose last part names a credential (``trainer.wandb_api_key``,
  ``hf_token``, ``*password*``, ``*secret*``, ``*access_key*``, ``*credential*``, ``*_pat``), or an environment
  variable name (under ``fsdpcfg.env`` / ``runtime_env.env_vars``, or any upper-case name) matching the broader
  :data:`ENV_SECRET_NAME`: ``*_KEY``, ``*_TOKEN``, ``*_SECRET``, ``*_PAT``, ``*PASSWORD*``, ``*CREDENTIAL*``,
  ``HF_TOKEN``, ``WANDB_API_KEY``, ...;
* by value shape (:func:`secret_shapes`): the prefixes of known tokens (Hugging Face ``hf_``, OpenAI ``sk-``,
  GitHub ``ghp_``/``gho_``/``github_pat_``, Slack ``xoxb-``, AWS ``AKIA``), a 40-hex Weights & Biases key under
  a wandb-named key, and the password of a URL's user part (``https://user:pass@host``).

A secret may only be written as ``${oc.env:NAME}`` (optionally with an empty or ``null`` default): a literal
value ends up in the recipe file, in shell history and in every saved config.

Source: Weights & Biases and Hugging Face read ``WANDB_API_KEY`` / ``HF_TOKEN`` from the environment; verl
0.9.1 has no config key for a tracker key (``trainer.logger`` only names the trackers); the token prefixes are
the issuers' documented formats (GitHub "About authentication", Hugging Face "User access tokens", AWS access
key ids); issue 14 item 1 (``WANDB_KEY``, ``GITHUB_PAT``, ``OPENAI_KEY`` and URL credentials saved unflagged).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from fsdpcfg.rules.context import Context
from fsdpcfg.rules.finding import Finding
from fsdpcfg.rules.registry import rule
from fsdpcfg.secrets import URL_USERINFO, is_secret_key, literal_secrets, secret_shapes


def _mask(value: str) -> str:
    return f"{value[:2]}... ({len(value)} characters)" if len(value) > 6 else f"({len(value)} characters)"


@rule(
    "FC720",
    "a literal secret (tracker key, token, password, URL credentials) in the config",
    keys=["fsdpcfg.env"],
    example=["+fsdpcfg.env.WANDB_API_KEY=0123456789abcdef"],
    kinds=("ppo", "sft"),
)
def literal_secret(ctx: Context) -> Iterable[Finding]:
    """A credential written as a literal lands in the recipe YAML, shell history and every saved config;
    tracker keys and tokens belong in the environment, referenced as ``${oc.env:NAME}``. Found by the key's
    name (``WANDB_KEY``, ``GITHUB_PAT``, ``OPENAI_KEY``, ``*password*``) or the value's shape (``hf_...``,
    ``sk-...``, ``ghp_...``, ``AKIA...``, ``https://user:pass@host``) under any key.

    Source: fsdpcfg's run-folder policy (saved configs never hold a secret); wandb and huggingface_hub read
    ``WANDB_API_KEY``/``HF_TOKEN`` from the environment; issue 14 item 1.
    """
    for key, value in literal_secrets(ctx.raw).items():
        parts = key.split(".")
        leaf = parts[-1] if is_secret_key(key) or len(parts) < 2 else "_".join(parts[-2:])  # model.path: MODEL_PATH
        name = re.sub(r"[^A-Z0-9_]", "_", leaf.upper())
        where = ctx.source(key).replace(value, "<secret>")  # a command-line source quotes the override
        url = URL_USERINFO.search(value)
        if url and not url.group("pw").startswith("$"):
            what = "a URL with a password in it"
            as_ref = URL_USERINFO.sub(r"\g<head>${oc.env:" + name + "_PASSWORD}@", value, 1)
            fix = f"export {name}_PASSWORD=... in the environment and write the URL as {as_ref}"
        else:
            shaped = secret_shapes(value, key)
            what = f"a literal secret {_mask(value)}" + (" (the shape of an issued token)" if shaped else "")
            fix = f"export {name}=... in the environment and write {key}: ${{oc.env:{name}}}"
        f = ctx.finding(
            "FC720",
            [key],
            f"{key} holds {what}: it would be saved in the recipe, the shell history and the run folder",
            fix,
        )
        f.provenance = {key: where}
        yield f
