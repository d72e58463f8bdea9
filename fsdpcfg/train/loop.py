"""The native GRPO loop, one process per rank under torchrun: ``python -m fsdpcfg.train <run_dir>/config.yaml``.

Each training step: synchronise the rollout replica with the actor's weights; draw ``data.train_batch_size``
prompts; each rank generates for its share of the ``prompts x rollout.n`` sequences; score them; compute group
advantages over the whole batch; recompute old (and reference) log-probs; update the actor; log; checkpoint.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import yaml

from fsdpcfg.plan import make_plan, total_training_steps
from fsdpcfg.train import checkpoint as ckpt
from fsdpcfg.train import patches
from fsdpcfg.train.actor import ActorBatch, update_actor
from fsdpcfg.train.algorithm.grpo import ActorLossConfig, grpo_advantages, token_level_rewards
from fsdpcfg.train.algorithm.losses import kl_penalty
from fsdpcfg.train.data import PromptDataset, StatefulSampler
from fsdpcfg.train.engine.fsdp import bucketed, iter_full_params, shard_from_config
from fsdpcfg.train.engine.forward import batched_log_probs
from fsdpcfg.train.engine.optim import build_optimizer, build_scheduler
from fsdpcfg.train.metrics import MetricsLogger
from fsdpcfg.train.model import load_model, load_tokenizer, to_dtype
from fsdpcfg.train.reward import make_reward_fn, score_responses
from fsdpcfg.train.rollout.hf import GenerationSettings, HFRollout
from fsdpcfg.errors import ConfigError


def init_distributed(device: str, backend: str) -> torch.device:
    """Join the torchrun process group; return this rank's device (``cpu`` or ``cuda:<local_rank>``)."""
    if device == "cuda":
        local = int(os.environ.get("LOCAL_RANK", "0"))
        torch.cuda.set_device(local)
        dev = torch.device("cuda", local)
    else:
        dev = torch.device("cpu")
    if not dist.is_initialized():
        dist.init_process_group(backend=backend)
    return dev


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
    return dict(zip(keys, t.tolist()))


