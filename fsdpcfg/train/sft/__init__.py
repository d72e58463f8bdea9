"""The native SFT trainer (``fsdpcfg.kind: sft``, verl's ``sft_trainer_engine`` keys), run by torchrun as
``python -m fsdpcfg.train.sft <run_dir>/config.yaml``.

Modules: :mod:`.plan` (batch arithmetic, torch-free), :mod:`.dataset` (chat ``messages`` -> tokens and an
assistant-only loss mask, verl's ``MultiTurnSFTDataset`` semantics), :mod:`.trainer` (the steps, checkpoints,
metrics). Importing this package imports nothing heavy.
"""
