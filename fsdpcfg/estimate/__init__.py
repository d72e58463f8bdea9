"""The numbers a config implies before anything runs (pure Python, no torch): the FSDP device mesh
(:mod:`.mesh`), parameter counts from ``config.json`` (:mod:`.param_count`) and the per-rank memory estimate
(:mod:`.memory`). Below the rules, which gate on them (FC301, FC450, FC707), and the plan, which reports them.
"""
