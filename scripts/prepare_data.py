#!/usr/bin/env python
"""Regenerate the datasets shipped in ``fsdpcfg/data/datasets/`` (deterministic: same bytes every run).

    python scripts/prepare_data.py [--gsm8k-source DIR] [--out fsdpcfg/data/datasets]

``DIR`` holds the raw GSM8K ``train.jsonl`` and ``test.jsonl`` of github.com/openai/grade-school-math
(``grade_school_math/data/``, MIT; the commit and sha256 are in ``fsdpcfg/data/datasets/gsm8k/SOURCES.md``).

Writes:
- ``gsm8k/{train,test}.jsonl``: the first 256 train / 64 test GSM8K problems in verl's RL format, converted
  as verl's ``examples/data_preprocess/gsm8k.py`` does (prompt = question + " " + instruction, ground truth
  = the number after "####" without commas, extra_info with split, index, answer, question).
- ``gsm8k_sft/train.jsonl``: the same 256 train problems as chat ``messages`` (user question, assistant
  worked answer ending in "#### N"), the layout of verl's SFT trainer ``data.messages_key``; and the same rows
  as ``gsm8k_sft/train.parquet``, the file the SFT data group names: verl's ``MultiTurnSFTDataset`` reads
  parquet only (``pd.read_parquet``), the native loader reads both.
- ``arith/{train,test}.jsonl``: the synthetic one-digit addition task (see ``arith/README.md``).
- ``arith_heldout/{sft,train,heldout}.jsonl``: addition of two digits split into questions trained on and
  held-out questions never trained on (see ``arith_heldout/README.md``): ``sft`` the train questions as chat
  ``messages`` for the SFT trainer, ``train`` the same questions as RL rows, ``heldout`` the others as RL rows.
"""

from __future__ import annotations

import argparse
import json
import random
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DEFAULT_SOURCE = REPO.parent / "shared" / "data" / "gsm8k"
DEFAULT_OUT = REPO / "fsdpcfg" / "data" / "datasets"

GSM8K_DATA_SOURCE = "openai/gsm8k"
GSM8K_INSTRUCTION = 'Let\'s think step by step and output the final answer after "####".'
GSM8K_SIZES = {"train": 256, "test": 64}

ARITH_DATA_SOURCE = "fsdpcfg/arith"
ARITH_SYSTEM = "Answer with a single digit."
ARITH_TRAIN_ROWS = 256
ARITH_SEED = 1234

ARITH_HELDOUT_DATA_SOURCE = "fsdpcfg/arith_heldout"
ARITH_HELDOUT_SYSTEM = "Answer with a single digit."
#: questions ``a+b+c=`` with digits a, b, c >= 0 and a + b + c <= ARITH_HELDOUT_MAX_SUM (220 of them): the
#: answer is one digit token.
ARITH_HELDOUT_TERMS = 3
ARITH_HELDOUT_MAX_SUM = 9
#: questions held out of training (never in ``sft`` or ``train``), drawn under ``ARITH_HELDOUT_SEED``.
ARITH_HELDOUT_N = 60
ARITH_HELDOUT_SEED = 2026


def gsm8k_ground_truth(answer: str) -> str:
    """Return the number after the first ``#### `` of a GSM8K answer, commas removed (verl's preprocessing).

    Raises:
        ValueError: no ``#### <number>`` in ``answer``.
    """
    m = re.search(r"#### (\-?[0-9\.\,]+)", answer)
    if m is None:
        raise ValueError(f"GSM8K answer without '#### <number>': {answer[-80:]!r}")
    return m.group(1).replace(",", "")


def gsm8k_rl_row(example: dict[str, str], split: str, index: int) -> dict[str, Any]:
    """Convert one raw GSM8K ``{"question", "answer"}`` record to verl's RL row (key order as verl's map)."""
    question, answer = example["question"], example["answer"]
    return {
        "data_source": GSM8K_DATA_SOURCE,
        "prompt": [{"role": "user", "content": question + " " + GSM8K_INSTRUCTION}],
        "ability": "math",
        "reward_model": {"style": "rule", "ground_truth": gsm8k_ground_truth(answer)},
        "extra_info": {"split": split, "index": index, "answer": answer, "question": question},
    }


def gsm8k_sft_row(example: dict[str, str]) -> dict[str, Any]:
    """Convert one raw GSM8K record to a chat ``messages`` row for SFT (loss on the assistant turn)."""
    return {
        "messages": [
            {"role": "user", "content": example["question"] + " " + GSM8K_INSTRUCTION},
            {"role": "assistant", "content": example["answer"]},
        ]
    }


def arith_pairs() -> list[tuple[int, int]]:
    """Return every (a, b) with a, b >= 0 and a + b <= 9: the 55 questions of the arith task."""
    return [(a, b) for a in range(10) for b in range(10) if a + b <= 9]


def arith_row(a: int, b: int, split: str, index: int) -> dict[str, Any]:
    """Return the verl RL row of the question ``a + b`` (one-digit answer)."""
    return {
        "data_source": ARITH_DATA_SOURCE,
        "prompt": [{"role": "system", "content": ARITH_SYSTEM}, {"role": "user", "content": f"{a}+{b}="}],
        "ability": "arithmetic",
        "reward_model": {"style": "rule", "ground_truth": str(a + b)},
        "extra_info": {"split": split, "index": index, "a": a, "b": b},
    }