class Trainer:
    """Builds every part of a run from the resolved config and runs its steps.

    Args:
        cfg: the resolved config (plain dicts, verl key names plus ``fsdpcfg``).

    Raises:
        ConfigError: any setting the native loop cannot honour (named key, value and fix).
    """

    def __init__(self, cfg: dict[str, Any]) -> None:
        self.cfg = cfg
        self.plan = make_plan(cfg)
        self.device = init_distributed(self.plan.device, self.plan.backend)
        self.rank, self.world = dist.get_rank(), dist.get_world_size()
        if self.world != self.plan.world_size:
            raise ConfigError(f"torchrun started {self.world} ranks, the config plans {self.plan.world_size}",
                              key="trainer.n_gpus_per_node", fix="launch with python -m fsdpcfg")
        arr = cfg["actor_rollout_ref"]
        self.actor_cfg, self.rollout_cfg, self.model_cfg = arr["actor"], arr["rollout"], arr["model"]
        if self.cfg["algorithm"]["adv_estimator"] != "grpo":
            raise ConfigError(f"adv_estimator {cfg['algorithm']['adv_estimator']!r} is not implemented by the "
                              "native launcher; allowed: grpo", key="algorithm.adv_estimator",
                              fix="set algorithm=grpo, or launcher=verl")
        if self.rollout_cfg["name"] != "hf":
            raise ConfigError(f"rollout {self.rollout_cfg['name']!r} runs only under launcher=verl; the native "
                              "launcher has: hf", key="actor_rollout_ref.rollout.name", fix="set rollout=hf")
        torch.manual_seed(int(self.actor_cfg["fsdp_config"]["seed"]))
        self.tokenizer = load_tokenizer(self.model_cfg)
        self.dataset = PromptDataset(cfg["data"], self.tokenizer)
        seed = cfg["data"]["seed"] if cfg["data"]["seed"] is not None else 1
        self.sampler = StatefulSampler(len(self.dataset), self.plan.train_batch_prompts, bool(cfg["data"]["shuffle"]),
                                       int(seed))
        self.total_steps = total_training_steps(cfg, len(self.dataset))
        self.resume_from = ckpt.find_resume_folder(cfg["trainer"])
        self._build_models()
        self.loss_cfg = ActorLossConfig.from_actor_cfg(self.actor_cfg)
        self.gen = GenerationSettings.from_rollout_cfg(self.rollout_cfg)
        self.reward_fn = make_reward_fn(cfg["reward"])
        self.start_step = 0
        if self.resume_from is not None:
            state = ckpt.load_trainer_state(self.resume_from, self.optimizer, self.scheduler)
            self.sampler.load_state_dict(state["sampler"])
            self.start_step = int(state["step"])

    def _build_models(self) -> None:
        fsdp_cfg = self.actor_cfg["fsdp_config"]
        master = to_dtype(fsdp_cfg["model_dtype"], "actor_rollout_ref.actor.fsdp_config.model_dtype")
        actor_src = dict(self.model_cfg, path=str(self.resume_from)) if self.resume_from else self.model_cfg
        model = load_model(actor_src, master).to(self.device)
        self.patches = patches.apply_patches(model, patches.selected(self.cfg), device=self.plan.device)
        from fsdpcfg.train.lora import apply_lora
        from fsdpcfg.train.lora.rollout import build_lora_rollout, lora_settings_for_run

        self.lora = lora_settings_for_run(self.cfg, self.resume_from)  # None unless model.lora_rank > 0
        if self.lora is not None:
            model = apply_lora(model, self.lora)
        self.hf_config = model.config
        self.generation_config = getattr(model, "generation_config", None)
        self.actor = shard_from_config(model, self.plan.strategy, fsdp_cfg, "actor_rollout_ref.actor", device=self.device)
        optim_cfg = self.actor_cfg["optim"]
        self.optimizer = build_optimizer(self.actor.parameters(), optim_cfg)
        sched_steps = optim_cfg["total_training_steps"]
        self.scheduler = build_scheduler(self.optimizer, optim_cfg,
                                         self.total_steps if sched_steps is None or sched_steps <= 0 else sched_steps)
        self.ref = None
        if self.plan.use_reference:
            ref_cfg = self.cfg["actor_rollout_ref"]["ref"]["fsdp_config"]
            ref_model = load_model(self.model_cfg, to_dtype(ref_cfg["model_dtype"])).to(self.device)
            for p in ref_model.parameters():
                p.requires_grad_(False)
            patches.apply_patches(ref_model, self.patches, device=self.plan.device)
            self.ref = shard_from_config(ref_model, self.cfg["actor_rollout_ref"]["ref"]["strategy"], ref_cfg,
                                         "actor_rollout_ref.ref", device=self.device)
            self.ref.eval()
        rdtype = to_dtype(self.rollout_cfg["dtype"], "actor_rollout_ref.rollout.dtype")
        eos = self._eos_ids()
        if self.lora is not None:  # a PEFT replica: the base once, then the adapter (fsdpcfg/train/lora)
            self.rollout, self._lora_sync = build_lora_rollout(
                self.actor, self.model_cfg, self.lora, rdtype, eos, self.tokenizer.pad_token_id, self.device,
                float(self.cfg["fsdpcfg"]["update_weights_bucket_megabytes"]))
            return
        replica = load_model(self.model_cfg, rdtype, weights=False).to(self.device)
        self.rollout = HFRollout(replica, rdtype, eos, self.tokenizer.pad_token_id)

    def _eos_ids(self) -> list[int]:
        ids = []
        gen_cfg = getattr(self.hf_config, "eos_token_id", None)
        for src in (self.tokenizer.eos_token_id, gen_cfg):
            for i in (src if isinstance(src, (list, tuple)) else [src]):
                if i is not None and i not in ids:
                    ids.append(int(i))
        return ids

    def sync_weights(self) -> int:
        """Stream the actor's full weights into the rollout replica (collective); return the tensor count."""
        if self.lora is not None:
            sent = self._lora_sync(self.rollout)
            return sent.base_tensors + sent.adapter_tensors
        mb = float(self.cfg["fsdpcfg"]["update_weights_bucket_megabytes"])
        return self.rollout.update_weights(bucketed(iter_full_params(self.actor), mb))

    def step(self, step: int) -> dict[str, float]:
        """Run training step ``step`` (1-based) and return its global metrics (identical on all ranks)."""
        timing: dict[str, float] = {}
        t_step = t = time.perf_counter()
        self.sync_weights()
        timing["timing_s/update_weights"] = time.perf_counter() - t
        prompts = self.dataset.batch(self.sampler.next_batch()).repeat_interleave(self.plan.n)
        per = self.plan.sequences_per_rank
        mine = prompts.select(list(range(self.rank * per, (self.rank + 1) * per)))
        t = time.perf_counter()
        seed = int(self.rollout_cfg["seed"]) + step * self.world + self.rank
        out = self.rollout.generate(mine.input_ids, mine.attention_mask, self.gen, generator_seed=seed)
        timing["timing_s/gen"] = time.perf_counter() - t
        scores, _ = score_responses(self.reward_fn, self.tokenizer, out.responses, out.response_mask, mine.rows,
                                    self.cfg["data"]["reward_fn_key"])
        ids, amask = out.input_ids.to(self.device), out.attention_mask.to(self.device)
        rmask = out.response_mask.float()
        R = out.responses.shape[1]
        t = time.perf_counter()
        temp = self.gen.temperature
        old_lp = batched_log_probs(self.actor, ids, amask, R, self.plan.log_prob_micro_batch_per_rank,
                                   temperature=temp).cpu()
        timing["timing_s/old_log_prob"] = time.perf_counter() - t
        _dump_first_step(step, self.rank, ids=ids.cpu(), attention_mask=amask.cpu(), response_mask=rmask,
                         old_log_probs=old_lp)
        ref_lp = None
        if self.ref is not None:
            t = time.perf_counter()
            ref_lp = batched_log_probs(self.ref, ids, amask, R, self.plan.ref_log_prob_micro_batch_per_rank,
                                       temperature=temp).cpu()
            timing["timing_s/ref"] = time.perf_counter() - t
        tok_rewards = token_level_rewards(scores, rmask)
        metrics: dict[str, float] = {}
        if self.cfg["algorithm"]["use_kl_in_reward"]:
            beta = float(self.cfg["algorithm"]["kl_ctrl"]["kl_coef"])
            kld = kl_penalty(old_lp, ref_lp, self.cfg["algorithm"]["kl_penalty"]) * rmask
            tok_rewards = tok_rewards - beta * kld
            metrics["actor/reward_kl_penalty"] = float((kld.sum(-1) / rmask.sum(-1).clamp_min(1)).mean())
        seq_rewards = all_gather_cat(tok_rewards.sum(-1).to(self.device)).cpu()
        all_scores = all_gather_cat(scores.to(self.device)).cpu()
        lengths = all_gather_cat(rmask.sum(-1).to(self.device)).cpu()
        prompt_tokens = all_gather_cat(mine.attention_mask.sum(-1).float().to(self.device)).cpu()
        adv_all = grpo_advantages(seq_rewards.unsqueeze(-1), torch.ones(len(seq_rewards), 1), prompts.uids,
                                  norm_adv_by_std=bool(self.cfg["algorithm"]["norm_adv_by_std_in_grpo"]))
        adv = adv_all[self.rank * per:(self.rank + 1) * per] * rmask
        t = time.perf_counter()
        batch = ActorBatch(ids, amask, rmask.to(self.device), old_lp.to(self.device), adv.to(self.device),
                           None if ref_lp is None else ref_lp.to(self.device))
        lr = self.scheduler.get_last_lr()[0]
        actor_metrics = update_actor(self.actor, self.optimizer, batch, self.plan, self.loss_cfg,
                                     float(self.actor_cfg["optim"]["clip_grad"]), temperature=temp)
        self.scheduler.step()
        timing["timing_s/update_actor"] = time.perf_counter() - t
        metrics.update(_all_mean(actor_metrics, self.device))
        timing = _all_mean(timing, self.device)
        step_time = time.perf_counter() - t_step
        step_time = _all_mean({"t": step_time}, self.device)["t"]
        total_tokens = float(lengths.sum() + prompt_tokens.sum())
        metrics.update(timing)
        metrics.update({
            "critic/score/mean": float(all_scores.mean()), "critic/score/max": float(all_scores.max()),
            "critic/score/min": float(all_scores.min()),
            "critic/rewards/mean": float(seq_rewards.mean()), "critic/rewards/max": float(seq_rewards.max()),
            "critic/rewards/min": float(seq_rewards.min()),
            "critic/advantages/mean": float(adv_all[:, 0].mean()),
            "response_length/mean": float(lengths.mean()), "response_length/max": float(lengths.max()),
            "response_length/min": float(lengths.min()),
            "response_length/clip_ratio": float((lengths >= R).float().mean()),
            "prompt_length/mean": float(prompt_tokens.mean()),
            "actor/lr": float(lr), "timing_s/step": step_time, "perf/total_num_tokens": total_tokens,
            "perf/throughput": total_tokens / step_time / self.world,
            "training/global_step": float(step), "training/epoch": float(self.sampler.epoch),
        })
        return metrics

    def _checkpoint_weights(self):
        """The Hugging Face weights a checkpoint holds: merged (``W + s B A``) for a LoRA actor."""
        if self.lora is not None:
            from fsdpcfg.train.lora import iter_merged_params

            return iter_merged_params(self.actor, self.lora.adapter_name)
        return iter_full_params(self.actor)

    def save(self, step: int) -> None:
        """Write checkpoint ``global_step_<step>`` (collective)."""
        tr = self.cfg["trainer"]
        ckpt.save_checkpoint(tr["default_local_dir"], step, full_weights=self._checkpoint_weights(),
                             hf_config=self.hf_config, tokenizer=self.tokenizer, optimizer=self.optimizer,
                             generation_config=self.generation_config,
                             scheduler=self.scheduler, trainer_state={"step": step, "sampler": self.sampler.state_dict()},
                             keep=tr["max_actor_ckpt_to_keep"])

    def fit(self) -> None:
        """Run the remaining steps, logging each and checkpointing every ``trainer.save_freq`` and at the end."""
        fc = self.cfg["fsdpcfg"]
        logger = MetricsLogger(fc["run_dir"], self.total_steps, self.start_step, jsonl=bool(fc["metrics"]["jsonl"]),
                               tensorboard=bool(fc["metrics"]["tensorboard"]), enabled=self.rank == 0)
        save_freq = int(self.cfg["trainer"]["save_freq"])
        if self.resume_from is not None:
            logger.message(f"fsdpcfg: resumed from {self.resume_from} (step {self.start_step} of {self.total_steps})")
            if self.start_step >= self.total_steps:
                logger.message("fsdpcfg: trainer.total_training_steps already reached; nothing to do "
                               "(raise it, or trainer.resume_mode=disable to start over)")
        try:
            for step in range(self.start_step + 1, self.total_steps + 1):
                metrics = self.step(step)
                logger.log(step, metrics)
                if (save_freq > 0 and step % save_freq == 0) or step == self.total_steps:
                    self.save(step)
        finally:
            logger.close()


