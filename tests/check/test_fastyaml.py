"""The libyaml loader that ``fsdpcfg.check`` installs composes every shipped config to the same tree as
OmegaConf's own pure-Python loader, and keeps its duplicate-key error and number/date resolution."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml

SCRIPT = r"""
import json, sys
if sys.argv[1] == "c":
    from fsdpcfg.check import _fastyaml
    assert _fastyaml.install()
from omegaconf import OmegaConf
from fsdpcfg.compose import compose
from fsdpcfg.compose import available_options
out = {}
for r in available_options("recipe"):
    for extra in ([], ["launcher=verl", "rollout=vllm", "trainer=gpu_8x"]):
        try:
            out[r + str(extra)] = OmegaConf.to_container(compose(["+recipe=" + r] + extra).cfg)
        except Exception as e:
            out[r + str(extra)] = type(e).__name__ + str(e)
out["create"] = OmegaConf.to_container(OmegaConf.create("a: 1e-6\nb: 2020-01-01\nc: 1_000\nd: .5\ne: 0x1F\nf: yes\n"))
print(json.dumps(out, sort_keys=True, default=str))
"""


@pytest.mark.slow  # end to end: a fresh Python process
@pytest.mark.skipif(not getattr(yaml, "__with_libyaml__", False), reason="PyYAML without libyaml")
def test_same_trees_with_and_without_libyaml():
    py, c = (
        subprocess.run([sys.executable, "-c", SCRIPT, mode], capture_output=True, text=True, timeout=300)
        for mode in ("py", "c")
    )
    assert py.returncode == 0 and c.returncode == 0, py.stderr + c.stderr
    assert py.stdout == c.stdout


def test_duplicate_keys_still_rejected():
    from omegaconf import OmegaConf

    import fsdpcfg.check.config  # noqa: F401  (installs the loader)

    with pytest.raises(Exception, match="duplicate key"):
        OmegaConf.create("a: 1\na: 2\n")
