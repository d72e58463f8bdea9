#!/usr/bin/env bash
# SFT on verl's Automodel engine (engine=automodel optim=automodel, as verl's examples/sft run it): its engine.*
# and optim.* keys (distributed_strategy, tp_size ..., init_lr_ratio) are verl's own; fsdpcfg checks the
# engine-independent SFT rules and says so (FC111).
# expect: no errors
# expect-info: FC111
# expect-info: FC124
set -x
nproc_per_node=${NPROC:-4}
torchrun --standalone --nnodes=1 --nproc_per_node=$nproc_per_node \
    -m verl.trainer.sft_trainer \
    data.train_files=/data/gsm8k_sft/train.parquet \
    data.train_batch_size=64 \
    data.use_dynamic_bsz=True \
    data.max_token_len_per_gpu=4096 \
    data.messages_key=messages \
    model.path=Qwen/Qwen2.5-0.5B-Instruct \
    model.use_remove_padding=True \
    engine=automodel \
    engine.distributed_strategy=fsdp2 \
    engine.tp_size=1 \
    engine.ep_size=1 \
    engine.use_torch_compile=False \
    optim=automodel \
    optim.lr=1e-5 \
    optim.init_lr_ratio=0 \
    optim.min_lr_ratio=0.1 \
    optim.lr_scheduler_type=cosine \
    trainer.total_epochs=2 \
    trainer.logger=console
