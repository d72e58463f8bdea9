"""The shipped datasets: verl's RL schema, values from the real GSM8K, and byte-exact regeneration."""

from __future__ import annotations

import importlib.util
import json

import pytest

from fsdpcfg import paths
from fsdpcfg.rewards import default_compute_score

DATASETS = paths.data_dir() / "datasets"
SHARED_GSM8K = paths.REPO_DIR.parent / "shared" / "data" / "gsm8k"


def _load_script():
    spec = importlib.util.spec_from_file_location("prepare_data", paths.REPO_DIR / "scripts" / "prepare_data.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _rows(rel: str) -> list[dict]:
    return [json.loads(line) for line in (DATASETS / rel).read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize(
    "rel,n,source",
    [
        ("gsm8k/train.jsonl", 256, "openai/gsm8k"),
        ("gsm8k/test.jsonl", 64, "openai/gsm8k"),
        ("arith/train.jsonl", 256, "fsdpcfg/arith"),
        ("arith/test.jsonl", 55, "fsdpcfg/arith"),
        ("arith_heldout/train.jsonl", 160, "fsdpcfg/arith_heldout"),
        ("arith_heldout/heldout.jsonl", 60, "fsdpcfg/arith_heldout"),
    ],
)
def test_rl_schema(rel, n, source):
    rows = _rows(rel)
    assert len(rows) == n
    split = rel.split("/")[1].split(".")[0]
    for i, r in enumerate(rows):
        assert list(r) == ["data_source", "prompt", "ability", "reward_model", "extra_info"]
        assert r["data_source"] == source
        assert r["prompt"][-1]["role"] == "user" and all(set(m) == {"role", "content"} for m in r["prompt"])
        assert r["reward_model"]["style"] == "rule" and isinstance(r["reward_model"]["ground_truth"], str)
        assert r["extra_info"]["split"] == split and r["extra_info"]["index"] == i


def test_gsm8k_values_match_the_real_set():
    first = _rows("gsm8k/train.jsonl")[0]
    assert first["reward_model"]["ground_truth"] == "72"
    assert first["prompt"][0]["content"].startswith("Natalia sold clips to 48 of her friends")
    assert first["prompt"][0]["content"].endswith(
        ' Let\'s think step by step and output the final answer after "####".'
    )
    for r in _rows("gsm8k/test.jsonl") + _rows("gsm8k/train.jsonl"):
        # the worked answer scores 1.0 against its own ground truth (commas included, e.g. "#### 1,600")
        assert (
            default_compute_score(r["data_source"], r["extra_info"]["answer"], r["reward_model"]["ground_truth"]) == 1.0
        )
        assert "," not in r["reward_model"]["ground_truth"]


def test_arith_answers_are_one_digit_sums():
    for r in _rows("arith/train.jsonl") + _rows("arith/test.jsonl"):
        a, b = r["extra_info"]["a"], r["extra_info"]["b"]
        assert r["prompt"][-1]["content"] == f"{a}+{b}="
        assert r["reward_model"]["ground_truth"] == str(a + b) and 0 <= a + b <= 9
    assert {(r["extra_info"]["a"], r["extra_info"]["b"]) for r in _rows("arith/test.jsonl")} == {
        (a, b) for a in range(10) for b in range(10) if a + b <= 9
    }


def test_arith_heldout_split_is_disjoint_and_covers_the_task():
    """The held-out questions are never trained on (not in the RL train rows, not in the SFT messages), and
    train + held-out are every a+b+c with digits summing to at most 9, each once."""
    import itertools

    train, held, sft = (
        _rows("arith_heldout/train.jsonl"),
        _rows("arith_heldout/heldout.jsonl"),
        _rows("arith_heldout/sft.jsonl"),
    )
    assert (len(train), len(held), len(sft)) == (160, 60, 160)

    def q(rows: list[dict]) -> list[str]:
        return [r["prompt"][-1]["content"] for r in rows]

    sft_q = [r["messages"][1]["content"] for r in sft]
    assert sorted(sft_q) == sorted(q(train)) and not set(q(held)) & set(q(train))
    every = {"+".join(map(str, t)) + "=" for t in itertools.product(range(10), repeat=3) if sum(t) <= 9}
    assert set(q(train)) | set(q(held)) == every and len(set(q(train) + q(held))) == 220
    for r in train + held:
        terms = r["extra_info"]["terms"]
        assert r["prompt"][-1]["content"] == "+".join(map(str, terms)) + "="
        assert r["reward_model"]["ground_truth"] == str(sum(terms))
        assert default_compute_score(r["data_source"], str(sum(terms)), r["reward_model"]["ground_truth"]) == 1.0
    for m in sft:
        assert [x["role"] for x in m["messages"]] == ["system", "user", "assistant"]
        assert m["messages"][2]["content"] == str(sum(map(int, m["messages"][1]["content"][:-1].split("+"))))
    # the held-out reward is not one sum's: sums 3..9 are all held out (0, 1, 2 have only 1, 3, 6 questions)
    assert {r["reward_model"]["ground_truth"] for r in held} >= {str(d) for d in range(3, 10)}


def test_sft_messages():
    rows = _rows("gsm8k_sft/train.jsonl")
    assert len(rows) == 256
    assert [m["role"] for m in rows[0]["messages"]] == ["user", "assistant"]
    assert rows[0]["messages"][1]["content"].endswith("#### 72")


def test_sft_parquet_holds_the_jsonl_rows():
    """The SFT data group names train.parquet (verl's MultiTurnSFTDataset reads parquet only): same rows."""
    from fsdpcfg.datafiles import read_rows

    assert read_rows(str(DATASETS / "gsm8k_sft/train.parquet")) == _rows("gsm8k_sft/train.jsonl")


@pytest.mark.skipif(not SHARED_GSM8K.is_dir(), reason="needs ../shared/data/gsm8k (the raw GSM8K)")
def test_regeneration_matches_shipped_bytes():
    rendered = _load_script().render_all(SHARED_GSM8K)
    assert set(rendered) == {
        "gsm8k/train.jsonl",
        "gsm8k/test.jsonl",
        "gsm8k_sft/train.jsonl",
        "arith/train.jsonl",
        "arith/test.jsonl",
        "arith_heldout/sft.jsonl",
        "arith_heldout/train.jsonl",
        "arith_heldout/heldout.jsonl",
    }
    for rel, text in rendered.items():
        assert (DATASETS / rel).read_bytes() == text.encode("utf-8"), rel


def test_licenses_shipped():
    assert "MIT" in (DATASETS / "gsm8k" / "LICENSE").read_text()
    assert (DATASETS / "gsm8k" / "SOURCES.md").is_file()
