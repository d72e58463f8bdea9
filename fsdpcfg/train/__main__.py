"""torchrun entry of one rank: ``python -m torch.distributed.run ... -m fsdpcfg.train <run_dir>/config.yaml``.

A :class:`fsdpcfg.errors.ConfigError` is reported without a traceback (see :mod:`fsdpcfg.train.entry`).
"""

import sys

from fsdpcfg.train.entry import exit_rank, run_rank

if __name__ == "__main__":
    exit_rank(run_rank("fsdpcfg.train.loop", sys.argv[1:], "python -m fsdpcfg.train"))
