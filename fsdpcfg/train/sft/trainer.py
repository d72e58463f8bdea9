"""The native SFT trainer, one process per rank under torchrun: ``python -m fsdpcfg.train.sft CONFIG.yaml``.

Each step draws ``data.train_batch_size`` conversations (the same shuffled order on every rank, seeded by
``trainer.seed``, the last partial batch of an epoch dropped); rank ``r`` takes its ``train_batch_size / world``
share and runs ``micro_batch_size_per_gpu`` conversations per forward/backward. The loss is verl's ``sft_loss``:
the negative log-likelihood of assistant target tokens, summed over the micro-batch, divided by the number of
target tokens in the whole global batch (all ranks) and multiplied by the world size, because FSDP averages
gradients over ranks: the accumulated gradient is that of the token mean over the global batch. Then gradient
clipping (``optim.clip_grad``), one AdamW step, the lr schedule. Checkpoints are Hugging Face folders written by
:mod:`fsdpcfg.train.checkpoint` (LoRA runs save the merged weights and the PEFT adapter folder).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import torch
import torch.distributed as dist

from fsdpcfg.plan.sft import make_sft_plan, total_sft_steps
from fsdpcfg.schema.sft import AFTER_EACH_EPOCH
from fsdpcfg.train.algorithm.losses import token_log_probs
from fsdpcfg.train.base import TrainerBase, train_rank
from fsdpcfg.train.data import StatefulSampler
from fsdpcfg.train.engine.fsdp import Precision, clip_grad_norm, gradient_sync, iter_full_params, shard_model
from fsdpcfg.train.engine.optim import build_optimizer, build_scheduler
from fsdpcfg.train.model import load_model, load_tokenizer, to_dtype
from fsdpcfg.train.sft.dataset import SFTDataset, collate

if TYPE_CHECKING:
    from peft import PeftModel
    from transformers import PreTrainedModel

    from fsdpcfg.schema.sft import SftRunConfig

BAR_KEYS = {"train/loss": "loss", "train/grad_norm": "gnorm", "timing_s/step": "s/step"}
LINE_KEYS = ("train/loss", "train/grad_norm", "train/lr", "train/target_tokens", "perf/throughput", "timing_s/step")


def _all_sum(values: list[float], device: torch.device) -> list[float]:
    t = torch.tensor(values, dtype=torch.float64, device=device)
    dist.all_reduce(t)
    return t.tolist()


def target_positions(loss_mask: torch.Tensor) -> torch.Tensor:
    """Sequence positions whose logits are needed: ``t`` such that some row has ``loss_mask[:, t + 1] = 1``
    (position ``t`` predicts token ``t + 1``): ``(batch, seq) -> (n,)`` long. Only these go through the LM head,
    so the vocabulary-sized logits cover the assistant tokens, not the prompts and padding."""
    return torch.nonzero(loss_mask[:, 1:].any(dim=0), as_tuple=False).flatten()


def sft_micro_loss(
    logits: torch.Tensor, input_ids: torch.Tensor, loss_mask: torch.Tensor, positions: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Summed negative log-likelihood of the masked target tokens of one micro-batch.

    Args:
        logits: ``(batch, n, vocab)``, the logits at sequence ``positions`` (``None``: all positions but the last,
            ``logits`` then ``(batch, seq, vocab)``); position ``t`` predicts token ``t + 1``.
        input_ids, loss_mask: ``(batch, seq)``; ``loss_mask[t] = 1`` marks token ``t`` as a target.
        positions: ``(n,)`` long, from :func:`target_positions`.

    Returns:
        ``(nll_sum, n_targets)``: scalar fp32 sum of ``-log p(x_t | x_<t)`` over targets, and their count.
    """
    if positions is None:
        logits, positions = logits[:, :-1, :], torch.arange(input_ids.shape[1] - 1, device=input_ids.device)
    logp = token_log_probs(logits.float(), input_ids[:, positions + 1])
    mask = loss_mask[:, positions + 1].to(logp.dtype)
    return -(logp * mask).sum(), mask.sum()


