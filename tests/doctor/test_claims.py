"""The compatibility article's section of docs/compatibility.md: every claim of fsdpcfg/doctor/claims.py is in the
checked-in report as written, with the measured outcome of each of its rows, and each row is a known asset."""

from __future__ import annotations

from pathlib import Path

from fsdpcfg.assets import SPECS
from fsdpcfg.doctor.claims import CLAIMS, render_claims

DOC = Path(__file__).resolve().parents[2] / "docs" / "compatibility.md"


def test_every_claim_is_in_the_report_with_its_rows_measured():
    text = DOC.read_text()
    assert "## The compatibility article's models" in text
    for c in CLAIMS:
        line = next((x for x in text.splitlines() if x.startswith(f"- **{c.model}**.")), None)
        assert line is not None, c.model
        assert f"Claimed: {c.claim} Rows: {', '.join(c.rows)}. Measured: " in line
        for asset in c.rows:
            assert asset in SPECS
            assert f"{asset}: all stages passed" in line or f"{asset}: stopped at" in line, asset
            assert f"| {asset} |" in text  # its row is in the table


def test_render_claims_takes_the_outcome_from_the_rows():
    lines = render_claims(lambda asset: f"<{asset}>")
    gemma = next(x for x in lines if "gemma-2-2b-it" in x)
    assert "Measured: tiny-gemma2: <tiny-gemma2>." in gemma and "FC471" in gemma
