"""``fsdpcfg preview +recipe=NAME [OVERRIDES...]``: the first rows of the training data as the model sees them.

    fsdpcfg preview +recipe=qwen_grpo                 # 3 RL prompts: chat template applied, token counts, reward
    fsdpcfg preview +recipe=qwen_grpo --rows 10 --split val
    fsdpcfg preview +recipe=qwen_sft --format json    # SFT conversations: which tokens carry the loss

For an RL config each row shows the prompt after the chat template (the exact text the rollout gets), its
token count against ``data.max_prompt_length`` and what ``data.truncation`` / ``data.filter_overlong_prompts``
will do with it, the ``data_source`` and ground truth the reward reads, and the score the configured reward
gives a correct answer (the data source's reference response, :data:`fsdpcfg.rewards.REFERENCE_RESPONSES`)
and an empty one: a reward that cannot give 1.0 to a correct answer is found here, not after a day of
training. For an SFT config each row shows the conversation after the chat template with the loss-carrying
(assistant target) spans marked, and its token counts against ``data.max_length``.

It reads the data and the tokenizer through the same code as the training loop
(:class:`fsdpcfg.train.data.PromptDataset`, :class:`fsdpcfg.train.sft.dataset.SFTDataset`,
:func:`fsdpcfg.rewards.load_reward_fn`), so what it shows is what training gets. Like axolotl's
``preprocess --debug``. It imports transformers (a few seconds); ``fsdpcfg check`` stays free of it.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from fsdpcfg.errors import ConfigError, UsageError

PASS_THROUGH = True
#: marks around the tokens that carry the SFT loss in the human output.
LOSS_OPEN, LOSS_CLOSE = "\u27e6", "\u27e7"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Register ``preview``'s arguments."""
    parser.add_argument("overrides", nargs="*", metavar="OVERRIDE", help="+recipe=NAME and Hydra overrides")
    parser.add_argument("--rows", type=int, default=3, help="how many rows to show (default 3)")
    parser.add_argument(
        "--split", choices=("train", "val"), default="train", help="data.train_files or data.val_files (default train)"
    )
    parser.add_argument("--format", choices=("human", "json"), default="human", help="output format")


def parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """Parse options and overrides in any order (overrides may start with ``+`` or ``~``)."""
    args = parser.parse_intermixed_args(argv)
    if args.rows < 1:
        raise UsageError(f"--rows must be at least 1, got {args.rows}", fix="e.g. --rows 5")
    return args


def _composed_config(overrides: list[str]) -> tuple[Any, dict[str, Any]]:
    """Compose and resolve ``overrides``; print the check's errors (preview still shows the data when it can)."""
    from fsdpcfg.check import check_config
    from fsdpcfg.check.key_advice import KEY_ADVICE
    from fsdpcfg.compose import compose
    from fsdpcfg.runinfo import run_config

    composed = compose(overrides, keys=KEY_ADVICE)
    errors = [f for f in check_config(composed) if f.severity == "error"]
    for f in errors:
        print(f"note: the run would be refused: [{f.rule}] {', '.join(f.keys)}: {f.message}")
    return composed, run_config(composed)


def _tokenizer(cfg: dict[str, Any], kind: str):
    from fsdpcfg import runkind
    from fsdpcfg.launch.preflight import ensure_assets
    from fsdpcfg.train.model import load_tokenizer

    ensure_assets(cfg, echo=lambda s: None)
    record = runkind.get(kind)
    section = record.load("schema")  # the root model; its field types lead to the model section's class
    for part in record.model_key.split("."):
        section = section.model_fields[part].annotation
    # a preview also shows configs the run would refuse: the section is built without validation
    return load_tokenizer(section.model_construct(**runkind.model_of(cfg)))


def _split_cfg(data: dict[str, Any], split: str, rows: int) -> dict[str, Any]:
    out = dict(data)
    if split == "val":
        if not data.get("val_files"):
            raise UsageError("data.val_files is not set", key="data.val_files", fix="use --split train")
        out["train_files"] = data["val_files"]
    out["train_max_samples"] = rows
    return out


