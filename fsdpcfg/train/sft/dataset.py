"""Chat ``messages`` rows -> token ids and a loss mask on assistant tokens, with the semantics of verl 0.9.1's
``MultiTurnSFTDataset`` (``verl/utils/dataset/multiturn_sft_dataset.py``):

- each message is tokenised on its own with the chat template (``add_generation_prompt=False``), the tools
  schema with the first message only, the thinking switch from ``data.enable_thinking_key`` or
  ``data.enable_thinking_default``;
- from the second message on (system messages excepted) the template's default system prompt, which it adds to
  every single-message rendering, is cut off the front (found as verl does: render ``[user ""]`` once and twice);
- the loss mask is 1 on an assistant message's tokens except its generation prompt (``<|im_start|>assistant\\n``
  for Qwen), so the end-of-turn tokens are learnt; 0 on every other message;
- longer than ``data.max_length``: ``truncation`` ``error`` (a ConfigError naming the row), ``right`` (keep the
  head) or ``left`` (keep the tail).

A mask entry marks a *target* token: the loss at position ``t`` is ``-log p(x_t | x_<t)`` where mask[t] is 1
(verl rolls the mask left by one to align it with the logits, the same thing).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from fsdpcfg.datafiles import Rows, check_chat_rows, read_rows
from fsdpcfg.errors import ConfigError
from fsdpcfg.train.data import template_error

if TYPE_CHECKING:
    from fsdpcfg.schema.sft import SftData


def _ids(out: Any) -> list[int]:
    if isinstance(out, dict) or hasattr(out, "keys"):
        out = out["input_ids"]
    if isinstance(out, torch.Tensor):
        out = out.tolist()
    if out and isinstance(out[0], list):
        out = out[0]
    return [int(i) for i in out]


def system_and_generation_prompt(tokenizer, **kwargs: Any) -> tuple[list[int], list[int]]:
    """The template's default system prompt and its assistant generation prompt, as token ids.

    ``[user ""]`` rendered once is ``system + turn``; twice is ``system + turn + turn`` (for templates that
    require alternating roles: ``[user, assistant, user]`` minus ``[user, assistant]``); the difference in
    length is one turn, so the system prompt is the first ``len(once) - len(turn)`` tokens. The generation
    prompt is what ``add_generation_prompt=True`` appends.
    """
    user, asst = {"role": "user", "content": ""}, {"role": "assistant", "content": ""}
    one = _ids(tokenizer.apply_chat_template([user], tokenize=True, **kwargs))
    try:
        turn = len(_ids(tokenizer.apply_chat_template([user, user], tokenize=True, **kwargs))) - len(one)
    except Exception:  # templates that require alternating roles (Mistral, Llama 2) raise on two user turns
        before = _ids(tokenizer.apply_chat_template([user, asst], tokenize=True, **kwargs))
        turn = len(_ids(tokenizer.apply_chat_template([user, asst, user], tokenize=True, **kwargs))) - len(before)
    gen = _ids(tokenizer.apply_chat_template([user], add_generation_prompt=True, tokenize=True, **kwargs))
    return one[: len(one) - turn], gen[len(one) :]


@dataclass
class Example:
    """One tokenised conversation: ``input_ids`` and ``loss_mask`` (1 on assistant target tokens), both ``(L,)``."""

    input_ids: torch.Tensor
    loss_mask: torch.Tensor


class SFTDataset:
    """Tokenised conversations of ``data.train_files``.

    Args:
        data_cfg: the ``data`` section (``train_files``, ``train_max_samples``, ``messages_key``, ``tools_key``,
            ``enable_thinking_key``, ``enable_thinking_default``, ``max_length``, ``truncation``,
            ``apply_chat_template_kwargs``).
        tokenizer: a Hugging Face tokenizer with a chat template.

    Raises:
        ConfigError: unreadable files, no rows, a row without the messages key or with a malformed message.
    """

    def __init__(self, data_cfg: SftData, tokenizer) -> None:
        self.tokenizer = tokenizer
        self.messages_key = data_cfg.messages_key
        self.tools_key = data_cfg.tools_key
        self.thinking_key = data_cfg.enable_thinking_key
        default = data_cfg.enable_thinking_default
        self.thinking_default = None if default is None or str(default).lower() == "none" else bool(default)
        self.max_length = data_cfg.max_length
        self.truncation = data_cfg.truncation
        self.template_kwargs = dict(data_cfg.apply_chat_template_kwargs or {})
        self.rows = read_rows(data_cfg.train_files, data_cfg.train_max_samples)
        if not self.rows:
            raise ConfigError("the training files hold no rows", key="data.train_files", value=data_cfg.train_files)
        if self.messages_key not in self.rows[0]:
            raise ConfigError(
                f"rows have no {self.messages_key!r} column (columns: {sorted(self.rows[0])})",
                key="data.messages_key",
                value=self.messages_key,
                fix="set data.messages_key to the column holding the chat messages",
            )
        self.read: Rows = self.rows if isinstance(self.rows, Rows) else Rows()
        check_chat_rows(self.read, self.messages_key, "data.messages_key", plain_ok=False)
        try:
            self.system_prompt, self.generation_prompt = system_and_generation_prompt(tokenizer, **self.template_kwargs)
        except Exception as e:  # a template that raises on a plain user message fails on every row
            raise template_error(e, "a one-message conversation ([user ''])", key="model.custom_chat_template") from e
        self._cache: dict[int, Example] = {}

    def __len__(self) -> int:
        return len(self.rows)

    def _message(self, i: int, message: dict, tools, thinking) -> tuple[list[int], list[int]]:
        kwargs = dict(self.template_kwargs)
        if thinking is not None:
            kwargs["enable_thinking"] = thinking
        ids = _ids(
            self.tokenizer.apply_chat_template(
                [message], tools=tools, add_generation_prompt=False, tokenize=True, **kwargs
            )
        )
        if i != 0 and message["role"] != "system" and ids[: len(self.system_prompt)] == self.system_prompt:
            ids = ids[len(self.system_prompt) :]
        if message["role"] == "assistant":
            mask = [0] * min(len(self.generation_prompt), len(ids)) + [1] * max(
                0, len(ids) - len(self.generation_prompt)
            )
        else:
            mask = [0] * len(ids)
        return ids, mask

    def _per_message(self, messages: list[dict], tools, thinking) -> tuple[list[int], list[int]]:
        """verl's MultiTurnSFTDataset tokenisation: each message rendered on its own, the template's default
        system prompt stripped from every message but the first."""
        ids: list[int] = []
        mask: list[int] = []
        for i, m in enumerate(messages):
            a, b = self._message(i, m, tools if i == 0 else None, thinking)
            ids += a
            mask += b
        return ids, mask

    def _by_prefix(self, index: int, messages: list[dict], tools, thinking) -> tuple[list[int], list[int]]:
        """Tokenisation for templates that render only whole conversations (strictly alternating roles, no
        leading assistant turn): message ``i``'s tokens are ``render(messages[:i+1])`` minus
        ``render(messages[:i])``; an assistant message's target tokens are those after the generation prompt.

        Raises:
            ConfigError: the template does not render a conversation as an extension of its prefix.
        """
        kwargs = dict(self.template_kwargs)
        if thinking is not None:
            kwargs["enable_thinking"] = thinking

        def render(msgs: list[dict[str, Any]], gen: bool = False) -> list[int]:
            if not msgs:
                return []
            return _ids(
                self.tokenizer.apply_chat_template(
                    msgs, tools=tools, add_generation_prompt=gen, tokenize=True, **kwargs
                )
            )

        ids: list[int] = []
        mask: list[int] = []
        for i, m in enumerate(messages):
            cur = render(messages[: i + 1])
            if cur[: len(ids)] != ids:
                raise ConfigError(
                    f"row {index}: the chat template does not render message {i} as an extension of "
                    "the messages before it, so assistant tokens cannot be told apart",
                    key="model.custom_chat_template",
                    fix="set model.custom_chat_template to a template that renders turn by turn",
                )
            new = cur[len(ids) :]
            head = 0
            if m["role"] == "assistant":
                gen = render(messages[:i], gen=True)
                head = len(gen) - len(ids) if gen[: len(ids)] == ids and len(gen) >= len(ids) else 0
            mask += [0] * min(head, len(new)) + [1 if m["role"] == "assistant" else 0] * max(0, len(new) - head)
            ids = cur
        return ids, mask

    def __getitem__(self, index: int) -> Example:
        """The tokenised conversation ``index`` (cached).

        Raises:
            ConfigError: a malformed row, or a conversation longer than ``data.max_length`` with
                ``truncation=error``.
        """
        if index in self._cache:
            return self._cache[index]
        row = self.rows[index]
        messages = row.get(self.messages_key)
        if (
            not isinstance(messages, list)
            or not messages
            or not all(isinstance(m, dict) and "role" in m and "content" in m for m in messages)
        ):
            raise ConfigError(
                f"row {index}: {self.messages_key!r} must be a non-empty list of {{role, content}} messages",
                key="data.messages_key",
                value=self.messages_key,
            )
        tools = row.get(self.tools_key) or None
        thinking = row.get(self.thinking_key, self.thinking_default)
        try:
            try:
                ids, mask = self._per_message(messages, tools, thinking)
            except Exception as e:  # jinja2 TemplateError: the template needs the whole conversation (Mistral)
                if type(e).__name__ != "TemplateError":
                    raise
                ids, mask = self._by_prefix(index, messages, tools, thinking)
        except ConfigError:
            raise
        except Exception as e:  # the template's raise_exception, an undefined variable, a type error
            raise template_error(e, self.read.where(index), key="model.custom_chat_template") from e
        if len(ids) > self.max_length:
            if self.truncation == "error":
                raise ConfigError(
                    f"{self.read.where(index)} has {len(ids)} tokens, more than data.max_length {self.max_length}",
                    key="data.max_length",
                    value=self.max_length,
                    fix=f"raise data.max_length to at least {len(ids)}, or set data.truncation=right",
                )
            keep = slice(None, self.max_length) if self.truncation == "right" else slice(-self.max_length, None)
            ids, mask = ids[keep], mask[keep]
        ex = Example(torch.tensor(ids, dtype=torch.long), torch.tensor(mask, dtype=torch.long))
        self._cache[index] = ex
        return ex


def collate(examples: list[Example], pad_token_id: int) -> dict[str, torch.Tensor]:
    """Right-pad a micro-batch to its longest conversation.

    Returns:
        ``input_ids``, ``attention_mask``, ``loss_mask``, ``position_ids``: each ``(batch, longest)``; padding
        has attention 0, loss 0, position 0.
    """
    longest = max(len(e.input_ids) for e in examples)
    b = len(examples)
    ids = torch.full((b, longest), int(pad_token_id), dtype=torch.long)
    attn = torch.zeros((b, longest), dtype=torch.long)
    loss = torch.zeros((b, longest), dtype=torch.long)
    pos = torch.zeros((b, longest), dtype=torch.long)
    for i, e in enumerate(examples):
        n = len(e.input_ids)
        ids[i, :n], attn[i, :n], loss[i, :n] = e.input_ids, 1, e.loss_mask
        pos[i, :n] = torch.arange(n)
    return {"input_ids": ids, "attention_mask": attn, "loss_mask": loss, "position_ids": pos}
