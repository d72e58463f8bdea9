#!/bin/bash
# arrays appended under conditions on environment variables
# oracle-env: USE_KL=0 OFFLOAD=True
ARGS=(algorithm.adv_estimator=grpo)
if [ "${USE_KL:-0}" = 1 ]; then
    ARGS+=(actor_rollout_ref.actor.use_kl_loss=True actor_rollout_ref.actor.kl_loss_coef=0.001)
else
    ARGS+=(algorithm.use_kl_in_reward=False)
fi
[[ "$OFFLOAD" == True ]] && ARGS+=("actor_rollout_ref.actor.fsdp_config.param_offload=$OFFLOAD")
python3 -m verl.trainer.main_ppo "${ARGS[@]}" data.train_batch_size=64
