"""Worker of test_lora_sync.py: a LoRA actor (FSDP2, FSDP1 on 2 ranks under torchrun, or a plain PeftModel in
one process) synchronised into a PEFT rollout replica; compares actor and replica log-probs after the first sync
(base + adapter), after a second (adapter only, after an optimizer step) and after a third in layered mode, and
the merged Hugging Face weights against the actor. Each strategy of a comma-separated list runs in turn (one
process group; a fresh seed, actor and replica each). Writes a JSON report (rank 0): ``{strategy: report}``.

    torchrun --nproc_per_node 2 tests/train/lora/_lora_worker.py MODEL_DIR fsdp2,fsdp ADAPTER OUT.json
    python tests/train/lora/_lora_worker.py MODEL_DIR none ADAPTER OUT.json
"""

import json
import sys

import torch
import torch.distributed as dist


def _max(x: torch.Tensor) -> float:
    x = x.detach().clone()
    if dist.is_initialized():
        dist.all_reduce(x, op=dist.ReduceOp.MAX)
    return float(x)


def main(model_dir: str, strategies: str, adapter: str, out: str) -> dict:
    names = strategies.split(",")
    if names != ["none"]:  # "none": a plain PeftModel in this one process, no process group
        dist.init_process_group("gloo")
    reports = {strategy: one_strategy(model_dir, strategy, adapter) for strategy in names}
    if not dist.is_initialized() or dist.get_rank() == 0:
        with open(out, "w") as fh:
            json.dump(reports, fh)
    if dist.is_initialized():
        dist.barrier()
        dist.destroy_process_group()
    return reports


def one_strategy(model_dir: str, strategy: str, adapter: str) -> dict:
    """The three synchronisations and the merged weights under ``strategy``; this rank's report."""
    from fsdpcfg.train.engine.forward import batched_log_probs, response_log_probs
    from fsdpcfg.train.engine.fsdp import Precision, shard_model
    from fsdpcfg.train.lora import LoraSettings, apply_lora, iter_merged_params
    from fsdpcfg.train.lora.rollout import LoraHFRollout, LoraWeightSync
    from fsdpcfg.train.model import load_model, load_tokenizer
    from fsdpcfg.train.rollout.hf import GenerationSettings

    rank = dist.get_rank() if dist.is_initialized() else 0
    from fsdpcfg.schema.model import ModelSection

    mcfg = ModelSection(path=model_dir)
    tok = load_tokenizer(mcfg)
    settings = LoraSettings.from_model_cfg(
        ModelSection(path=model_dir, lora_rank=4, lora_alpha=8, target_modules="all-linear"), adapter_name=adapter
    )
    torch.manual_seed(0)
    model = apply_lora(load_model(mcfg, torch.float32), settings)
    with torch.no_grad():  # a non-zero adapter from the start: the first sync must carry it
        for n, p in model.named_parameters():
            if "lora_B" in n:
                p.normal_(0, 0.05)
    fp32 = Precision(torch.float32, torch.float32, torch.float32)
    actor = model if strategy == "none" else shard_model(model, strategy, fp32, device=torch.device("cpu"))
    opt = torch.optim.AdamW([p for p in actor.parameters() if p.requires_grad], lr=2e-2)
    rollout = LoraHFRollout(
        load_model(mcfg, torch.float32, weights=False),
        settings.lora_config(),
        adapter,
        torch.float32,
        [tok.eos_token_id],
        tok.pad_token_id,
    )
    sync = LoraWeightSync(actor, settings, bucket_megabytes=0.25)
    texts = [["What is 2+3?", "Name a colour."], ["Count to three.", "Hi"]][rank]
    enc = tok(
        [
            tok.apply_chat_template([{"role": "user", "content": t}], add_generation_prompt=True, tokenize=False)
            for t in texts
        ],
        return_tensors="pt",
        padding=True,
        padding_side="left",
    )
    gen = GenerationSettings(
        n=1, response_length=8, temperature=1.0, top_p=1.0, top_k=-1, do_sample=True, ignore_eos=False
    )
    report = {"strategy": strategy, "adapter": adapter, "syncs": []}
    previous = None
    for i, layered in enumerate((False, False, True)):
        sync.settings.layered_summon = layered
        sent = sync(rollout)
        o = rollout.generate(enc.input_ids, enc.attention_mask, gen, generator_seed=7 + rank)
        R = o.responses.shape[1]
        m = o.response_mask.bool()
        actor_lp = batched_log_probs(actor, o.input_ids, o.attention_mask, R, micro_batch=1)
        with torch.no_grad():
            replica_lp, _ = response_log_probs(rollout.model, o.input_ids, o.attention_mask, R)
            moved = None
            if previous is not None:
                old_lp, _ = response_log_probs(previous, o.input_ids, o.attention_mask, R)
                moved = _max((old_lp - replica_lp)[m].abs().max())
        import copy

        previous = copy.deepcopy(rollout.model)
        report["syncs"].append(
            {
                "sync": i + 1,
                "layered": layered,
                "max_abs_diff": _max((actor_lp - replica_lp)[m].abs().max()),
                "base_tensors": sent.base_tensors,
                "adapter_tensors": sent.adapter_tensors,
                "buckets": sent.buckets,
                "base_names": sent.base_names,
                "adapter_names": sent.adapter_names,
                "replica_moved": moved,
            }
        )
        actor.train()  # one optimizer step on the adapter between syncs
        lp, _ = response_log_probs(actor, o.input_ids, o.attention_mask, R)
        (-(lp * m).sum() / m.sum()).backward()
        opt.step()
        opt.zero_grad()
        actor.eval()
    # the merged weights (what a Hugging Face checkpoint holds) score like the actor
    merged = dict(iter_merged_params(actor, adapter))
    plain = load_model(mcfg, torch.float32, weights=False)
    missing, unexpected = plain.load_state_dict(merged, strict=False)
    plain.tie_weights()
    plain.eval()
    actor_lp = batched_log_probs(actor, o.input_ids, o.attention_mask, R, micro_batch=1)
    with torch.no_grad():
        plain_lp, _ = response_log_probs(plain, o.input_ids, o.attention_mask, R)
    report["merged"] = {
        "max_abs_diff": _max((actor_lp - plain_lp)[m].abs().max()),
        "missing": [k for k in missing if not k.endswith("lm_head.weight")],
        "unexpected": list(unexpected),
    }
    return report


if __name__ == "__main__":
    main(*sys.argv[1:5])
