"""One reader of training data files for ``fsdpcfg check`` and the native run: JSON Lines, JSON and parquet.

``check`` calls :func:`peek` (the first rows and the row count, never the whole file); the run calls
:func:`read_rows` (every row). Both raise :class:`DataFileError`, a :class:`~fsdpcfg.errors.ConfigError` naming
the file, what is wrong with it and the fix, for a missing, empty, corrupt or wrongly formatted file: no
pyarrow or JSON traceback reaches the user.

The formats are the ones verl's datasets read: ``RLHFDataset`` (verl/utils/dataset/rl_dataset.py
``_read_files_and_tokenize``) takes ``.parquet`` and ``.json``/``.jsonl`` through ``datasets.load_dataset``
(a ``.json`` file is JSON Lines or one JSON array); ``MultiTurnSFTDataset``
(verl/utils/dataset/multiturn_sft_dataset.py ``_read_files_and_process``) reads every file with
``pandas.read_parquet``. No torch import; pyarrow is imported only when a parquet file is opened (~0.35 s).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fsdpcfg.errors import ConfigError

#: File suffixes verl's RL dataset reads.
SUFFIXES = (".parquet", ".jsonl", ".json")
#: ``peek`` counts the lines of a JSON Lines file up to this many bytes; past it the count is a lower bound.
COUNT_BYTES = 64 << 20
#: A ``.json`` array larger than this is not parsed by ``peek`` (its row count is then unknown).
ARRAY_BYTES = 16 << 20
#: ``fsdpcfg check`` reads at most this many rows of each data file (:func:`peek`) ...
SAMPLE_ROWS = 1000
#: ... and stops earlier once the rows read hold this many bytes (JSON text, or parquet's in-memory size).
SAMPLE_BYTES = 1 << 20


class DataFileError(ConfigError):
    """A data file that cannot be read as verl's dataset reads it.

    Attributes:
        path: the file as the config names it.
        problem: what is wrong (``empty``, ``corrupt``, ``format``, ``missing``).
    """

    def __init__(
        self, path: str, problem: str, message: str, *, key: str = "data.train_files", fix: str | None = None
    ) -> None:
        super().__init__(f"{path}: {message}" if path else message, key=key, value=path, fix=fix)
        self.path = path
        self.problem = problem


@dataclass
class Peek:
    """The head of one data file.

    Attributes:
        path: the file as the config names it.
        fmt: ``parquet``, ``jsonl`` or ``json`` (a JSON array).
        rows: up to ``n`` first rows, as dicts.
        columns: the column names (parquet schema; for JSON the keys of the first rows).
        num_rows: the number of rows, or ``None`` when it is not known without reading the whole file.
        exact: ``False`` when ``num_rows`` is a lower bound (a JSON Lines file past :data:`COUNT_BYTES`).
    """

    path: str
    fmt: str
    rows: list[dict]
    columns: list[str]
    num_rows: int | None
    exact: bool = True


class Rows(list):
    """The rows :func:`read_rows` returns: a ``list`` of dicts that knows which file each came from
    (:meth:`where`)."""

    def __init__(self) -> None:
        super().__init__()
        self.starts: list[tuple[int, str]] = []  # (index of the file's first row, the file)

    def locate(self, i: int) -> tuple[str, int]:
        """``(file, row within the file, from 0)`` of row ``i``; ``("", i)`` when not known."""
        for start, f in reversed(self.starts):
            if i >= start:
                return f, i - start
        return "", i

    def where(self, i: int) -> str:
        """``row R of FILE`` for row ``i`` (``R`` counts from 0 within the file)."""
        f, r = self.locate(i)
        return f"row {r} of {f}" if f else f"row {r}"


def chat_problem(value: Any, *, plain_ok: bool = False) -> str | None:
    """Why ``value`` is not a list of chat messages (``{"role", "content"}`` dicts), or ``None``; a plain string
    is fine when ``plain_ok`` (the native RL loader wraps it as one user message)."""
    if isinstance(value, str):
        return None if plain_ok else "a plain string, not a list of chat messages"
    if not isinstance(value, (list, tuple)) or not value:
        return f"{type(value).__name__} {value!r:.60}, not a non-empty list of chat messages"
    for i, m in enumerate(value):
        if not isinstance(m, dict) or "role" not in m or "content" not in m:
            return f"message {i} is {m!r:.60}, not a {{'role': ..., 'content': ...}} object"
        if not isinstance(m["content"], (str, list)):
            # a text chat template joins the content to strings (Qwen's: `'<|im_start|>' + message['role'] + ...
            # + message['content']`): null or a number fails in the template when its batch comes; a list of
            # parts is a multimodal processor's form
            return f"message {i} has content {m['content']!r:.40} ({type(m['content']).__name__}), not a string"
    return None


def check_chat_rows(rows: Rows, column: str, column_key: str, *, plain_ok: bool, key: str = "data.train_files") -> None:
    """Refuse the first row of ``rows`` without ``column`` or whose ``column`` is not chat messages
    (:func:`chat_problem`), naming the file and the row: every row is checked when the data is loaded, so a bad
    row ends the run before the first step, not with a ``KeyError`` or a Jinja error when its batch comes.

    Raises:
        DataFileError: naming ``key``, the file, the row and what is wrong.
    """
    for i, row in enumerate(rows):
        why = "missing" if column not in row else chat_problem(row[column], plain_ok=plain_ok)
        if why is None:
            continue
        path, r = rows.locate(i)
        raise DataFileError(
            path,
            "row",
            f"row {r}: {column!r} ({column_key}): {why}",
            key=key,
            fix=f'write {column!r} in every row as [{{"role": "user", "content": ...}}, ...], or drop the row',
        )


def file_list(value: Any) -> list[str]:
    """The entries of ``data.train_files``/``data.val_files`` (a path or a list of paths) that are local
    paths, ``~`` expanded: remote URIs (``hdfs://``, ``s3://``) and empty or non-string values are left out."""
    files = value if isinstance(value, (list, tuple)) else [value]
    return [f for f in files if isinstance(f, str) and f.strip() and "://" not in f and f.strip() != "???"]


def _fmt(path: str, key: str) -> str:
    suffix = Path(path).suffix.lower()
    if suffix == ".parquet":
        return "parquet"
    if suffix in (".jsonl", ".json"):
        return suffix[1:]
    raise DataFileError(
        path,
        "format",
        f"unknown file type {suffix or '(no suffix)'!r}; verl's dataset reads "
        ".parquet, .jsonl and .json (rl_dataset.py raises 'Unsupported file format')",
        key=key,
        fix="convert the file to parquet or JSON Lines (one JSON object per line)",
    )


def _open(path: str, key: str) -> Path:
    p = Path(path).expanduser()
    if not p.is_file():
        raise DataFileError(path, "missing", "no such file", key=key, fix=f"point {key} at an existing file")
    if p.stat().st_size == 0:
        raise DataFileError(
            path,
            "empty",
            "the file is empty (0 bytes)",
            key=key,
            fix="regenerate the file (verl's data preprocessing writes parquet with one row per prompt)",
        )
    return p


def _not_object(path: str, where: str, got: Any, key: str) -> DataFileError:
    return DataFileError(
        path,
        "format",
        f"{where}: a row must be a JSON object, got {type(got).__name__}",
        key=key,
        fix='write one JSON object per line ({"prompt": [...], "data_source": ...})',
    )


def _json_lines(path: str, p: Path, key: str, max_bytes: int | None = None) -> Iterator[dict]:
    """The objects of a JSON Lines file; with ``max_bytes``, none past the line that reaches that many bytes."""
    used = 0
    with p.open("rb") as fh:
        for i, line in enumerate(fh, 1):
            if max_bytes is not None and used >= max_bytes:
                return
            used += len(line)
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as e:
                raise DataFileError(
                    path,
                    "corrupt",
                    f"line {i} is not JSON ({e})",
                    key=key,
                    fix="repair the line, or write the file as JSON Lines (one object per line)",
                ) from None
            if not isinstance(row, dict):
                raise _not_object(path, f"line {i}", row, key)
            yield row


def _starts_array(p: Path) -> bool:
    with p.open("rb") as fh:
        head = fh.read(4096).lstrip()
    return head.startswith(b"[")


def _json_array(path: str, p: Path, key: str) -> list[dict]:
    try:
        rows = json.loads(p.read_bytes())
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as e:
        raise DataFileError(
            path,
            "corrupt",
            f"not a JSON array ({e})",
            key=key,
            fix="repair the file, or write it as JSON Lines (one object per line)",
        ) from None
    if not isinstance(rows, list):
        raise _not_object(path, "the file", rows, key)
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise _not_object(path, f"item {i}", row, key)
    return rows


def _parquet(path: str, p: Path, key: str):
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(p), (pa.ArrowException, OSError, ValueError)
    except (pa.ArrowException, OSError, ValueError) as e:
        raise DataFileError(
            path,
            "corrupt",
            f"not a readable parquet file ({e})",
            key=key,
            fix="regenerate the file (it may be truncated or not parquet at all)",
        ) from None


def _count_lines(p: Path) -> tuple[int, bool]:
    """Non-empty lines of ``p`` within :data:`COUNT_BYTES`; ``(count, exact)``."""
    count, read, last = 0, 0, b"\n"
    with p.open("rb") as fh:
        while read < COUNT_BYTES:
            chunk = fh.read(1 << 20)
            if not chunk:
                break
            read += len(chunk)
            count += chunk.count(b"\n")
            last = chunk[-1:]
        exact = not fh.read(1)
    # a last line without a newline counts; blank lines are rare enough to count as rows here
    return count + (last != b"\n"), exact


def peek(path: str, n: int = 4, *, key: str = "data.train_files", max_bytes: int | None = None) -> Peek:
    """Read the first ``n`` rows (fewer once they hold ``max_bytes``) and the row count of one data file, never
    the whole file (a JSON array up to :data:`ARRAY_BYTES` excepted).

    Raises:
        DataFileError: the file is missing, empty, of an unsupported type, corrupt, or holds non-object rows.
    """
    budget = max_bytes if max_bytes is not None else 1 << 62
    fmt = _fmt(path, key)
    p = _open(path, key)
    if fmt == "parquet":
        pf, errors = _parquet(path, p, key)
        rows: list[dict] = []
        try:
            columns = list(pf.schema_arrow.names)
            total = pf.metadata.num_rows
            used = 0
            for batch in pf.iter_batches(batch_size=max(1, min(n, 64))):
                rows.extend(batch.to_pylist()[: n - len(rows)])
                used += batch.nbytes
                if len(rows) >= n or used >= budget:
                    break
        except errors as e:
            raise DataFileError(
                path, "corrupt", f"parquet data cannot be read ({e})", key=key, fix="regenerate the file"
            ) from None
        if not total:
            raise DataFileError(
                path,
                "empty",
                f"the parquet file holds no rows (columns: {', '.join(columns)})",
                key=key,
                fix="regenerate the file",
            )
        return Peek(path, fmt, rows, columns, total)
    if fmt == "json" and _starts_array(p):
        if p.stat().st_size > ARRAY_BYTES:
            return Peek(path, fmt, [], [], None, exact=False)
        rows = _json_array(path, p, key)
        return Peek(path, fmt, rows[:n], _columns(rows[:n]), len(rows))
    rows = []
    for row in _json_lines(path, p, key, budget):
        rows.append(row)
        if len(rows) >= n:
            break
    if not rows:
        raise DataFileError(path, "empty", "the file holds no rows", key=key, fix="regenerate the file")
    total, exact = _count_lines(p)
    return Peek(path, "jsonl", rows, _columns(rows), total, exact)


def _columns(rows: list[dict]) -> list[str]:
    return list(dict.fromkeys(k for r in rows for k in r))


def read_rows(files: Any, max_samples: int | None = -1, *, key: str = "data.train_files") -> Rows:
    """Every row of ``files`` (a path or a list of paths), in order; the first ``max_samples`` when > 0. The
    result knows each row's file (:meth:`Rows.where`).

    Raises:
        DataFileError: as :func:`peek`, for any file (a corrupt row group or line anywhere in the file, a file
            without rows), or no file at all (``data.train_files`` empty).
    """
    rows = Rows()
    names = [files] if isinstance(files, str) else list(files or [])
    blank = [f for f in names if not isinstance(f, str) or not f.strip()]
    if not names or blank:
        raise DataFileError(
            "",
            "missing",
            f"{key} is empty: no data file to read"
            if len(blank) == len(names)
            else f"{key} holds an empty path ({files!r})",
            key=key,
            fix=f"set {key} to a .parquet or .jsonl file (or a list of them)",
        )
    for f in names:
        fmt = _fmt(f, key)
        p = _open(f, key)
        before = len(rows)
        rows.starts.append((before, f))
        if fmt == "parquet":
            pf, errors = _parquet(f, p, key)
            try:
                for batch in pf.iter_batches():
                    rows.extend(batch.to_pylist())
            except errors as e:
                raise DataFileError(
                    f, "corrupt", f"parquet data cannot be read ({e})", key=key, fix="regenerate the file"
                ) from None
        elif fmt == "json" and _starts_array(p):
            rows.extend(_json_array(f, p, key))
        else:
            rows.extend(_json_lines(f, p, key))
        if len(rows) == before:
            raise DataFileError(f, "empty", "the file holds no rows", key=key, fix="regenerate the file")
        if max_samples is not None and max_samples > 0 and len(rows) >= max_samples:
            break
    if max_samples is not None and max_samples > 0:
        del rows[max_samples:]
    return rows
