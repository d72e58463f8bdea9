"""torchrun entry of one SFT rank: ``python -m torch.distributed.run ... -m fsdpcfg.train.sft CONFIG.yaml``.

A :class:`fsdpcfg.errors.ConfigError` is reported without a traceback: rank 0 writes it to
``$FSDPCFG_ERROR_FILE`` when the launcher set one (the launcher prints it and exits 1), else prints it.
"""

from __future__ import annotations

import os
import sys


def _main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m fsdpcfg.train.sft CONFIG.yaml (started by torchrun; use `python -m fsdpcfg`)",
              file=sys.stderr)
        return 2
    from fsdpcfg.errors import ConfigError

    try:
        from fsdpcfg.train.sft.trainer import main

        return main(argv[0])
    except ConfigError as e:
        if os.environ.get("RANK", "0") == "0":
            target = os.environ.get("FSDPCFG_ERROR_FILE")
            if target:
                with open(target, "w") as fh:
                    fh.write(str(e) + "\n")
            else:
                print(f"fsdpcfg: error: {e}", file=sys.stderr)
        return e.exit_code


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
