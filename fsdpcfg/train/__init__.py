"""Stage 5, train: the native FSDP/FSDP2 GRPO loop run by torchrun (``python -m fsdpcfg.train CONFIG``).

Modules, one job each: :mod:`.model` (load the HF model/tokenizer as configured), :mod:`.engine` (sharding,
optimizer, log-prob forward), :mod:`.rollout` (the ``hf`` replica), :mod:`.algorithm` (GRPO advantages and
losses), :mod:`.data` (prompts and sampler), :mod:`.reward`, :mod:`.actor` (the update), :mod:`.checkpoint`,
:mod:`.metrics` and :mod:`.loop` (the steps). Importing this package imports nothing heavy.
"""
