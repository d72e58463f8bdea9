"""Training prompts in verl's RL format: read ``data.train_files``, apply the chat template, left-pad, and draw
``data.train_batch_size`` prompts per step from a sampler whose position is saved in checkpoints.

A row holds ``prompt`` (chat messages, under ``data.prompt_key``), ``data_source``, ``reward_model.ground_truth``
and ``extra_info``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch

from fsdpcfg.datafiles import Rows, check_chat_rows, read_rows  # one reader for check and run
from fsdpcfg.errors import ConfigError

if TYPE_CHECKING:
    from fsdpcfg.schema.data import DataSection


@dataclass
class PromptBatch:
    """A batch of tokenised prompts.

    Attributes:
        input_ids: ``(batch, prompt_len)`` left-padded with the pad token.
        attention_mask: ``(batch, prompt_len)``, 1 on real tokens.
        rows: the source rows (for the reward: ``data_source``, ``reward_model.ground_truth``, ``extra_info``).
        uids: a group id per prompt (the dataset index), shared by its ``n`` samples.
    """

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    rows: list[dict] = field(default_factory=list)
    uids: list[int] = field(default_factory=list)

    def repeat_interleave(self, n: int) -> PromptBatch:
        """Each prompt ``n`` times in a row (prompt 0 x n, prompt 1 x n, ...)."""
        idx = [i for i in range(len(self.rows)) for _ in range(n)]
        return self.select(idx)

    def select(self, idx: list[int]) -> PromptBatch:
        """The rows ``idx`` (in that order)."""
        t = torch.tensor(idx, dtype=torch.long)
        return PromptBatch(
            self.input_ids[t], self.attention_mask[t], [self.rows[i] for i in idx], [self.uids[i] for i in idx]
        )


class PromptDataset:
    """Tokenised prompts of ``data.train_files``.

    Args:
        data_cfg: the ``data`` section (``train_files``, ``prompt_key``, ``max_prompt_length``, ``truncation``,
            ``filter_overlong_prompts``, ``apply_chat_template_kwargs``, ``train_max_samples``).
        tokenizer: a Hugging Face tokenizer with a chat template.
        files_key: the key naming the files in messages (``data.val_files`` for the validation set).

    Raises:
        ConfigError: unreadable files, a row without the prompt key or with a malformed message (any row: all are
            checked here, naming the file and the row), a chat template that fails on a row.
    """

    def __init__(self, data_cfg: DataSection, tokenizer, files_key: str = "data.train_files") -> None:
        self.tokenizer = tokenizer
        self._files_key = files_key
        self.prompt_key = data_cfg.prompt_key
        self.max_len = data_cfg.max_prompt_length
        self.truncation = data_cfg.truncation
        self.template_kwargs = dict(data_cfg.apply_chat_template_kwargs or {})
        self.rows: list[dict] = read_rows(data_cfg.train_files, data_cfg.train_max_samples, key=files_key)
        if not self.rows:
            raise ConfigError("the training files hold no rows", key="data.train_files", value=data_cfg.train_files)
        for i, r in enumerate(self.rows[:1]):
            if self.prompt_key not in r:
                raise ConfigError(
                    f"row {i} has no {self.prompt_key!r} (keys: {sorted(r)})",
                    key="data.prompt_key",
                    value=self.prompt_key,
                    fix="set data.prompt_key to the column holding the chat",
                )
        self._read = self.rows if isinstance(self.rows, Rows) else Rows()  # every row read, with the file of each
        check_chat_rows(self._read, self.prompt_key, "data.prompt_key", plain_ok=True, key=self._files_key)
        self._origin: list[int] | None = None  # the read row of each kept one (filter_overlong_prompts)
        self._cache: dict[int, list[int]] = {}
        if data_cfg.filter_overlong_prompts:
            keep = [i for i in range(len(self.rows)) if len(self._raw_ids(i)) <= self.max_len]
            self.rows = [self.rows[i] for i in keep]
            self._origin = keep
            self._cache = {}

    def where(self, i: int) -> str:
        """``row R of FILE``: where prompt ``i`` comes from (for messages)."""
        return self._read.where(i if self._origin is None else self._origin[i])

    def __len__(self) -> int:
        return len(self.rows)

    def prompt_ids(self, i: int) -> list[int]:
        """Prompt token ids of row ``i`` after the chat template, before ``data.truncation`` (``fsdpcfg preview``)."""
        return self._raw_ids(i)

    def _raw_ids(self, i: int) -> list[int]:
        prompt = self.rows[i][self.prompt_key]
        if isinstance(prompt, str):
            prompt = [{"role": "user", "content": prompt}]
        try:
            text = self.tokenizer.apply_chat_template(
                list(prompt), add_generation_prompt=True, tokenize=False, **self.template_kwargs
            )
        except Exception as e:  # the template's own raise_exception, an undefined variable, a type error
            raise template_error(e, self.where(i)) from e
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def token_ids(self, i: int) -> list[int]:
        """Prompt token ids of row ``i`` after the chat template and ``data.truncation``.

        Raises:
            ConfigError: the prompt is longer than ``data.max_prompt_length`` and truncation is ``error``.
        """
        if i not in self._cache:
            ids = self._raw_ids(i)
            if len(ids) > self.max_len:
                if self.truncation == "error":
                    raise ConfigError(
                        f"prompt {i} has {len(ids)} tokens, more than data.max_prompt_length {self.max_len}",
                        key="data.max_prompt_length",
                        value=self.max_len,
                        fix="raise data.max_prompt_length, set data.truncation=left|right|middle, "
                        "or data.filter_overlong_prompts=true",
                    )
                if self.truncation == "left":
                    ids = ids[-self.max_len :]
                elif self.truncation == "right":
                    ids = ids[: self.max_len]
                else:
                    half = self.max_len // 2
                    ids = ids[:half] + ids[len(ids) - (self.max_len - half) :]
            self._cache[i] = ids
        return self._cache[i]

    def batch(self, indices: list[int]) -> PromptBatch:
        """Left-pad the prompts ``indices`` to the longest of them: a :class:`PromptBatch`."""
        seqs = [self.token_ids(i) for i in indices]
        width = max(len(s) for s in seqs)
        pad = self.tokenizer.pad_token_id
        ids = torch.full((len(seqs), width), pad, dtype=torch.long)
        mask = torch.zeros((len(seqs), width), dtype=torch.long)
        for r, s in enumerate(seqs):
            ids[r, width - len(s) :] = torch.tensor(s, dtype=torch.long)
            mask[r, width - len(s) :] = 1
        return PromptBatch(ids, mask, [self.rows[i] for i in indices], list(indices))


def template_error(e: Exception, where: str, key: str = "actor_rollout_ref.model.custom_chat_template") -> ConfigError:
    """The message of a chat template that failed on ``where`` (``row R of FILE``): Jinja's own message
    (``raise_exception('...')``'s text), the row and the key that sets the template (``key``; SFT:
    ``model.custom_chat_template``)."""
    text = str(e).strip().splitlines()[0][:300] if str(e).strip() else ""
    return ConfigError(
        f"the chat template failed on {where}: {type(e).__name__}: {text}",
        key=key,
        fix=f"fix the row, or the template ({key}, else the tokenizer's chat_template) so that it renders "
        "every row; `fsdpcfg preview` renders the first rows",
    )


class StatefulSampler:
    """Draws batches of dataset indices, epoch after epoch; the position is saved and restored for resume.

    Epoch ``e`` visits ``randperm(size)`` from a generator seeded with ``seed + e`` (``shuffle``), or
    ``0..size-1``; the last partial batch of an epoch is dropped, as verl's dataloader does.
    """

    def __init__(self, size: int, batch_size: int, shuffle: bool, seed: int) -> None:
        if size < batch_size:
            raise ConfigError(
                f"the training set has {size} prompts, fewer than one batch of {batch_size}",
                key="data.train_batch_size",
                value=batch_size,
                fix="lower data.train_batch_size",
            )
        self.size, self.batch_size, self.shuffle, self.seed = size, batch_size, shuffle, seed
        self.epoch, self.position = 0, 0

    @property
    def batches_per_epoch(self) -> int:
        return self.size // self.batch_size

    def _order(self) -> list[int]:
        if not self.shuffle:
            return list(range(self.size))
        g = torch.Generator().manual_seed(self.seed + self.epoch)
        return torch.randperm(self.size, generator=g).tolist()

    def next_batch(self) -> list[int]:
        """The next ``batch_size`` indices (advancing to the next epoch when this one is used up)."""
        if self.position >= self.batches_per_epoch:
            self.epoch, self.position = self.epoch + 1, 0
        order = self._order()
        start = self.position * self.batch_size
        self.position += 1
        return order[start : start + self.batch_size]

    def state_dict(self) -> dict[str, Any]:
        """``{"epoch", "position", "size", "batch_size", "shuffle", "seed"}``."""
        return {
            "epoch": self.epoch,
            "position": self.position,
            "size": self.size,
            "batch_size": self.batch_size,
            "shuffle": self.shuffle,
            "seed": self.seed,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore the position saved by :meth:`state_dict`.

        Raises:
            ConfigError: the dataset size, batch size, shuffle or seed differ from the checkpoint's.
        """
        for k in ("size", "batch_size", "shuffle", "seed"):
            if state[k] != getattr(self, k):
                raise ConfigError(
                    f"the checkpoint's sampler has {k}={state[k]!r}, this run {getattr(self, k)!r}",
                    key="trainer.resume_mode",
                    fix="resume with the same data settings, or trainer.resume_mode=disable",
                )
        self.epoch, self.position = int(state["epoch"]), int(state["position"])