class SFTTrainer(TrainerBase):
    """Builds an SFT run from the typed config (verl's sft_trainer_engine keys) and runs its steps (the set-up,
    resume, loop and checkpoint it shares with the GRPO trainer: :class:`fsdpcfg.train.base.TrainerBase`).

    Args:
        cfg: the validated config (:func:`fsdpcfg.schema.parse_sft_config`); the batch arithmetic is its
            :class:`fsdpcfg.plan.sft.SftPlan`, computed once by :meth:`start`.

    What it runs of verl's SFT keys is declared in :mod:`fsdpcfg.native.support` (``SFT_FEATURES``; rules FC802,
    FC803 and FC114 refuse the rest before the run starts).
    """

    keep_key = "max_ckpt_to_keep"
    logger_options = {"desc": "SFT", "bar_keys": BAR_KEYS, "line_keys": LINE_KEYS}

    cfg: SftRunConfig

    def __init__(self, cfg: SftRunConfig) -> None:
        from fsdpcfg.train.lora import LoraSettings

        self.cfg = cfg
        self.start(make_sft_plan(cfg))
        self.model_cfg, self.engine_cfg = cfg.model, cfg.engine
        torch.manual_seed(self.engine_cfg.seed)
        self.tokenizer = load_tokenizer(self.model_cfg)
        self.dataset = SFTDataset(cfg.data, self.tokenizer)
        self.sampler = StatefulSampler(len(self.dataset), self.plan.train_batch_size, True, cfg.trainer.seed)
        self.total_steps = total_sft_steps(cfg, len(self.dataset))
        self.lora = LoraSettings.from_model_cfg(self.model_cfg, key_prefix="model")
        self._build()
        self.resume(self.model)

    def save_every(self) -> int:
        """Steps between checkpoints: ``trainer.save_freq``, or the steps of one epoch for ``after_each_epoch``
        (verl 0.9.1 ``verl/trainer/sft_trainer.py``: ``len(train_dataloader)``, whose batches drop the last
        partial one: rows // ``data.train_batch_size``)."""
        freq = self.cfg.trainer.save_freq
        if freq == AFTER_EACH_EPOCH:
            return len(self.dataset) // self.plan.train_batch_size
        assert isinstance(freq, int), freq
        return freq

    def _build(self) -> None:
        from fsdpcfg.train.lora import apply_lora

        eng = self.engine_cfg
        master = to_dtype(eng.model_dtype)
        # a resume reads model.path, then the sharded state of the checkpoint over it (ckpt.load_checkpoint)
        model: PreTrainedModel | PeftModel = load_model(self.model_cfg, master, device=self.device)
        if self.model_cfg.enable_gradient_checkpointing:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        self.hf_config = model.config
        self.generation_config = getattr(model, "generation_config", None)
        if self.lora is not None:
            if self.model_cfg.enable_gradient_checkpointing:
                model.enable_input_require_grads()
            model = apply_lora(model, self.lora)
        self.model = shard_model(
            model,
            self.plan.strategy,
            Precision.from_fsdp_config(eng),
            device=self.device,
            reshard_after_forward=eng.reshard_after_forward,
            wrap_classes=eng.wrap_policy.transformer_layer_cls_to_wrap,
            fsdp_size=eng.fsdp_size,
            offload_policy=eng.offload_policy,
            min_num_params=eng.wrap_policy.min_num_params,
            forward_prefetch=eng.forward_prefetch,
            wrap_key="engine.wrap_policy",
        )
        optim_cfg = self.cfg.optim
        self.optimizer = build_optimizer([p for p in self.model.parameters() if p.requires_grad], optim_cfg)
        sched = optim_cfg.total_training_steps
        self.scheduler = build_scheduler(
            self.optimizer, optim_cfg, self.total_steps if sched is None or sched <= 0 else sched
        )

    def step(self, step: int) -> dict[str, float]:
        """Run optimizer step ``step`` (1-based) on the next global batch; return global metrics (all ranks)."""
        t0 = time.perf_counter()
        per, micro = self.plan.batch_per_rank, self.plan.micro_batch_per_rank
        idx = self.sampler.next_batch()[self.rank * per : (self.rank + 1) * per]
        examples = [self.dataset[i] for i in idx]
        local_targets = float(sum(int(e.loss_mask[1:].sum()) for e in examples))
        local_tokens = float(sum(len(e.input_ids) for e in examples))
        global_targets, global_tokens = _all_sum([local_targets, local_tokens], self.device)
        denom = max(global_targets, 1.0)
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        nll = 0.0
        lr = self.scheduler.get_last_lr()[0]
        for j in range(self.plan.grad_accum):
            mb = {
                k: v.to(self.device)
                for k, v in collate(examples[j * micro : (j + 1) * micro], self.tokenizer.pad_token_id).items()
            }
            with gradient_sync(self.model, enabled=(j == self.plan.grad_accum - 1)):
                pos = target_positions(mb["loss_mask"])
                out = self.model(
                    input_ids=mb["input_ids"],
                    attention_mask=mb["attention_mask"],
                    position_ids=mb["position_ids"],
                    use_cache=False,
                    logits_to_keep=pos,
                )
                s, _ = sft_micro_loss(out.logits, mb["input_ids"], mb["loss_mask"], pos)
                (s / denom * self.world).backward()
            nll += float(s.detach())
        grad_norm = clip_grad_norm(self.model, self.cfg.optim.clip_grad)
        if torch.isfinite(torch.tensor(grad_norm)):
            self.optimizer.step()
        else:
            print(f"fsdpcfg: warning: gradient norm {grad_norm} is not finite; optimizer step skipped")
        self.optimizer.zero_grad(set_to_none=True)
        self.scheduler.step()
        (global_nll,) = _all_sum([nll], self.device)
        dt = _all_sum([time.perf_counter() - t0], self.device)[0] / self.world
        return {
            "train/loss": global_nll / denom,
            "train/grad_norm": grad_norm,
            "train/lr": float(lr),
            "train/target_tokens": global_targets,
            "perf/total_num_tokens": global_tokens,
            "perf/throughput": global_tokens / dt / self.world,
            "timing_s/step": dt,
            "training/global_step": float(step),
            "training/epoch": float(self.sampler.epoch),
        }

    def checkpoint_parts(self):
        """The sharded model, its Hugging Face weights (merged for LoRA) and the LoRA adapter (or ``None``)."""
        if self.lora is None:
            return self.model, iter_full_params(self.model), None
        from fsdpcfg.train.lora import iter_adapter_params, iter_merged_params

        adapter = (
            self.lora.lora_config(base_model=self.model_cfg.path),
            iter_adapter_params(self.model, self.lora.adapter_name),
        )
        return self.model, iter_merged_params(self.model, self.lora.adapter_name), adapter

    def cfg_model_path(self) -> str:
        return self.model_cfg.path


def main(config_path: str) -> int:
    """Entry point of one SFT rank: read the resolved SFT config, train, tear down. Returns the exit code."""
    return train_rank(config_path, SFTTrainer)
