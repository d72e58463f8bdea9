"""``python -m fsdpcfg``: the same entry point as the ``fsdpcfg`` command (see :mod:`fsdpcfg.cli.main`)."""

from fsdpcfg.cli.main import main

if __name__ == "__main__":
    raise SystemExit(main())
