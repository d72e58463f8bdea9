"""torchrun worker of test_logprob_sync.py: compare actor (sharded) and rollout replica log-probs after the
first and the second weight synchronisation (an optimizer step in between), for each strategy of a
comma-separated list in turn (one process group, a fresh seed, actor and replica each). Writes a JSON report
(rank 0): ``{strategy: report}``.

    torchrun --nproc_per_node 2 tests/train/rollout/_logprob_worker.py MODEL_DIR fsdp2,fsdp OUT.json
"""

import json
import sys

import torch
import torch.distributed as dist


def main(model_dir: str, strategies: str, out: str) -> None:
    dist.init_process_group("gloo")
    reports = {strategy: one_strategy(model_dir, strategy) for strategy in strategies.split(",")}
    if dist.get_rank() == 0:
        with open(out, "w") as fh:
            json.dump(reports, fh)
    dist.barrier()
    dist.destroy_process_group()


def one_strategy(model_dir: str, strategy: str) -> dict:
    """The two synchronisations under ``strategy`` (``fsdp2`` or ``fsdp``); this rank's report."""
    from fsdpcfg.train.engine.forward import batched_log_probs, response_log_probs
    from fsdpcfg.train.engine.fsdp import Precision, bucketed, iter_full_params, shard_model
    from fsdpcfg.train.model import load_model, load_tokenizer
    from fsdpcfg.train.rollout.hf import GenerationSettings, HFRollout

    rank = dist.get_rank()
    torch.manual_seed(0)
    from fsdpcfg.schema.model import ModelSection

    mcfg = ModelSection(path=model_dir)
    tok = load_tokenizer(mcfg)
    actor = shard_model(
        load_model(mcfg, torch.float32),
        strategy,
        Precision(torch.float32, torch.float32, torch.float32),
        device=torch.device("cpu"),
    )
    opt = torch.optim.AdamW(actor.parameters(), lr=1e-2)
    rollout = HFRollout(
        load_model(mcfg, torch.float32, weights=False), torch.float32, [tok.eos_token_id], tok.pad_token_id
    )
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
    report = {"strategy": strategy, "syncs": []}
    before = None
    for sync in (1, 2):
        buckets = list(bucketed(iter_full_params(actor), 0.5))  # 0.5 MiB: several buckets
        loaded = rollout.update_weights(iter(buckets))
        o = rollout.generate(enc.input_ids, enc.attention_mask, gen, generator_seed=123 + rank)
        R = o.responses.shape[1]
        actor_lp = batched_log_probs(actor, o.input_ids, o.attention_mask, R, micro_batch=1)
        with torch.no_grad():
            replica_lp, _ = response_log_probs(rollout.model, o.input_ids, o.attention_mask, R)
        m = o.response_mask.bool()
        diff = (actor_lp - replica_lp)[m].abs().max()
        dist.all_reduce(diff, op=dist.ReduceOp.MAX)
        # how far the replica moved since the previous sync (on the same sequences): proves the sync changed it
        moved = None
        if before is not None:
            with torch.no_grad():
                old_lp, _ = response_log_probs(before, o.input_ids, o.attention_mask, R)
            moved = float((old_lp - replica_lp)[m].abs().max())
        before = _copy(rollout.model)
        report["syncs"].append(
            {
                "sync": sync,
                "max_abs_diff": float(diff),
                "buckets": len(buckets),
                "tensors": loaded,
                "replica_moved": moved,
                "dtype": str(next(rollout.model.parameters()).dtype),
            }
        )
        if sync == 1:  # one optimizer step on the actor: raise the log-prob of the sampled responses
            actor.train()
            lp, _ = response_log_probs(actor, o.input_ids, o.attention_mask, R)
            (-(lp * m).sum() / m.sum()).backward()
            opt.step()
            opt.zero_grad()
    return report


def _copy(model):
    import copy

    return copy.deepcopy(model)


if __name__ == "__main__":
    main(*sys.argv[1:4])
