"""The model card (``README.md``) of a checkpoint's Hugging Face export, through ``huggingface_hub.ModelCard``:
YAML metadata (``base_model``, ``library_name``, ``tags``) the Hub reads, then what the weights are (base
model, the config they were trained with, step, date, fsdpcfg version, the last logged metrics)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

#: metrics named first in the card, when logged (verl's names; SFT's loss); the others follow, sorted
HEADLINE = ("critic/score/mean", "critic/rewards/mean", "train/loss", "actor/pg_loss", "actor/entropy")


def _fmt(v: Any) -> str:
    return f"{v:.6g}" if isinstance(v, float) else str(v)


def render_model_card(
    *,
    step: int,
    base_model: str,
    kind: str,
    version: str,
    date: str,
    project: str | None = None,
    experiment: str | None = None,
    run_dir: str | None = None,
    metrics: dict[str, float] | None = None,
) -> str:
    """The card's text: YAML front matter then Markdown. ``metrics`` are the last step's (``name -> value``);
    validation metrics (``val-core/...``, ``val-aux/...``) are listed with them."""
    from huggingface_hub import ModelCard, ModelCardData

    data = ModelCardData(
        base_model=base_model if not Path(base_model).is_absolute() else None,
        library_name="transformers",
        tags=["fsdpcfg", kind],
    )
    metrics = dict(metrics or {})
    order = [k for k in HEADLINE if k in metrics] + sorted(k for k in metrics if k not in HEADLINE)
    val = [k for k in order if k.startswith("val-")]
    rows = [k for k in order if not k.startswith("val-")]
    lines = [
        f"# {experiment or 'fsdpcfg run'} — step {step}",
        "",
        f"{kind.upper()} checkpoint written by fsdpcfg {version} on {date}.",
        "",
        f"- base model: `{base_model}`",
        f"- project / experiment: `{project}` / `{experiment}`",
        f"- step: {step}",
    ]
    if run_dir:
        lines.append(f"- trained with: `{Path(run_dir) / 'config.yaml'}` (the resolved config of the run)")
    lines += [
        "",
        (
            "Load: `AutoModelForCausalLM.from_pretrained(<this folder>)`; a LoRA run's adapter alone: "
            "`PeftModel.from_pretrained(base, <this folder>/lora_adapter)`."
        ),
        "",
    ]
    if rows or val:
        lines += ["## Last metrics", "", "| metric | value |", "|---|---|"]
        lines += [f"| `{k}` | {_fmt(metrics[k])} |" for k in val + rows]
    else:
        lines.append("No step was logged before this checkpoint.")
    return ModelCard(f"---\n{data.to_yaml()}\n---\n\n" + "\n".join(lines) + "\n").content


def write_model_card(path: str | Path, **facts: Any) -> None:
    """Write :func:`render_model_card` ``(**facts)`` to ``path`` (rank 0, inside the checkpoint's ``.tmp`` folder,
    so the folder's atomic rename covers it)."""
    Path(path).write_text(render_model_card(**facts))
