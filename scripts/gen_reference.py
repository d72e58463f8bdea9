#!/usr/bin/env python
"""Write docs/reference.md from the config tree and the rule table (fsdpcfg.catalog.reference).

python scripts/gen_reference.py           # rewrite the page
python scripts/gen_reference.py --check   # exit 1 when the checked-in page is stale
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fsdpcfg.catalog import reference  # noqa: E402


def main(argv: list[str]) -> int:
    """Write or check the reference page; return the exit code."""
    if "--check" in argv:
        if reference.stale():
            print(f"{reference.REFERENCE} is stale: run `python scripts/gen_reference.py` and commit it")
            return 1
        print(f"{reference.REFERENCE}: up to date")
        return 0
    print(f"wrote {reference.write()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
