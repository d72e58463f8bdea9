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
    when not), in one queue per xdist worker, the queues laid end to end.

    ``--dist worksteal`` (``scripts/test.sh``) gives worker *k* the *k*-th contiguous slice of the collection (equal
    numbers of tests), then lets an idle worker take half of another's queue (its tail). So the queues hold equal
    numbers of tests: the long items are dealt first, each to the queue with the fewest seconds so far
    (longest-processing-time-first), and the quick ones fill every queue to its length, behind them. The tests of
    one ``@pytest.mark.xdist_group(NAME)`` (tests that share one costly module fixture, such as one training run)
    are dealt as one item, to one queue, one after another: split over two workers, each would build the fixture."""
    import json

    known = json.loads(DURATIONS.read_text()) if DURATIONS.exists() else {}

    def seconds(item: pytest.Item) -> float:
        return float(known.get(item.nodeid, _GUESS_S[item.get_closest_marker("slow") is not None]))

    units: dict[object, list[pytest.Item]] = {}
    for item in items:
        group = item.get_closest_marker("xdist_group")
        key = ("group", group.args[0] if group.args else group.kwargs.get("name")) if group else ("item", item.nodeid)
        units.setdefault(key, []).append(item)
    ordered = sorted(units.values(), key=lambda u: sum(seconds(i) for i in u), reverse=True)
    workers = max(1, int(getattr(config, "workerinput", {}).get("workercount", 1)))
    # xdist's first hand-out: worker i gets len(pending) // (workers - i) of what is left
    sizes, left = [], len(items)
    for i in range(workers):
        sizes.append(left // (workers - i))
        left -= sizes[-1]
    queues: list[list[pytest.Item]] = [[] for _ in range(workers)]
    load = [0.0] * workers
    for unit in ordered:
        room = [k for k in range(workers) if len(queues[k]) + len(unit) <= sizes[k]]
        k = min(room or range(workers), key=lambda w: (load[w], len(queues[w])))
        queues[k].extend(unit)
        load[k] += sum(seconds(i) for i in unit)
    # a unit that did not fit where it was dealt leaves one queue long: move quick single tests to even it out
    for k in range(workers):
        while len(queues[k]) > sizes[k]:
            spare = next(i for i in reversed(queues[k]) if i.get_closest_marker("xdist_group") is None)
            queues[k].remove(spare)
            short = min((w for w in range(workers) if len(queues[w]) < sizes[w]), key=lambda w: len(queues[w]))
            queues[short].append(spare)
    items[:] = [item for q in queues for item in q]


_measured: dict[str, float] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _measured[report.nodeid] = _measured.get(report.nodeid, 0.0) + report.duration


def pytest_sessionfinish(session: pytest.Session) -> None:
    if session.config.getoption("store_durations") and not hasattr(session.config, "workerinput") and _measured:
        import json

        # a test under a second counts as its guess anyway: the file names the ones the order depends on
        kept = {k: round(v, 2) for k, v in sorted(_measured.items()) if v >= 1.0}
        DURATIONS.write_text(json.dumps(kept, indent=0) + "\n")
