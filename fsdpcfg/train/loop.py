"""The native GRPO loop, one process per rank under torchrun: ``python -m fsdpcfg.train <run_dir>/config.yaml``.

Each training step: synchronise the rollout replica with the actor's weights; draw ``data.train_batch_size``
prompts; each rank generates for its share of the ``prompts x rollout.n`` sequences; score them; compute group
advantages over the whole batch; recompute old (and reference) log-probs; update the actor; log; checkpoint.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import torch
import torch.distributed as dist

from fsdpcfg.native import backends, support
from fsdpcfg.plan import make_plan, total_training_steps
from fsdpcfg.train import patches
from fsdpcfg.train.actor import ActorBatch, update_actor
from fsdpcfg.train.algorithm.grpo import ActorLossConfig, grpo_advantages, token_level_rewards
from fsdpcfg.train.algorithm.losses import kl_penalty
from fsdpcfg.train.base import TrainerBase, train_rank
from fsdpcfg.train.data import PromptDataset, StatefulSampler
from fsdpcfg.train.engine.forward import batched_log_probs, batched_log_probs_and_entropy
from fsdpcfg.train.engine.fsdp import bucketed, iter_full_params, shard_from_config
from fsdpcfg.train.engine.optim import build_optimizer, build_scheduler
from fsdpcfg.train.metrics import masked_aggregate, memory_metrics, timed
from fsdpcfg.train.model import load_model, load_tokenizer, to_dtype
from fsdpcfg.train.reward import make_reward_fn, score_responses
from fsdpcfg.train.rollout.hf import GenerationSettings, HFRollout
from fsdpcfg.train.validate import Validator, is_validation_step

if TYPE_CHECKING:
    from peft import PeftModel
    from transformers import PreTrainedModel

    from fsdpcfg.schema.root import RunConfig


def collective_device() -> torch.device:
    """Where a tensor given to a collective must live: this rank's CUDA device under NCCL (NCCL has no CPU
    tensors: "No backend type associated with device type cpu"), the CPU under gloo."""
    if dist.get_backend() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def all_gather_cat(t: torch.Tensor) -> torch.Tensor:
    """Concatenate equal-shaped tensors of all ranks along dim 0, in rank order."""
    parts = [torch.empty_like(t) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, t.contiguous())
    return torch.cat(parts, dim=0)


def _all_mean(metrics: dict[str, float], device: torch.device) -> dict[str, float]:
    keys = sorted(metrics)
    t = torch.tensor([metrics[k] for k in keys], dtype=torch.float64, device=device)
    dist.all_reduce(t)
    t /= dist.get_world_size()
    return dict(zip(keys, t.tolist(), strict=True))


class Trainer(TrainerBase):
    """Builds every part of a GRPO run from the resolved config and runs its steps (the set-up, resume, loop and
    checkpoint it shares with the SFT trainer: :class:`fsdpcfg.train.base.TrainerBase`).

    Args:
        cfg: the validated config (:func:`fsdpcfg.schema.parse_run_config`; verl key names plus ``fsdpcfg``); what
            it does not say (world size, per-rank batches, the reference model) is its :class:`fsdpcfg.plan.Plan`,
            computed once by :meth:`start`.

    Raises:
        ConfigError: any setting the native loop cannot honour (named key, value and fix).
    """

    cfg: RunConfig
    rollout: HFRollout  # the plain replica, or LoraHFRollout (a subclass) under LoRA

    def __init__(self, cfg: RunConfig) -> None:
        self.cfg = cfg
        self.start(make_plan(cfg))
        arr = cfg.actor_rollout_ref
        self.actor_cfg, self.rollout_cfg, self.model_cfg = arr.actor, arr.rollout, arr.model
        # rules FC803/FC801 (run by make_plan above) admit only the GRPO advantages and the hf replica the loop has
        assert cfg.algorithm.adv_estimator in support.NATIVE_VALUES["algorithm.adv_estimator"]
        assert self.rollout_cfg.name in support.NATIVE_VALUES["actor_rollout_ref.rollout.name"]
        torch.manual_seed(self.actor_cfg.fsdp_config.seed)
        self.tokenizer = load_tokenizer(self.model_cfg)
        self.dataset = PromptDataset(cfg.data, self.tokenizer)
        seed = cfg.data.seed if cfg.data.seed is not None else 1
        self.sampler = StatefulSampler(len(self.dataset), self.plan.train_batch_prompts, cfg.data.shuffle, seed)
        self.total_steps = total_training_steps(cfg, len(self.dataset))
        self._build_models()
        self.loss_cfg = ActorLossConfig.from_actor_cfg(self.actor_cfg)
        self.gen = GenerationSettings.from_rollout_cfg(self.rollout_cfg)
        self.reward_fn = make_reward_fn(cfg.reward)
        self.test_freq = cfg.trainer.test_freq
        wants_val = cfg.trainer.val_before_train or self.test_freq > 0
        self.validator = Validator(self) if wants_val else None
        #: ``(step, metrics)`` of each validation pass, in order (the closing summary reads first and last)
        self.val_history: list[tuple[int, dict[str, float]]] = []
        self.resume(self.actor)

    def _build_models(self) -> None:
        fsdp_cfg = self.actor_cfg.fsdp_config
        master = to_dtype(fsdp_cfg.model_dtype)
        # a resume reads model.path, then the sharded state of the checkpoint over it (ckpt.load_checkpoint)
        base = load_model(self.model_cfg, master, device=self.device)
        self.patches = patches.apply_patches(base, patches.selected(self.cfg), device=self.plan.device)
        from fsdpcfg.train.lora import apply_lora
        from fsdpcfg.train.lora.rollout import lora_settings_for_run

        self.lora = lora_settings_for_run(self.cfg)  # None unless model.lora_rank > 0
        model: PreTrainedModel | PeftModel = base if self.lora is None else apply_lora(base, self.lora)
        self.hf_config = model.config
        self.generation_config = getattr(model, "generation_config", None)
        self.actor = shard_from_config(
            model, self.plan.strategy, fsdp_cfg, "actor_rollout_ref.actor", device=self.device
        )
        optim_cfg = self.actor_cfg.optim
        self.optimizer = build_optimizer(self.actor.parameters(), optim_cfg)
        sched_steps = optim_cfg.total_training_steps
        self.scheduler = build_scheduler(
            self.optimizer, optim_cfg, self.total_steps if sched_steps is None or sched_steps <= 0 else sched_steps
        )
        self.ref = None
        if self.plan.use_reference:
            ref = self.cfg.actor_rollout_ref.ref
            ref_cfg = ref.fsdp_config
            ref_model = load_model(self.model_cfg, to_dtype(ref_cfg.model_dtype), device=self.device)
            for p in ref_model.parameters():
                p.requires_grad_(False)
            patches.apply_patches(ref_model, self.patches, device=self.plan.device)
            self.ref = shard_from_config(
                ref_model,
                ref.strategy,
                ref_cfg,
                "actor_rollout_ref.ref",
                device=self.device,
            )
            self.ref.eval()
        # the registered backend of rollout.name builds it (fsdpcfg/native/backends.py; FC801 admits native ones)
        backend = backends.ROLLOUTS.get(self.rollout_cfg.name)
        assert backend is not None and backend.build is not None
        self.rollout, self._lora_sync = backend.load()(self)

    def _eos_ids(self) -> list[int]:
        ids = []
        gen_cfg = getattr(self.hf_config, "eos_token_id", None)
        for src in (self.tokenizer.eos_token_id, gen_cfg):
            for i in src if isinstance(src, (list, tuple)) else [src]:
                if i is not None and i not in ids:
                    ids.append(int(i))
        return ids

    def sync_weights(self) -> int:
        """Stream the actor's full weights into the rollout replica (collective); return the tensor count."""
        if self.lora is not None:
            from fsdpcfg.train.lora.rollout import LoraHFRollout

            assert isinstance(self.rollout, LoraHFRollout)  # _build_models makes the PEFT replica under LoRA
            sent = self._lora_sync(self.rollout)
            return sent.base_tensors + sent.adapter_tensors
        mb = float(self.cfg.fsdpcfg.update_weights_bucket_megabytes)
        return self.rollout.update_weights(bucketed(iter_full_params(self.actor), mb))

    def validate(self, step: int) -> dict[str, float]:
        """Run the validation pass on the actor's current weights (collective; ``fsdpcfg.train.validate``)."""
        assert self.validator is not None
        self.sync_weights()  # the replica gets the weights the step just trained, as verl's rollout does
        metrics = self.validator.run()
        self.val_history.append((step, metrics))
        return metrics

    def _my_rows(self) -> list[int]:
        """This rank's contiguous share of the ``B*n`` sequences of a step (``b = B*n/W`` rows)."""
        per = self.plan.sequences_per_rank
        return list(range(self.rank * per, (self.rank + 1) * per))

    def step(self, step: int) -> dict[str, float]:
        """Run training step ``step`` (1-based) and return its global metrics (identical on all ranks).

        Shapes: ``B`` prompts (``data.train_batch_size``), ``n`` samples each (``rollout.n``), ``W`` ranks; each
        rank holds ``b = B*n/W`` sequences of ``P`` prompt and ``R`` response tokens (``R`` =
        ``rollout.response_length``). Phases and their ``timing_s/*`` names are verl's.
        """
        timing: dict[str, float] = {}
        with timed("step", timing):
            # 1. weights: stream the actor's full weights (HF names, in buckets) into the rollout replica
            with timed("update_weights", timing):
                self.sync_weights()
            # 2. rollout: B prompts, each n times in a row; this rank generates its b rows -> [b, P + R]
            with timed("gen", timing):
                prompts = self.dataset.batch(self.sampler.next_batch()).repeat_interleave(self.plan.n)  # [B*n, P]
                mine = prompts.select(self._my_rows())  # [b, P]
                seed = self.rollout_cfg.seed + step * self.world + self.rank
                out = self.rollout.generate(mine.input_ids, mine.attention_mask, self.gen, generator_seed=seed)
            ids, amask = out.input_ids.to(self.device), out.attention_mask.to(self.device)  # [b, P + R]
            rmask = out.response_mask.float()  # [b, R], 1 up to and including the end token
            R = out.responses.shape[1]
            # 3. reward: the reward function scores each decoded response -> [b]
            with timed("reward", timing):
                scores, _ = score_responses(
                    self.reward_fn,
                    self.tokenizer,
                    out.responses,
                    out.response_mask,
                    mine.rows,
                    self.cfg.data.reward_fn_key,
                    where=lambda i: self.dataset.where(mine.uids[i]),
                )
            # 4. old log-probs (and their entropy) under the actor that generated -> [b, R] each
            with timed("old_log_prob", timing):
                old_lp, entropy = batched_log_probs_and_entropy(
                    self.actor, ids, amask, R, self.plan.log_prob_micro_batch_per_rank, temperature=self.gen.temperature
                )
                old_lp, entropy = old_lp.cpu(), entropy.cpu()
            # 5. reference log-probs, for the KL loss (actor.use_kl_loss) or penalty (use_kl_in_reward) -> [b, R]
            ref_lp = None
            if self.ref is not None:
                with timed("ref", timing):
                    ref_lp = batched_log_probs(
                        self.ref,
                        ids,
                        amask,
                        R,
                        self.plan.ref_log_prob_micro_batch_per_rank,
                        temperature=self.gen.temperature,
                    ).cpu()
            # 6. advantages: token rewards minus the KL penalty, gathered over ranks and normalised within
            #    each prompt's group of n samples (GRPO) -> this rank's [b, R]
            with timed("adv", timing):
                adv, batch = self._advantages(prompts.uids, scores, rmask, old_lp, ref_lp)
            _dump_step(
                step,
                self.rank,
                ids=ids.cpu(),
                attention_mask=amask.cpu(),
                response_mask=rmask,
                old_log_probs=old_lp,
                ref_log_prob=ref_lp,
                **{f"batch_{k}": v for k, v in batch.items()},
            )
            # 7. actor update: ppo_epochs x mini-batches, each a gradient accumulation over micro-batches
            with timed("update_actor", timing):
                lr = self.scheduler.get_last_lr()[0]
                actor_batch = ActorBatch(
                    ids,
                    amask,
                    rmask.to(self.device),
                    old_lp.to(self.device),
                    adv.to(self.device),
                    None if ref_lp is None else ref_lp.to(self.device),
                )
                actor_metrics = update_actor(
                    self.actor,
                    self.optimizer,
                    actor_batch,
                    self.plan,
                    self.loss_cfg,
                    self.actor_cfg.optim.clip_grad,
                    temperature=self.gen.temperature,
                )
                self.scheduler.step()
        prompt_tokens = all_gather_cat(mine.attention_mask.sum(-1).float().to(self.device)).cpu()  # [B*n]
        return self._step_metrics(step, timing, batch, prompt_tokens, entropy, rmask, actor_metrics, lr)

    def _advantages(
        self,
        uids: list[int],
        scores: torch.Tensor,
        rmask: torch.Tensor,
        old_lp: torch.Tensor,
        ref_lp: torch.Tensor | None,
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """GRPO advantages of this rank's rows ``[b, R]`` and the step's global per-sequence tensors ``[B*n]``
        (``scores``, ``rewards`` after the KL penalty, response ``lengths``, ``advantages``; ``kl_penalty`` when
        ``algorithm.use_kl_in_reward``)."""
        tok_rewards = token_level_rewards(scores, rmask)  # the score on each response's last token: [b, R]
        out: dict[str, torch.Tensor] = {}
        algo = self.cfg.algorithm
        if algo.use_kl_in_reward:
            beta = algo.kl_ctrl.kl_coef
            assert ref_lp is not None  # use_kl_in_reward builds the reference model (plan.use_reference)
            kld = kl_penalty(old_lp, ref_lp, algo.kl_penalty) * rmask  # [b, R]
            tok_rewards = tok_rewards - beta * kld
            out["kl_penalty"] = all_gather_cat((kld.sum(-1) / rmask.sum(-1).clamp_min(1)).to(self.device)).cpu()
        out["rewards"] = all_gather_cat(tok_rewards.sum(-1).to(self.device)).cpu()  # [B*n]
        out["scores"] = all_gather_cat(scores.to(self.device)).cpu()
        out["lengths"] = all_gather_cat(rmask.sum(-1).to(self.device)).cpu()
        adv_all = grpo_advantages(
            out["rewards"].unsqueeze(-1),
            torch.ones(len(out["rewards"]), 1),
            uids,
            norm_adv_by_std=algo.norm_adv_by_std_in_grpo,
        )  # [B*n, 1]
        out["advantages"] = adv_all[:, 0]
        per = self.plan.sequences_per_rank
        return adv_all[self.rank * per : (self.rank + 1) * per] * rmask, out

    def _step_metrics(
        self,
        step: int,
        timing: dict[str, float],
        batch: dict[str, torch.Tensor],
        prompt_tokens: torch.Tensor,
        entropy: torch.Tensor,
        rmask: torch.Tensor,
        actor_metrics: dict[str, float],
        lr: float,
    ) -> dict[str, float]:
        """Every metric of a step, in verl's names (``verl/trainer/ppo/metric_utils.py`` ``compute_data_metrics``,
        ``compute_timing_metrics``, ``compute_throughout_metrics``; ``ray_trainer.py`` for ``actor/entropy``)."""
        metrics = _all_mean(actor_metrics, self.device)
        ent = masked_aggregate(entropy, rmask, self.loss_cfg.loss_agg_mode, self.device)
        metrics.setdefault("actor/entropy", ent)  # the old-log-prob pass's, unless the loss computed its own
        timing = _all_mean(timing, self.device)
        lengths, seq_rewards, scores = batch["lengths"], batch["rewards"], batch["scores"]
        response_tokens, total_tokens = float(lengths.sum()), float(lengths.sum() + prompt_tokens.sum())
        R = rmask.shape[1]
        if "kl_penalty" in batch:
            metrics["actor/reward_kl_penalty"] = float(batch["kl_penalty"].mean())
            metrics["actor/reward_kl_penalty_coeff"] = float(self.cfg.algorithm.kl_ctrl.kl_coef)
        metrics.update({f"timing_s/{k}": v for k, v in timing.items()})
        for name, tokens in (
            ("gen", response_tokens),
            ("ref", total_tokens),
            ("adv", total_tokens),
            ("update_actor", total_tokens),
        ):
            if name in timing and tokens > 0:
                metrics[f"timing_per_token_ms/{name}"] = timing[name] * 1000 / tokens
        metrics.update(memory_metrics(self.device))
        metrics.update(
            {
                "critic/score/mean": float(scores.mean()),
                "critic/score/max": float(scores.max()),
                "critic/score/min": float(scores.min()),
                "critic/rewards/mean": float(seq_rewards.mean()),
                "critic/rewards/max": float(seq_rewards.max()),
                "critic/rewards/min": float(seq_rewards.min()),
                "critic/advantages/mean": float(batch["advantages"].mean()),
                "critic/advantages/max": float(batch["advantages"].max()),
                "critic/advantages/min": float(batch["advantages"].min()),
                "response_length/mean": float(lengths.mean()),
                "response_length/max": float(lengths.max()),
                "response_length/min": float(lengths.min()),
                "response_length/clip_ratio": float((lengths >= R).float().mean()),
                "prompt_length/mean": float(prompt_tokens.mean()),
                "prompt_length/max": float(prompt_tokens.max()),
                "prompt_length/min": float(prompt_tokens.min()),
                "actor/lr": float(lr),
                "perf/total_num_tokens": total_tokens,
                "perf/time_per_step": timing["step"],
                "perf/throughput": total_tokens / timing["step"] / self.world,
                "training/global_step": float(step),
                "training/epoch": float(self.sampler.epoch),
            }
        )
        return metrics

    def checkpoint_parts(self):
        """The sharded actor, its Hugging Face weights (merged ``W + s B A`` for a LoRA actor) and, for LoRA, the
        ``(LoraConfig, adapter weights)`` of the checkpoint's ``lora_adapter/``."""
        if self.lora is None:
            return self.actor, iter_full_params(self.actor), None
        from fsdpcfg.train.lora import iter_adapter_params, iter_merged_params

        adapter = (
            self.lora.lora_config(base_model=self.model_cfg.path),
            iter_adapter_params(self.actor, self.lora.adapter_name),
        )
        return self.actor, iter_merged_params(self.actor, self.lora.adapter_name), adapter

    def cfg_model_path(self) -> str:
        return self.model_cfg.path

    def validate_before_steps(self) -> dict[str, float] | None:
        """The validation pass at step 0 (``trainer.val_before_train``)."""
        if self.validator is not None and self.cfg.trainer.val_before_train:
            return self.validate(0)
        return None

    def after_step(self, step: int, metrics: dict[str, float]) -> None:
        """A validation pass every ``trainer.test_freq`` steps and after the last one."""
        if self.validator is not None and is_validation_step(step, self.total_steps, self.test_freq):
            metrics.update(self.validate(step))


def _dump_step(step: int, rank: int, **tensors: torch.Tensor | None) -> None:
    """Test hook: with ``$FSDPCFG_DUMP_STEP1`` set to a folder, write this rank's step-1 tensors there
    (``rank<r>.pt``); with ``$FSDPCFG_DUMP_STEPS`` set, every step's (``step<s>/rank<r>.pt``), so two runs (e.g.
    patches=none vs remove_padding) can be compared, or a step's rewards recomputed. The tensors: this rank's
    ``ids``, ``attention_mask``, ``response_mask``, ``old_log_probs``, ``ref_log_prob`` (with a reference model)
    ``[b, ...]``, and the step's global ``batch_*`` ``[B*n]`` (``Trainer._advantages``)."""
    kept = {k: v for k, v in tensors.items() if v is not None}
    first, every = os.environ.get("FSDPCFG_DUMP_STEP1"), os.environ.get("FSDPCFG_DUMP_STEPS")
    for folder in ([Path(first)] if first and step == 1 else []) + ([Path(every) / f"step{step}"] if every else []):
        folder.mkdir(parents=True, exist_ok=True)
        torch.save(kept, folder / f"rank{rank}.pt")


def main(config_path: str) -> int:
    """Entry point of one GRPO rank: read the resolved config, train (with the start-up audit), tear down."""
    return train_rank(config_path, Trainer, audit=True)
