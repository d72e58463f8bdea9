"""Regenerate fsdpcfg/data/verl_reference.json from the installed verl (needs `pip install verl[verl-core]==0.9.1`).

Composes verl's own Hydra configs (ppo_trainer, sft_trainer_engine) exactly as verl's entry points do and
records every leaf key with its default, unresolved (interpolations kept as text) and resolved.
    python scripts/gen_verl_reference.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fsdpcfg.verlref import build_reference  # noqa: E402

if __name__ == "__main__":
    out = Path(__file__).resolve().parents[1] / "fsdpcfg" / "data" / "verl_reference.json"
    ref = build_reference()
    out.write_text(json.dumps(ref, indent=1, sort_keys=True) + "\n")
    print(f"wrote {out}: " + ", ".join(f"{k}: {len(v['defaults'])} keys" for k, v in ref["configs"].items()))
