"""The native SFT trainer (``fsdpcfg.kind: sft``, verl's ``sft_trainer_engine`` keys), run by torchrun as
``python -m fsdpcfg.train.sft <run_dir>/config.yaml``.

Modules: :mod:`.dataset` (chat ``messages`` -> tokens and an assistant-only loss mask, verl's
``MultiTurnSFTDataset`` semantics), :mod:`.trainer` (the steps, checkpoints, metrics). The batch arithmetic is
:mod:`fsdpcfg.plan.sft` (torch-free). Importing this package imports nothing heavy.
"""
