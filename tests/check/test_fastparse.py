"""The interpolation-parse memo that ``fsdpcfg.check`` installs resolves every shipped recipe to the same values
as OmegaConf's own parser, resolving twice gives the same values, and a bad interpolation still raises."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf
from omegaconf.errors import GrammarParseError

from fsdpcfg.check import _fastparse
from fsdpcfg.compose import available_options, compose


def _resolved_all() -> dict[str, object]:
    out: dict[str, object] = {}
    for r in available_options("recipe"):
        for extra in ([], ["launcher=verl", "trainer=gpu_8x"]):
            try:
                out[r + str(extra)] = OmegaConf.to_container(compose(["+recipe=" + r, *extra]).cfg, resolve=True)
            except Exception as e:  # a recipe refused the same way both times
                out[r + str(extra)] = f"{type(e).__name__}: {e}"
    return out


def test_same_values_with_and_without_the_memo():
    _fastparse.uninstall()
    try:
        plain = _resolved_all()
    finally:
        _fastparse.install()
    assert _resolved_all() == plain
    assert _resolved_all() == plain  # from kept parse trees
    assert any(isinstance(v, dict) for v in plain.values())


@pytest.mark.parametrize("bad", ["${a.b", "${foo:${}", "${ }", "${a.b}}x${"])
def test_a_bad_interpolation_raises_every_time(bad):
    assert _fastparse.install()
    for _ in range(2):
        with pytest.raises(GrammarParseError):
            OmegaConf.to_container(OmegaConf.create({"x": bad, "a": {"b": 1}}), resolve=True)
