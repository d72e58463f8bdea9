"""torchrun entry of one rank: ``python -m torch.distributed.run ... -m fsdpcfg.train <run_dir>/config.yaml``.

A :class:`fsdpcfg.errors.ConfigError` is printed (rank 0 only) without a traceback and exits 1.
"""

from __future__ import annotations

import os
import sys


def _main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m fsdpcfg.train CONFIG.yaml (started by torchrun; use `python -m fsdpcfg`)",
              file=sys.stderr)
        return 2
    from fsdpcfg.errors import ConfigError

    try:
        from fsdpcfg.train.loop import main

        return main(argv[0])
    except ConfigError as e:
        if os.environ.get("RANK", "0") == "0":
            print(f"fsdpcfg: error: {e}", file=sys.stderr)
        return e.exit_code


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
