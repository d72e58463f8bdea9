#!/usr/bin/env python
"""Write docs/verl-coverage.md from the installed verl's checks and fsdpcfg/data/verl_coverage.yaml
(fsdpcfg.catalog.verl_coverage).

    python scripts/gen_verl_coverage.py            # rewrite the page
    python scripts/gen_verl_coverage.py --check    # exit 1 when the page is stale or a check is not mapped
    python scripts/gen_verl_coverage.py --missing  # print YAML stubs for the unmapped checks
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fsdpcfg.catalog import verl_coverage  # noqa: E402


def main(argv: list[str]) -> int:
    """Write, check or list the missing mapping entries; return the exit code."""
    rows = verl_coverage.join()
    unmapped = [r for r in rows if r.value is None]
    if "--missing" in argv:
        print(verl_coverage.stubs(rows))
        return 0
    if "--check" in argv:
        if unmapped:
            print(f"{len(unmapped)} verl checks are not in {verl_coverage.MAPPING}: run with --missing")
            return 1
        if verl_coverage.stale():
            print(f"{verl_coverage.PAGE} is stale: run `python scripts/gen_verl_coverage.py` and commit it")
            return 1
        print(f"{verl_coverage.PAGE}: up to date")
        return 0
    print(f"wrote {verl_coverage.write()}")
    if unmapped:
        print(f"{len(unmapped)} checks are not mapped yet: run with --missing")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
