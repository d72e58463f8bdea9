"""verl's worker is kept for the later calls of the process that started it (:func:`fsdpcfg.check.verl_opinion.
run_worker`): the second call is answered by the same process, without importing verl again, and with the same
verdicts as the first."""

from __future__ import annotations

import importlib.util

import pytest

pytestmark = [
    pytest.mark.verl,
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("verl") is None, reason="verl 0.9.1 is not installed"),
]

JOBS = [
    {"kind": "ppo", "config_dir": "config", "config_name": "ppo_trainer", "overrides": ["trainer.nnode=2"]},
    {"kind": "ppo", "config_dir": "config", "config_name": "ppo_trainer", "overrides": ["+trainer.my_knob=1"]},
]


def _verdicts(answer: dict) -> list[dict]:
    return [{k: v for k, v in r.items() if k != "seconds"} for r in answer["results"]]


def test_a_later_call_reuses_the_worker_and_its_import_of_verl():
    from fsdpcfg.check import verl_opinion as V

    V.start_worker()
    _, worker = V._worker_for(None)
    first = V.run_worker(JOBS)
    second = V.run_worker(JOBS)
    assert V._worker_for(None)[1] is worker and worker.alive()
    assert second["import_seconds"] == 0.0
    assert _verdicts(second) == _verdicts(first)
    refused, ignored = _verdicts(second)
    assert refused["stage"] == "compose" and "trainer.nnode" in refused["error"]
    assert ignored["stage"] != "compose" and "trainer.my_knob" in ignored["ignored_keys"]
