"""FC408, FC410-FC414: the training and validation data files, opened by :mod:`fsdpcfg.datafiles` (the reader
the native run uses too) for a bounded sample of their first rows (at most
:data:`~fsdpcfg.datafiles.SAMPLE_ROWS` rows or :data:`~fsdpcfg.datafiles.SAMPLE_BYTES` bytes per file) and their
row count, never read whole.

verl checks none of this before its workers start: a corrupt, empty or prompt-less file fails inside the
dataset 15-25 s into torchrun (minutes into a Ray job) with a raw pyarrow or ``KeyError`` traceback.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

from fsdpcfg import datafiles
from fsdpcfg.rules._common import flag, num
from fsdpcfg.rules.context import Context
from fsdpcfg.rules.finding import Finding, Severity
from fsdpcfg.rules.registry import rule

KEY = "data.train_files"
VAL = "data.val_files"
BOTH = ("ppo", "sft")
#: Rows read from the head of each file (fewer once they hold ``datafiles.SAMPLE_BYTES``).
HEAD = datafiles.SAMPLE_ROWS


def missing_files(value: Any) -> list[str]:
    """Return the entries of ``data.train_files`` (a path or a list of paths) that are not files here.
    Remote URIs (``hdfs://``, ``s3://``, ...) are not checked."""
    return [f for f in datafiles.file_list(value) if not Path(f).expanduser().is_file()]


@rule(
    "FC408",
    "training data files exist on this machine",
    severity="info",
    keys=[KEY],
    example=["data.train_files=/no/such/train.parquet"],
    kinds=BOTH,
)
def train_files_present(ctx: Context) -> Iterable[Finding]:
    """A data file that does not exist here cannot be checked; on a laptop checking a cluster config that is
    normal (info), and ``python -m fsdpcfg`` refuses to launch without it, before torchrun starts.

    Source: verl/utils/dataset/rl_dataset.py and sft_dataset (read at worker start-up, minutes in);
    docs/design.md#offline-inspection.
    """
    missing = missing_files(ctx.get(KEY))
    if missing:
        yield ctx.finding(
            "FC408",
            [KEY],
            f"{KEY}: {', '.join(missing)} does not exist on this machine, so the data "
            "was not checked; a native run here stops before starting",
            "fix the path, or check where the data is",
            severity="info",
        )


# -- reading ----------------------------------------------------------------------------------------------
@lru_cache(maxsize=32)  # at most ~1 MB of rows each
def _peek_cached(path: str, key: str, stamp: tuple[int, int]) -> datafiles.Peek | datafiles.DataFileError:
    try:
        return datafiles.peek(path, HEAD, key=key, max_bytes=datafiles.SAMPLE_BYTES)
    except datafiles.DataFileError as e:
        return e


def peek(path: str, key: str) -> datafiles.Peek | datafiles.DataFileError | None:
    """The head of ``path`` (cached per file version), the error reading it, or ``None`` when it is absent."""
    p = Path(path).expanduser()
    try:
        st = os.stat(p)
    except OSError:
        return None
    if not p.is_file():
        return None
    return _peek_cached(path, key, (st.st_mtime_ns, st.st_size))


def chosen(ctx: Context, key: str) -> bool:
    """False when ``ctx`` is a verl run script's config (``fsdpcfg check run.sh``) that does not set ``key``:
    the value is then fsdpcfg's own group default, not the file verl would read, so it is not checked."""
    if getattr(ctx.composed, "script_notes", None) is None:
        return True
    src = ctx.composed.provenance.source_of(key)
    return src is not None and src.kind in ("file", "override")


def _files(ctx: Context) -> Iterator[tuple[str, str]]:
    """``(key, path)`` of every local train and val file the config chose."""
    for key in (KEY, VAL):
        if not chosen(ctx, key):
            continue
        for f in datafiles.file_list(ctx.get(key)):
            yield key, f


def _heads(ctx: Context) -> Iterator[tuple[str, datafiles.Peek]]:
    """``(key, head)`` of every train and val file that could be read."""
    for key, f in _files(ctx):
        got = peek(f, key)
        if isinstance(got, datafiles.Peek):
            yield key, got


def _sft(ctx: Context) -> bool:
    return str(ctx.get("fsdpcfg.kind", "ppo")) == "sft"


@rule(
    "FC410",
    "data files can be read as verl's dataset reads them (not empty, not corrupt, a known format)",
    keys=[KEY, VAL],
    example=["data.train_files=${fsdpcfg_data:datasets/gsm8k/SOURCES.md}"],
    kinds=BOTH,
)
def files_readable(ctx: Context) -> Iterable[Finding]:
    """Each train and val file opens as parquet (metadata and first row group) or JSON Lines / a JSON array
    (first lines), holds at least one row, and every row read is an object. verl's SFT dataset reads parquet
    only, so a JSON file there is an error under ``launcher=verl``. A val file absent here is an info (FC408
    covers the train files).

    Source: verl/utils/dataset/rl_dataset.py ``RLHFDataset._read_files_and_tokenize`` ("Unsupported file
    format", ``datasets.load_dataset``); verl/utils/dataset/multiturn_sft_dataset.py
    ``MultiTurnSFTDataset._read_files_and_process`` (``pd.read_parquet`` on every file); issue 14 item 7. An
    empty ``data.train_files`` (``''``, ``[]``, an empty entry) is an error: the run has nothing to read (issue 22
    item 5: it passed ``check`` and the run refused it).
    """
    for key in (KEY, VAL):
        value = ctx.get(key)
        entries = value if isinstance(value, (list, tuple)) else [value]
        blank = [e for e in entries if isinstance(e, str) and not e.strip()]
        if chosen(ctx, key) and (blank or (key == KEY and not entries)):
            yield ctx.finding(
                "FC410",
                [key],
                f"{key} is empty ({value!r}): no data file to read"
                if key == KEY and (not entries or len(blank) == len(entries))
                else f"{key} holds an empty path ({value!r})",
                f"set {key} to a .parquet or .jsonl file (or a list of them)",
            )
    for key, f in _files(ctx):
        got = peek(f, key)
        if got is None:
            if key == VAL:
                yield ctx.finding(
                    "FC410",
                    [key],
                    f"{key}: {f} does not exist on this machine, so it was not checked",
                    "fix the path, or check where the data is",
                    severity="info",
                )
            continue
        if isinstance(got, datafiles.DataFileError):
            yield ctx.finding("FC410", [key], f"{key}: {got.message}", got.fix or "regenerate the file")
        elif _sft(ctx) and ctx.launcher == "verl" and got.fmt != "parquet":
            yield ctx.finding(
                "FC410",
                [key],
                f"{key}: {f} is {got.fmt}, but verl's SFT trainer reads every data file "
                "with pandas.read_parquet (MultiTurnSFTDataset)",
                "convert it to parquet (pandas.read_json(f, lines=True).to_parquet(...)), or run it "
                "with launcher=native, which reads JSON Lines",
            )


def _column_key(ctx: Context) -> str:
    return "data.messages_key" if _sft(ctx) else "data.prompt_key"


@rule(
    "FC411",
    "data rows hold the prompt column (data.prompt_key; SFT: data.messages_key)",
    keys=["data.prompt_key", "data.messages_key", KEY, VAL],
    example=["data.prompt_key=question"],
    kinds=BOTH,
)
def prompt_column(ctx: Context) -> Iterable[Finding]:
    """Every row verl's dataset builds a prompt from must have the column ``data.prompt_key`` (RL) or
    ``data.messages_key`` (SFT); a missing column is a ``KeyError`` inside the dataset after start-up.

    The rows of the sample (the first :data:`~fsdpcfg.datafiles.SAMPLE_ROWS`, at most
    :data:`~fsdpcfg.datafiles.SAMPLE_BYTES`) are each checked: a JSON row that lacks the column is named with its
    file and row (the run checks every row when it loads the data, with the same message).

    Source: verl/utils/dataset/rl_dataset.py ``RLHFDataset._build_messages`` (``example[key]``) and
    ``__getitem__``; verl/utils/dataset/multiturn_sft_dataset.py ``_read_files_and_process``
    (``self.dataframe[self.messages_key]``).
    """
    ck = _column_key(ctx)
    col = ctx.get(ck)
    if not isinstance(col, str):
        return
    for key, head in _heads(ctx):
        if head.columns and col not in head.columns:
            yield ctx.finding(
                "FC411",
                [ck, key],
                f"{key}: {head.path} has no column {col!r} ({ck}); its columns: {', '.join(head.columns)}",
                f"set {ck} to the column holding the chat messages, or regenerate the file",
            )
            continue
        i = next((i for i, row in enumerate(head.rows) if col not in row), None)
        if i is not None:
            yield ctx.finding(
                "FC411",
                [ck, key],
                f"{key}: row {i} of {head.path} has no {col!r} ({ck}); the dataset reads it from every row",
                f"add {col!r} to the row, or drop the row",
            )


@rule(
    "FC412",
    "prompts are chat messages (a list of {role, content})",
    keys=["data.prompt_key", "data.messages_key", KEY, VAL],
    example=["launcher=verl", "data.prompt_key=data_source"],
    kinds=BOTH,
)
def chat_rows(ctx: Context) -> Iterable[Finding]:
    """verl passes the prompt column to ``tokenizer.apply_chat_template``: it must be a list of
    ``{"role", "content"}`` messages. A plain-string prompt is an error under ``launcher=verl``; the native
    loader wraps it as one user message (a warning: the same file fails on verl). An SFT conversation without an
    assistant turn has no token to train on (warning).

    Source: verl/utils/dataset/rl_dataset.py ``RLHFDataset._build_messages`` / ``maybe_filter_out_long_prompts``
    (``apply_chat_template(doc[prompt_key])``); verl/utils/dataset/multiturn_sft_dataset.py
    ``_process_one_row`` (loss mask on assistant turns).
    """
    ck = _column_key(ctx)
    col = ctx.get(ck)
    if not isinstance(col, str):
        return
    for key, head in _heads(ctx):
        for i, row in enumerate(head.rows):
            if col not in row:
                continue  # FC411
            why = datafiles.chat_problem(row[col])
            if why is not None:
                plain = isinstance(row[col], str)
                sev: Severity = "warning" if plain and ctx.launcher == "native" and not _sft(ctx) else "error"
                yield ctx.finding(
                    "FC412",
                    [ck, key],
                    f"{key}: row {i} of {head.path}: {col!r} is {why}"
                    + (
                        " (the native loader wraps it as one user message; verl fails on it)"
                        if sev == "warning"
                        else ""
                    ),
                    f'write {col!r} as [{{"role": "user", "content": ...}}], or point {ck} at the chat column',
                    severity=sev,
                )
                break
            if _sft(ctx) and not any(isinstance(m, dict) and m.get("role") == "assistant" for m in row[col]):
                yield ctx.finding(
                    "FC412",
                    [ck, key],
                    f"{key}: row {i} of {head.path} has no assistant message, so no token of it is trained on",
                    "add the assistant answer to each conversation",
                    severity="warning",
                )
                break


def _reward_model_on(ctx: Context) -> bool:
    return flag(ctx.get("reward.reward_model.enable", False)) or flag(ctx.get("reward_model.enable", False))


@rule(
    "FC413",
    "data rows hold what the rule reward reads (data.reward_fn_key, reward_model.ground_truth)",
    keys=["data.reward_fn_key", KEY, VAL],
    example=["data.reward_fn_key=source"],
)
def reward_fields(ctx: Context) -> Iterable[Finding]:
    """The rule-based reward managers read ``row[data.reward_fn_key]``, ``row["data_source"]`` and
    ``row["reward_model"]["ground_truth"]`` of every sample; a row without them is a ``KeyError`` at the first
    reward, after the first rollout. Not checked when a reward model scores the samples.

    Source: verl/workers/reward_manager/naive.py ``NaiveRewardManager.__call__`` (``non_tensor_batch
    ["reward_model"]["ground_truth"]``, ``non_tensor_batch[self.reward_fn_key]``);
    verl/experimental/reward_loop/reward_manager/naive.py (``non_tensor_batch["data_source"]``, whatever
    ``data.reward_fn_key`` says).
    """
    if _reward_model_on(ctx):
        return
    rk = ctx.get("data.reward_fn_key") or "data_source"
    for key, head in _heads(ctx):
        for i, row in enumerate(head.rows):
            missing = [
                f"{k!r}" + (" (data.reward_fn_key)" if k == rk else "")
                for k in dict.fromkeys((rk, "data_source"))
                if k not in row
            ]
            rm = row.get("reward_model")
            if not isinstance(rm, dict) or "ground_truth" not in rm:
                missing.append("'reward_model': {'ground_truth': ...}")
            if missing:
                yield ctx.finding(
                    "FC413",
                    ["data.reward_fn_key", key],
                    f"{key}: row {i} of {head.path} has no "
                    f"{' and no '.join(missing)}; the reward manager reads them for every sample",
                    "add the fields to the rows (verl's data preprocessing writes data_source and "
                    "reward_model.ground_truth), or set data.reward_fn_key to the column naming the "
                    "data source",
                )
                break


def _rows(ctx: Context, key: str) -> tuple[int, bool] | None:
    """``(rows, exact)`` over all files of ``key`` after ``*_max_samples``, or ``None`` when not known."""
    total, exact = 0, True
    for f in datafiles.file_list(ctx.get(key)):
        head = peek(f, key)
        if not isinstance(head, datafiles.Peek) or head.num_rows is None:
            return None
        total += head.num_rows
        exact = exact and head.exact
    if not datafiles.file_list(ctx.get(key)):
        return None
    cap = num(ctx.get("data.train_max_samples" if key == KEY else "data.val_max_samples", -1))
    if cap is not None and cap > 0 and total >= cap:
        return cap, True
    return total, exact


@rule(
    "FC414",
    "the training files hold at least one batch, and enough for the steps asked",
    keys=[
        KEY,
        "data.train_batch_size",
        "data.train_max_samples",
        "trainer.total_training_steps",
        "trainer.total_epochs",
    ],
    example=["data.train_batch_size=512"],
    kinds=BOTH,
)
def rows_for_steps(ctx: Context) -> Iterable[Finding]:
    """The train dataloader drops the last partial batch, so fewer rows than ``data.train_batch_size`` give
    no step at all (verl: ``assert len(self.train_dataloader) >= 1``). Under ``launcher=verl`` the loop runs at
    most ``trainer.total_epochs`` passes, so ``trainer.total_training_steps`` beyond ``batches x epochs`` ends
    the run early (warning); the native loop goes on into further epochs.

    Source: verl/trainer/ppo/ray_trainer.py ``RayPPOTrainer._create_dataloader`` (``drop_last=True``, "Train
    dataloader is empty!") and ``fit`` (``for epoch in range(... total_epochs)``); verl/trainer/sft_trainer.py
    ``_build_dataloader`` (``DistributedSampler(drop_last=True)``).
    """
    got = _rows(ctx, KEY) if chosen(ctx, KEY) else None
    tbs = num(ctx.get("data.train_batch_size"))
    if got is None or tbs is None or tbs <= 0:
        return
    rows, exact = got
    keys = [KEY, "data.train_batch_size"]
    if rows < tbs:
        if exact:
            yield ctx.finding(
                "FC414",
                keys,
                f"{KEY} holds {rows} rows (after data.train_max_samples), fewer than "
                f"one batch of data.train_batch_size={tbs}: the dataloader (drop_last) yields no step",
                f"lower data.train_batch_size to at most {rows}, or add data",
            )
        return
    steps = num(ctx.get("trainer.total_training_steps"))
    epochs = num(ctx.get("trainer.total_epochs"))
    if ctx.launcher != "verl" or steps is None or epochs is None or not exact:
        return
    batches = rows // tbs
    if steps > batches * epochs:
        yield ctx.finding(
            "FC414",
            keys + ["trainer.total_training_steps", "trainer.total_epochs"],
            f"trainer.total_training_steps={steps}, but {rows} rows // {tbs} = {batches} batches per "
            f"epoch x trainer.total_epochs={epochs} = {batches * epochs} steps: verl stops after the "
            "last epoch",
            f"set trainer.total_epochs to at least {-(-steps // batches)}",
            severity="warning",
        )