def arith_rows(split: str) -> list[dict[str, Any]]:
    """Return the arith split: ``test`` is the 55 questions once; ``train`` is 256 questions drawn
    uniformly with replacement from the same 55 under a fixed seed (a one-digit sum table has no held-out
    part worth the name: learning is measured as reward on these questions)."""
    pairs = arith_pairs()
    if split == "test":
        chosen = pairs
    else:
        rng = random.Random(ARITH_SEED)
        chosen = [rng.choice(pairs) for _ in range(ARITH_TRAIN_ROWS)]
    return [arith_row(a, b, split, i) for i, (a, b) in enumerate(chosen)]


def arith_heldout_split() -> tuple[list[tuple[int, ...]], list[tuple[int, ...]]]:
    """Return ``(train, heldout)``: the 220 questions ``(a, b, c)`` (digits, sum at most 9), split at random (seed
    ``ARITH_HELDOUT_SEED``) into ``ARITH_HELDOUT_N`` held-out ones and the rest, each sorted; disjoint. Every sum
    is the answer of many questions (``0+3+4``, ``2+5+0``, ...), so a held-out question can be answered by what
    generalises (the value of each digit, added), never by recalling the question itself."""
    import itertools

    pairs = [t for t in itertools.product(range(10), repeat=ARITH_HELDOUT_TERMS) if sum(t) <= ARITH_HELDOUT_MAX_SUM]
    random.Random(ARITH_HELDOUT_SEED).shuffle(pairs)
    return sorted(pairs[ARITH_HELDOUT_N:]), sorted(pairs[:ARITH_HELDOUT_N])


def arith_heldout_prompt(terms: tuple[int, ...]) -> list[dict[str, str]]:
    """The chat prompt of question ``a+b+c=`` (system instruction, user message)."""
    return [
        {"role": "system", "content": ARITH_HELDOUT_SYSTEM},
        {"role": "user", "content": "+".join(map(str, terms)) + "="},
    ]


def arith_heldout_files() -> dict[str, list[dict[str, Any]]]:
    """Return the rows of ``arith_heldout/{sft,train,heldout}.jsonl``: ``sft`` holds the train questions as
    ``messages`` (prompt + assistant answer, the SFT trainer's layout), ``train``/``heldout`` verl RL rows."""
    train, heldout = arith_heldout_split()

    def rl(questions: list[tuple[int, ...]], split: str) -> list[dict[str, Any]]:
        return [
            {
                "data_source": ARITH_HELDOUT_DATA_SOURCE,
                "prompt": arith_heldout_prompt(t),
                "ability": "arithmetic",
                "reward_model": {"style": "rule", "ground_truth": str(sum(t))},
                "extra_info": {"split": split, "index": i, "terms": list(t)},
            }
            for i, t in enumerate(questions)
        ]

    sft = [{"messages": arith_heldout_prompt(t) + [{"role": "assistant", "content": str(sum(t))}]} for t in train]
    return {"sft": sft, "train": rl(train, "train"), "heldout": rl(heldout, "heldout")}


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Read a JSON-lines file into a list of dicts."""
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def dumps_jsonl(rows: Iterable[dict[str, Any]]) -> str:
    """Serialise rows as JSON lines (UTF-8 kept, one row per line, trailing newline)."""
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def render_all(gsm8k_source: Path) -> dict[str, str]:
    """Return ``{relative path: file text}`` of every generated dataset file."""
    out: dict[str, str] = {}
    raw = {split: read_jsonl(gsm8k_source / f"{split}.jsonl")[:n] for split, n in GSM8K_SIZES.items()}
    for split, rows in raw.items():
        out[f"gsm8k/{split}.jsonl"] = dumps_jsonl(gsm8k_rl_row(r, split, i) for i, r in enumerate(rows))
    out["gsm8k_sft/train.jsonl"] = dumps_jsonl(gsm8k_sft_row(r) for r in raw["train"])
    for split in ("train", "test"):
        out[f"arith/{split}.jsonl"] = dumps_jsonl(arith_rows(split))
    for name, rows in arith_heldout_files().items():
        out[f"arith_heldout/{name}.jsonl"] = dumps_jsonl(rows)
    return out


def write_parquet(rows: list[dict[str, Any]], path: Path) -> None:
    """Write ``rows`` as one parquet file (one row group, no compression: the same bytes for the same pyarrow)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(rows), path, compression="none")


def main(argv: list[str] | None = None) -> int:
    """Write the datasets under ``--out``; returns 0."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--gsm8k-source",
        type=Path,
        default=DEFAULT_SOURCE,
        help="folder with the raw GSM8K train.jsonl/test.jsonl (openai/grade-school-math)",
    )
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = p.parse_args(argv)
    for rel, text in render_all(args.gsm8k_source).items():
        path = args.out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path} ({text.count(chr(10))} rows)")
        if rel in ("gsm8k_sft/train.jsonl", "arith_heldout/sft.jsonl"):  # SFT data: verl reads parquet only
            rows = [json.loads(line) for line in text.splitlines()]
            write_parquet(rows, path.with_suffix(".parquet"))
            print(f"wrote {path.with_suffix('.parquet')} ({len(rows)} rows)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
