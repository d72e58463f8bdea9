"""Shared fixtures. Built assets go to the real ``$FSDPCFG_HOME`` so each is built once, not per test run.

- ``tiny_model_path``: ``Path`` of the built ``tiny-qwen2`` folder (built on first use, ~5 s).
- ``tiny_model``: a function ``name -> Path`` that ensures any asset of ``fsdpcfg.assets.SPECS``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def tiny_model() -> Callable[[str], Path]:
    """Return ``ensure(name) -> Path`` for the offline assets (``fsdpcfg.assets.ensure``)."""
    from fsdpcfg.assets import ensure

    return lambda name="tiny-qwen2": ensure(name, verbose=False)


@pytest.fixture(scope="session")
def tiny_model_path(tiny_model: Callable[[str], Path]) -> Path:
    """Return the folder of the built ``tiny-qwen2`` (config.json, model.safetensors, tokenizer files)."""
    return tiny_model("tiny-qwen2")


#: measured seconds per test of a second or more (setup + call + teardown), written by ``pytest --store-durations``
#: (a whole run)
DURATIONS = Path(__file__).with_name("durations.json")
#: the guess for a test the file does not name yet
_GUESS_S = {True: 30.0, False: 0.5}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--store-durations",
        action="store_true",
        help=f"write each test's measured seconds to {DURATIONS.name} (run the whole suite), the order the "
        "longest-first schedule uses",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Longest first, as measured (``tests/durations.json``; a test it does not name counts 30 s when slow, 0.5 s
    when not), dealt round-robin into one queue per xdist worker and the queues laid end to end.

    ``--dist worksteal`` (``scripts/test.sh``) gives worker *k* the *k*-th contiguous slice of the collection, then
    lets an idle worker take half of another's queue: so each worker starts on its share of the long items (the
    property shards, the training runs) and the quick ones fill the gaps, instead of one worker running the long
    items one after another at the end (longest-processing-time-first scheduling)."""
    import json

    known = json.loads(DURATIONS.read_text()) if DURATIONS.exists() else {}

    def seconds(item: pytest.Item) -> float:
        return float(known.get(item.nodeid, _GUESS_S[item.get_closest_marker("slow") is not None]))

    ordered = sorted(items, key=seconds, reverse=True)
    workers = int(getattr(config, "workerinput", {}).get("workercount", 1))
    items[:] = [item for k in range(workers) for item in ordered[k::workers]]


_measured: dict[str, float] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _measured[report.nodeid] = _measured.get(report.nodeid, 0.0) + report.duration


def pytest_sessionfinish(session: pytest.Session) -> None:
    if session.config.getoption("store_durations") and not hasattr(session.config, "workerinput") and _measured:
        import json

        # a test under a second counts as its guess anyway: the file names the ones the order depends on
        kept = {k: round(v, 2) for k, v in sorted(_measured.items()) if v >= 1.0}
        DURATIONS.write_text(json.dumps(kept, indent=0) + "\n")
