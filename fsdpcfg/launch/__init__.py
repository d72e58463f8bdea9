"""Stage 4, launch: ``native`` (:mod:`fsdpcfg.launch.native`, torchrun on the built-in loop) and ``verl``
(:mod:`fsdpcfg.launch.verl`, verl's own entry point on Ray)."""
