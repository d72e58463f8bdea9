#!/usr/bin/env bash
# GRPO on verl's veomni engine with Ulysses 4: each micro batch packs ppo_max_token_len_per_gpu x 4 tokens, so a
# budget of (prompt + response) / 4 per GPU holds one full sequence. The token-budget rule used to multiply by the
# FSDP Ulysses size (1 here) and reported FC207. The first argument sets a smaller Ulysses size for the same
# budget (tests/check/test_run_scripts.py gives `-- 2`: 2048 x 2 tokens cannot hold one 8192-token sequence).
# expect: no errors
# expect-info: FC111
set -euo pipefail
usp=4
if [ $# -gt 0 ]; then
    usp=$1
    shift
fi
prompt=$((1024 * 2))
response=$((1024 * 6))
budget=$(((prompt + response) / 4))

ENGINE=(
    model_engine=veomni
    actor_rollout_ref.actor.veomni.ulysses_parallel_size=$usp
    actor_rollout_ref.actor.use_dynamic_bsz=True
    actor_rollout_ref.actor.ppo_max_token_len_per_gpu=$budget
    actor_rollout_ref.rollout.log_prob_use_dynamic_bsz=True
    actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu=$budget
)

python3 -m verl.trainer.main_ppo \
    algorithm.adv_estimator=grpo \
    data.train_files=/data/dapo/train.parquet \
    data.train_batch_size=64 \
    data.max_prompt_length=$prompt \
    data.max_response_length=$response \
    actor_rollout_ref.model.path=Qwen/Qwen3-8B \
    actor_rollout_ref.actor.ppo_mini_batch_size=16 \
    actor_rollout_ref.rollout.name=vllm \
    actor_rollout_ref.rollout.n=4 \
    trainer.n_gpus_per_node=8 \
    "${ENGINE[@]}" "$@"