def rl_rows(cfg: dict[str, Any], split: str, rows: int) -> list[dict[str, Any]]:
    """The first ``rows`` RL prompts as dicts: ``index``, ``data_source``, ``text`` (after the chat template),
    ``tokens`` (before truncation), ``max_prompt_length``, ``action`` (``keep``, ``truncate-left|right|middle``,
    ``filtered`` or ``error``), ``ground_truth``, ``reference_response``, ``score_correct``, ``score_empty``.

    Raises:
        ConfigError: unreadable data, a missing prompt key or a malformed row, a tokenizer that cannot be loaded,
            a chat template that fails on a row, a reward file that does not import, a reward function that
            raises or returns no finite number: the messages the run gives.
    """
    from fsdpcfg.rewards import load_reward_fn, reference_response, reward_label, score
    from fsdpcfg.train.data import PromptDataset

    data = _split_cfg(cfg["data"], split, rows)
    tok = _tokenizer(cfg, "ppo")
    from fsdpcfg.schema.data import DataSection

    ds = PromptDataset(DataSection.model_construct(**{**data, "filter_overlong_prompts": False}), tok)
    reward = load_reward_fn(cfg["reward"])
    label = reward_label(cfg["reward"])
    max_len = int(data["max_prompt_length"])
    out = []
    for i in range(len(ds)):
        row = ds.rows[i]
        ids = ds.prompt_ids(i)
        if len(ids) <= max_len:
            action = "keep"
        elif data["filter_overlong_prompts"]:
            action = "filtered"
        elif data["truncation"] == "error":
            action = "error"
        else:
            action = f"truncate-{data['truncation']}"
        source = row.get("data_source", "")
        truth = (row.get("reward_model") or {}).get("ground_truth")
        ref = reference_response(source, truth)
        extra = row.get("extra_info")
        where = ds.where(i)
        out.append(
            {
                "index": i,
                "data_source": source,
                "text": tok.decode(ids),
                "tokens": len(ids),
                "max_prompt_length": max_len,
                "action": action,
                "ground_truth": truth,
                "reference_response": ref,
                "score_correct": None
                if ref is None
                else score(reward, source, ref, truth, extra, label=label, where=f"{where} (a correct answer)"),
                "score_empty": score(reward, source, "", truth, extra, label=label, where=f"{where} (an empty answer)"),
            }
        )
    return out


def sft_rows(cfg: dict[str, Any], split: str, rows: int) -> list[dict[str, Any]]:
    """The first ``rows`` SFT conversations as dicts: ``index``, ``text`` (after the chat template, the loss-
    carrying spans between :data:`LOSS_OPEN` and :data:`LOSS_CLOSE`), ``tokens``, ``loss_tokens``, ``max_length``.

    Raises:
        ConfigError: unreadable data, a malformed row, a conversation longer than allowed with ``truncation=error``.
    """
    from fsdpcfg.train.sft.dataset import SFTDataset

    data = _split_cfg(cfg["data"], split, rows)
    tok = _tokenizer(cfg, "sft")
    from fsdpcfg.schema.sft import SftData

    ds = SFTDataset(SftData.model_construct(**data), tok)
    out = []
    for i in range(len(ds)):
        ex = ds[i]
        ids, mask = ex.input_ids.tolist(), ex.loss_mask.tolist()
        parts, start = [], 0
        for j in range(1, len(ids) + 1):
            if j == len(ids) or mask[j] != mask[start]:
                text = tok.decode(ids[start:j])
                parts.append(f"{LOSS_OPEN}{text}{LOSS_CLOSE}" if mask[start] else text)
                start = j
        out.append(
            {
                "index": i,
                "text": "".join(parts),
                "tokens": len(ids),
                "loss_tokens": int(sum(mask)),
                "max_length": int(data["max_length"]),
            }
        )
    return out


#: what each RL ``action`` means, for the human output.
ACTIONS = {
    "keep": "kept as is",
    "filtered": "dropped before training (data.filter_overlong_prompts=true)",
    "error": "the run stops on this prompt: raise data.max_prompt_length, set data.truncation=left|right|middle "
    "or data.filter_overlong_prompts=true",
    "truncate-left": "the first tokens are cut (data.truncation=left)",
    "truncate-right": "the last tokens are cut (data.truncation=right)",
    "truncate-middle": "tokens in the middle are cut (data.truncation=middle)",
}


def _human_rl(r: dict[str, Any]) -> str:
    score = "n/a (no reference response for this data_source)" if r["score_correct"] is None else r["score_correct"]
    return "\n".join(
        [
            f"── row {r['index']}  data_source={r['data_source']}  tokens={r['tokens']}/{r['max_prompt_length']}  "
            f"-> {ACTIONS[r['action']]}",
            r["text"],
            f"ground truth: {r['ground_truth']!r}   reference response: {r['reference_response']!r}",
            f"reward: correct answer {score}, empty response {r['score_empty']}",
        ]
    )


def _human_sft(r: dict[str, Any]) -> str:
    return "\n".join(
        [
            f"── row {r['index']}  tokens={r['tokens']}/{r['max_length']}  loss tokens={r['loss_tokens']} "
            f"(between {LOSS_OPEN} {LOSS_CLOSE})",
            r["text"],
        ]
    )


def run(args: argparse.Namespace) -> int:
    """Print the preview; return 0, or 1 when a correct answer would not get the full reward."""
    composed, cfg = _composed_config(args.overrides)
    try:
        rows = (sft_rows if composed.kind == "sft" else rl_rows)(cfg, args.split, args.rows)
    except KeyError as e:  # a key the data path needs was deleted (~data.prompt_key): the check reported it
        raise ConfigError(
            f"the config lacks {e.args[0]!r}, which the data path reads",
            fix="run `fsdpcfg check` with the same overrides",
        ) from None
    if args.format == "json":
        print(json.dumps({"kind": composed.kind, "split": args.split, "rows": rows}, indent=2, default=str))
    else:
        print("\n\n".join((_human_sft if composed.kind == "sft" else _human_rl)(r) for r in rows))
    low = [r["index"] for r in rows if r.get("score_correct") is not None and r["score_correct"] < 1.0]
    if low:
        print(
            f"warning: a correct answer scores below 1.0 on rows {low}: check the reward function and the "
            "ground truth format"
        )
        return 1
    return 0
