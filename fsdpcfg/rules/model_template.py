"""FC417: the chat template the data path applies parses as Jinja (parsed, never rendered or run).

verl's RL dataset and agent loop call ``tokenizer.apply_chat_template`` on every chat prompt; a template with a
Jinja syntax error (a custom ``actor_rollout_ref.model.custom_chat_template``, a hand-edited
``tokenizer_config.json`` or ``chat_template.jinja``) raises ``TemplateSyntaxError`` on the first prompt, after
start-up. FC403 covers the template that is missing; this rule the one that is broken.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

from fsdpcfg.rules._common import A
from fsdpcfg.rules.context import Context
from fsdpcfg.rules.finding import Finding
from fsdpcfg.rules.registry import rule

CUSTOM = f"{A}.model.custom_chat_template"
P = f"{A}.model.path"


def template_source(ctx: Context) -> tuple[str, str] | None:
    """``(where, template text)`` of the chat template verl will use: ``custom_chat_template``, else the
    tokenizer's (``tokenizer_config.json`` ``chat_template``, a string or the ``default`` of a named list, then
    ``chat_template.jinja``, then ``chat_template.json``); ``None`` when there is none or it cannot be read."""
    custom = ctx.get(CUSTOM)
    if isinstance(custom, str) and custom.strip():
        return CUSTOM, custom
    m = ctx.model
    if m is None or m.status != "ok" or m.tokenizer_folder is None:
        return None
    tc = (m.tokenizer_config or {}).get("chat_template")
    if isinstance(tc, list):
        named = {t.get("name"): t.get("template") for t in tc if isinstance(t, dict)}
        tc = named.get("default") or next(iter(named.values()), None)
    folder = Path(m.tokenizer_folder)
    if isinstance(tc, str) and tc.strip():
        return f"{folder / 'tokenizer_config.json'} chat_template", tc
    jinja = folder / "chat_template.jinja"
    if jinja.is_file():
        try:
            return str(jinja), jinja.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None
    js = folder / "chat_template.json"
    if js.is_file():
        try:
            text = json.loads(js.read_text(encoding="utf-8")).get("chat_template")
        except (OSError, ValueError, AttributeError, RecursionError):
            return None
        if isinstance(text, str):
            return str(js), text
    return None


@lru_cache(maxsize=16)
def syntax_error(text: str) -> str | None:
    """The Jinja error of ``text`` (``line N: message``), or ``None`` when it compiles: one parser for every
    template rule (:func:`fsdpcfg.model_files.template_syntax_error`: the tags and filters transformers gives a
    chat template, an unknown filter or test included); nothing is rendered."""
    from fsdpcfg.model_files import template_syntax_error

    err = template_syntax_error(text)
    return None if err is None else f"line {err[0]}: {err[1]}"


@rule(
    "FC417",
    "the chat template parses as Jinja",
    keys=[CUSTOM, P],
    example=["actor_rollout_ref.model.custom_chat_template='{% for m in messages %}{{ m.content }}'"],
)
def chat_template_parses(ctx: Context) -> Iterable[Finding]:
    """The template verl applies to chat prompts (``custom_chat_template`` or the tokenizer's) must parse: a
    Jinja syntax error fails ``apply_chat_template`` on the first prompt, inside the workers.

    Source: verl/utils/dataset/rl_dataset.py ``RLHFDataset.maybe_filter_out_long_prompts`` and the agent loop
    (``tokenizer.apply_chat_template``); transformers ``_compile_jinja_template``; issue 14 item 7 ("a broken chat
    template passes").
    """
    got = template_source(ctx)
    if got is None:
        return
    where, text = got
    err = syntax_error(text)
    if err is not None:
        keys = [CUSTOM] if where == CUSTOM else [P, CUSTOM]
        yield ctx.finding(
            "FC417",
            keys,
            f"the chat template ({where}) is not valid Jinja ({err}); apply_chat_template fails on the first prompt",
            f"fix the template, or set {CUSTOM} to a working one",
        )
