#!/usr/bin/env bash
# SFT on an engine a hydra.searchpath package adds to verl's `engine` group (engine=mlite, the megatron-lite style),
# launched through the package's own module in front of verl's trainer. fsdpcfg's SFT tree has no such engine option:
# it is named as not checked (FC108, was a false FC100 "no option mlite"), with its own keys (engine.pp, engine.ep,
# engine.cp) and its optimizer config (optim=megatron); 32 ranks over pp 2 x cp 4 leave the backend's data-parallel
# split, which the check does not judge (a batch of 16 over 32 ranks was a false FC250).
# expect: no errors
# expect-info: FC108
set -euo pipefail
NNODES=${NNODES:-4}
PP=2
CP=4

ENGINE=(
    hydra.searchpath=[pkg://verl_mlite.config]
    engine=mlite
    engine.pp=${PP}
    engine.ep=1
    engine.cp=${CP}
    engine.param_offload=False
    +engine.impl_cfg.recompute=[selective]
)

torchrun --nnodes=${NNODES} --nproc_per_node=8 \
    -m verl_mlite.launch verl.trainer.sft_trainer \
    data.train_files=/data/sft/train.parquet \
    data.train_batch_size=16 \
    data.micro_batch_size_per_gpu=1 \
    data.max_length=4096 \
    model.path=Qwen/Qwen2.5-7B-Instruct \
    optim=megatron \
    optim.lr=2e-5 \
    optim.lr_warmup_steps=0 \
    +optim.override_optimizer_config.offload_fraction=0.5 \
    "${ENGINE[@]}" \
    trainer.total_epochs=1 \
    "$@"