def _dump_first_step(step: int, rank: int, **tensors: torch.Tensor) -> None:
    """Test hook: with ``$FSDPCFG_DUMP_STEP1`` set to a folder, write this rank's step-1 sequences and old
    log-probs there (``rank<r>.pt``), so two runs (e.g. patches=none vs remove_padding) can be compared."""
    folder = os.environ.get("FSDPCFG_DUMP_STEP1")
    if folder and step == 1:
        Path(folder).mkdir(parents=True, exist_ok=True)
        torch.save(tensors, Path(folder) / f"rank{rank}.pt")


def save_resolved_config(cfg: dict, config_path: Path) -> None:
    """Write the resolved config to ``<fsdpcfg.run_dir>/config.yaml`` unless it was launched from that file."""
    run_dir = Path(cfg["fsdpcfg"]["run_dir"])
    run_dir.mkdir(parents=True, exist_ok=True)
    target = run_dir / "config.yaml"
    if not target.exists() or target.resolve() != config_path.resolve():
        ckpt.atomic_write_text(target, yaml.safe_dump(cfg, sort_keys=False))


def main(config_path: str) -> int:
    """Entry point of one rank: read the resolved config, train, tear down. Returns the exit code."""
    path = Path(config_path)
    cfg = yaml.safe_load(path.read_text())
    trainer = Trainer(cfg)
    try:
        if trainer.rank == 0:
            save_resolved_config(cfg, path)
        from fsdpcfg.runinfo import audit_startup

        audit_startup(trainer)  # <run_dir>/startup_audit.json; built != asked stops every rank here
        trainer.fit()
    finally:
        dist.barrier()
        dist.destroy_process_group()
    return 0
