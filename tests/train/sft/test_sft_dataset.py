"""SFT tokenisation and loss: the assistant-only mask, truncation, row errors, equality with verl's
MultiTurnSFTDataset, and the loss over target positions."""

from __future__ import annotations

import json

import pytest
import torch

from fsdpcfg.errors import ConfigError

ROWS = [
    {"messages": [{"role": "user", "content": "What is 2+2?"}, {"role": "assistant", "content": "It is 4."}]},
    {
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "2+2?"},
            {"role": "assistant", "content": "4"},
            {"role": "user", "content": "and 3+3?"},
            {"role": "assistant", "content": "6"},
        ]
    },
]


@pytest.fixture(scope="module")
def tok(tiny_model_path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model_path)


def _ds(tmp_path, tok, rows=ROWS, **data):
    from fsdpcfg.train.sft.dataset import SFTDataset

    f = tmp_path / "d.jsonl"
    f.write_text("\n".join(json.dumps(r) for r in rows))
    from fsdpcfg.schema.sft import SftData

    # the SFT schema's data section (verl's defaults), then the test's values
    return SFTDataset(SftData(**{"train_files": str(f), "max_length": 1024, "truncation": "error", **data}), tok)


def test_loss_covers_exactly_the_assistant_replies(tmp_path, tok):
    ds = _ds(tmp_path, tok)
    for i, answers in ((0, ["It is 4."]), (1, ["4", "6"])):
        ex = ds[i]
        learnt = tok.decode(ex.input_ids[ex.loss_mask.bool()])
        assert learnt == "".join(f"{a}<|im_end|>\n" for a in answers), learnt
        assert "assistant" not in learnt and "user" not in learnt
    full = tok.apply_chat_template(ROWS[1]["messages"], tokenize=False)
    assert tok.decode(ds[1].input_ids) == full  # per-turn tokenisation reassembles the whole conversation


def test_truncation_and_row_errors(tmp_path, tok):
    n = len(_ds(tmp_path, tok)[0].input_ids)
    with pytest.raises(ConfigError) as e:
        _ds(tmp_path, tok, max_length=n - 3)[0]
    assert e.value.key == "data.max_length" and f"{n} tokens" in e.value.message
    right, left = (
        _ds(tmp_path, tok, max_length=5, truncation="right")[0],
        _ds(tmp_path, tok, max_length=5, truncation="left")[0],
    )
    full = _ds(tmp_path, tok)[0]
    assert torch.equal(right.input_ids, full.input_ids[:5]) and torch.equal(left.loss_mask, full.loss_mask[-5:])
    with pytest.raises(ConfigError, match="no 'conversation' column"):
        _ds(tmp_path, tok, messages_key="conversation")
    with pytest.raises(ConfigError, match="row 0"):
        _ds(tmp_path, tok, rows=[{"messages": [{"role": "user"}]}])[0]


def test_collate_and_loss_over_target_positions(tmp_path, tok):
    from fsdpcfg.train.sft.dataset import collate
    from fsdpcfg.train.sft.trainer import sft_micro_loss, target_positions

    ds = _ds(tmp_path, tok)
    mb = collate([ds[0], ds[1]], tok.pad_token_id)
    assert mb["input_ids"].shape == mb["loss_mask"].shape == (2, max(len(ds[0].input_ids), len(ds[1].input_ids)))
    assert int(mb["attention_mask"][0].sum()) == len(ds[0].input_ids)
    torch.manual_seed(0)
    logits = torch.randn(2, mb["input_ids"].shape[1], 50) * 3
    ids = mb["input_ids"] % 50
    full, count = sft_micro_loss(logits, ids, mb["loss_mask"])
    pos = target_positions(mb["loss_mask"])
    kept, count2 = sft_micro_loss(logits[:, pos], ids, mb["loss_mask"], pos)
    manual = sum(
        -torch.log_softmax(logits[b, t - 1], -1)[ids[b, t]]
        for b in range(2)
        for t in range(1, ids.shape[1])
        if mb["loss_mask"][b, t]
    )
    assert count == count2 == int(mb["loss_mask"][:, 1:].sum())
    assert torch.allclose(full, manual) and torch.allclose(kept, manual)
    assert len(pos) < ids.shape[1] - 1  # prompts and padding never reach the LM head


@pytest.mark.slow
def test_same_tokens_and_mask_as_verls_multiturn_dataset(tmp_path, tok):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("verl")
    from omegaconf import OmegaConf
    from verl.utils.dataset.multiturn_sft_dataset import MultiTurnSFTDataset

    from fsdpcfg import paths

    rows = [json.loads(x) for x in (paths.data_dir() / "datasets/gsm8k_sft/train.jsonl").read_text().splitlines()[:3]]
    rows += ROWS
    f = tmp_path / "d.parquet"
    pd.DataFrame(rows).to_parquet(f)
    theirs = MultiTurnSFTDataset(
        str(f),
        tok,
        OmegaConf.create(
            {"messages_key": "messages", "max_length": 1024, "truncation": "error", "pad_mode": "no_padding"}
        ),
    )
    ours = _ds(tmp_path, tok, rows=rows)
    for i in range(len(rows)):
        assert theirs[i]["input_ids"].tolist() == ours[i].input_ids.tolist()
        assert theirs[i]["loss_mask"].tolist() == ours[i].loss_mask.tolist()


def test_templates_that_require_alternating_roles(tmp_path, tiny_model):
    """Mistral's template raises on two user turns in a row; the system prompt is then found from
    [user, assistant, user] - [user, assistant]. Found by `fsdpcfg doctor --matrix` (stage 3 on Mistral)."""
    from jinja2.exceptions import TemplateError
    from transformers import AutoTokenizer

    from fsdpcfg.train.sft.dataset import system_and_generation_prompt

    mistral = AutoTokenizer.from_pretrained(tiny_model("tiny-mistral"))
    with pytest.raises(TemplateError):  # the template's raise_exception: roles must alternate
        mistral.apply_chat_template([{"role": "user", "content": ""}] * 2, tokenize=True)
    system, gen = system_and_generation_prompt(mistral)
    assert system == [mistral.bos_token_id] and gen == []
    ds = _ds(tmp_path, mistral, rows=ROWS[:1])
    ex = ds[0]
    learnt = mistral.decode(ex.input_ids[ex.loss_mask.bool()])
    assert learnt.strip().startswith("It is 4.") and "[INST]" not in learnt and "2+2" not in learnt
    full = mistral.apply_chat_template(ROWS[0]["messages"], tokenize=True)
    assert ex.input_ids.tolist() == list(full.input_ids if hasattr(full, "input_ids") else full)


def test_shipped_parquet_gives_the_jsonl_tokens(tok):
    """The SFT data group names train.parquet (verl's SFT dataset reads parquet only); the native dataset reads
    it through fsdpcfg.datafiles to the same tokens as the JSON Lines copy."""
    from fsdpcfg import paths
    from fsdpcfg.schema.sft import SftData
    from fsdpcfg.train.sft.dataset import SFTDataset

    folder = paths.data_dir() / "datasets" / "gsm8k_sft"
    base = {"max_length": 1024, "truncation": "error", "train_max_samples": 3}
    a = SFTDataset(SftData(**base, train_files=str(folder / "train.parquet")), tok)
    b = SFTDataset(SftData(**base, train_files=str(folder / "train.jsonl")), tok)
    assert len(a) == len(b) == 3
    for i in range(3):
        assert a[i].input_ids.tolist() == b[i].input_ids.tolist() and a[i].loss_mask.tolist() == b[i].loss_mask.tolist()
