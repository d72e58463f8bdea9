"""The native trainer's torch-free declarations: what it runs of verl's keys (:mod:`.support`) and the checkpoint
folder layout it writes and resumes from (:mod:`.ckpt_layout`).

``fsdpcfg check``, the launcher and the config tree read these without importing torch; :mod:`fsdpcfg.train`
implements them (as :mod:`fsdpcfg.patches` declares the patch sets that :mod:`fsdpcfg.train.patches` applies).
"""
