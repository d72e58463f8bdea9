#!/bin/bash
# device detection with `if python3 -c "import torch_npu"` (the stub fails: a GPU machine)
# oracle-variant: `python3 -c "import torch_npu" 2>/dev/null` false
if python3 -c "import torch_npu" 2>/dev/null; then
    ATTN=ascend
    GPUS_KEY=trainer.n_gpus_per_node=16
else
    ATTN=flash_attention_2
    GPUS_KEY=trainer.n_gpus_per_node=8
fi
python3 -m verl.trainer.main_ppo +actor_rollout_ref.model.override_config.attn_implementation=$ATTN $GPUS_KEY
