"""fsdpcfg/data/verl_reference.json matches the installed verl (regenerate: python scripts/gen_verl_reference.py)."""

from __future__ import annotations

import importlib.util
import json

import pytest

from fsdpcfg import paths, verlref

pytestmark = [
    pytest.mark.verl,
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("verl") is None,
        reason="verl is not installed, so there is nothing to compare the reference with "
        "(CI installs verl[verl-core]==0.9.1)",
    ),
]


def test_reference_matches_installed_verl():
    import subprocess
    import sys

    # a fresh process: build_reference composes with Hydra's global state, which other tests also use
    code = "import json,sys; from fsdpcfg.verlref import build_reference; json.dump(build_reference(), sys.stdout)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=paths.REPO_DIR, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    fresh = json.loads(out.stdout)
    shipped = json.loads((paths.data_dir() / "verl_reference.json").read_text())
    assert fresh["verl_version"] == shipped["verl_version"] == verlref.VERL_VERSION, (
        "installed verl differs from the pinned one: pin it or regenerate with scripts/gen_verl_reference.py"
    )
    for name in verlref.ENTRY_POINTS:
        new, old = fresh["configs"][name], shipped["configs"][name]
        added = sorted(set(new["raw"]) - set(old["raw"]))
        removed = sorted(set(old["raw"]) - set(new["raw"]))
        changed = sorted(k for k in set(new["raw"]) & set(old["raw"]) if new["raw"][k] != old["raw"][k])
        assert not (added or removed or changed), (
            f"{name}: reference out of date (run scripts/gen_verl_reference.py): added {added[:5]}, "
            f"removed {removed[:5]}, changed defaults {changed[:5]}"
        )
        assert new["defaults"] == old["defaults"] and new["entry_point"] == old["entry_point"]
        assert new["types"] == old["types"], f"{name}: the dataclass value kinds are out of date (regenerate)"
        assert new["fields"] == old["fields"], f"{name}: the dataclass fields verl's YAML leaves out are out of date"
        assert new["sections"] == old["sections"], f"{name}: the sections verl converts to dataclasses are out of date"
