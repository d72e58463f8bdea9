"""verl 0.9.1 as the oracle of accepting keys and values, on override sets drawn from its whole key tree (issue 20
item 1).

One subprocess (``_overrides_oracle_worker.py``, see its docstring) reads the key tree of the installed verl, draws
:data:`SETS` sets of :data:`PER_SET` overrides with seed :data:`SEED` (leaves set to their default, to another value
of their type and to a value of another type; ``+`` on leaves; ``key=`` and ``+key=`` on dataclass fields verl's YAML
leaves out; ``+`` and no ``+`` on new keys below dict- or Any-typed fields, ``{}`` leaves and the mappings verl reads
with ``.get``; ``~`` on real and misspelt keys; misspelt keys with and without ``+``; leaves under a section that
lacks them; keys only the Megatron composition has), then one set of overrides earlier draws found fsdpcfg wrong
on (``PINNED``, each fix held against verl on every run), and says, per override, what ``python -m verl.trainer.main_ppo
BASE... SET...`` does with it: ``refused`` (verl's Hydra compose), ``crashes`` (``validate_config``, the config
dataclasses), ``ignored`` (accepted, nothing reads it) or ``accepted``. Its per-override compose verdicts are proven
equal to verl's own compose on every set.

fsdpcfg checks the same commands twice: as overrides (:func:`fsdpcfg.check.compose_for_check` and
:func:`fsdpcfg.check.check_config`, on ``launcher=verl`` and the groups nearest verl's defaults) and as a run script
of one ``python3 -m verl.trainer.main_ppo`` command per set (:func:`fsdpcfg.check.sources.check_run_script`). Its
verdict on each override's key must be verl's:

* verl refuses or crashes on it: fsdpcfg has an error naming the key (any rule);
* verl accepts and reads it: no error of the key and value rules (:data:`KEY_RULES`) names the key;
* verl accepts it and reads nothing there: fsdpcfg reports it (an error or a warning naming the key);
* ``FC112`` exactly where Hydra says "Could not append", ``FC105`` only where it says "Could not override".

A disagreement fsdpcfg keeps on purpose is an entry of :data:`EXPECTED` (its reason is in
``fsdpcfg/data/verl_coverage.yaml`` ``oracle_disagreements`` and in docs/verl-coverage.md, "Oracle disagreements
left"); any other fails the test, and so does an entry that matches no override.
"""

from __future__ import annotations

import importlib.util
import json
import os
import resource
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from fsdpcfg import paths
from fsdpcfg.schema import keys as K

pytestmark = [
    pytest.mark.xdist_group("verl_generated_overrides"),  # one worker: the shared fixture (tests/conftest.py)
    pytest.mark.verl,
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("verl") is None, reason="verl 0.9.1 is not installed"),
]

WORKER = Path(__file__).with_name("_overrides_oracle_worker.py")
_spec = importlib.util.spec_from_file_location("_overrides_oracle_worker", WORKER)
assert _spec is not None and _spec.loader is not None
oracle_worker = sys.modules.setdefault(_spec.name, importlib.util.module_from_spec(_spec))
_spec.loader.exec_module(oracle_worker)  # its module level imports the standard library only
SEED, SETS, PER_SET = 2026, 32, 15
#: the rules that judge a key or its value on its own (issue 20 item 1: FC100, FC101, FC102, FC105, FC112, FC113 and
#: the value rules verl also checks, FC103 and FC104)
KEY_RULES = frozenset({"FC100", "FC101", "FC102", "FC103", "FC104", "FC105", "FC112", "FC113"})

# -- the rows --------------------------------------------------------------------------------------------------------


@dataclass
class Row:
    """One override of one set, with verl's verdict and fsdpcfg's findings on its key, in one of the two modes."""

    mode: str  # "overrides" or "script"
    set: int
    text: str
    kind: str
    key: str
    verl: str  # refused, crashes, ignored, accepted
    verl_error: str
    value: Any
    default: Any
    verl_kinds: list[str]
    errors: frozenset[str] = frozenset()  # rules of the error findings naming the key
    reports: frozenset[str] = frozenset()  # rules of the error and warning findings naming the key
    messages: list[str] = field(default_factory=list)

    def show(self) -> str:
        """One line for a failure message."""
        got = ", ".join(sorted(self.reports)) or "nothing"
        return f"[{self.mode} set {self.set}] `{self.text}` ({self.kind}): verl {self.verl}; fsdpcfg {got}"


def _value(text: str) -> Any:
    """The override's value as Hydra parses it (None for ``~key``)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    (o,) = OverridesParser.create().parse_overrides([text])
    return None if o.is_delete() else o.value()


def _names(key: str, finding_key: str) -> bool:
    """True when a finding on ``finding_key`` is about the override's ``key`` (the key, a key below it, or the
    section above it that the override created or refused)."""
    return finding_key == key or finding_key.startswith(key + ".") or key.startswith(finding_key + ".")


# -- what fsdpcfg keeps on purpose -----------------------------------------------------------------------------------
#: a dict- or Any-typed field of verl's that verl reads entries of by name only: field -> the names read
READ_BY_NAME = {
    # verl/workers/engine/fsdp/transformer_impl.py: mixed_precision.get("param_dtype" / "reduce_dtype" / "buffer_dtype")
    "mixed_precision": {"param_dtype", "reduce_dtype", "buffer_dtype"},
    # verl/utils/fsdp_utils.py get_fsdp_wrap_policy, apply_fsdp2
    "wrap_policy": {"disable", "transformer_layer_cls_to_wrap", "min_num_params"},
    # verl/trainer/ppo/ray_trainer.py compute_advantage: pf_ppo.get("reweight_method" / "weight_pow")
    "pf_ppo": {"reweight_method", "weight_pow"},
    # verl/utils/profiler/config.py ProfilerConfig: the chosen tool's entry, converted to its dataclass
    "tool_config": {"nsys", "npu", "torch", "torch_memory", "precision_debugger"},
    # verl/trainer/main_ppo.py, ray_trainer.py: global_tool_config.nsys (trtllm: .get("nsys"))
    "global_tool_config": {"nsys", "npu", "torch", "torch_memory", "precision_debugger"},
}
#: Any-typed fields of verl's HFModelConfig that its code uses as a module name or list of names (fsdpcfg types them)
NAMES_OR_LISTS = ("model.external_lib", "model.target_modules")
#: keys whose verl default is null and whose type no dataclass declares, with the type verl's code uses them as
NULL_DEFAULT_TYPES = {
    # verl/utils/checkpoint/checkpoint_manager.py register_checkpoint: anything but an int > 0 keeps every checkpoint
    "trainer.max_actor_ckpt_to_keep": "int",
    "trainer.max_critic_ckpt_to_keep": "int",
    # verl/trainer/ppo/ray_trainer.py: the step count, and the validation loader's batch size
    "trainer.total_training_steps": "int",
    "data.val_batch_size": "int",
    # verl/utils/dataset/rl_dataset.py: np.random.default_rng(seed)
    "data.seed": "int",
    # verl/trainer/ppo/ray_trainer.py _load_checkpoint: assert isinstance(resume_from_path, str)
    "trainer.resume_from_path": "str",
    # verl/trainer/ppo/reward.py get_custom_reward_fn -> load_extern_object(module_path=path)
    "reward.custom_reward_function.path": "str",
}


def _kind_of(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "bool"
    return {int: "int", float: "float", str: "str", list: "list", dict: "dict"}.get(type(v), "any")


def _read_by_name(r: Row) -> bool:
    parts = r.key.split(".")
    for i, p in enumerate(parts[:-1]):
        if p in READ_BY_NAME and parts[i + 1] not in READ_BY_NAME[p]:
            return True
    return False


def _not_verls_type(r: Row) -> bool:
    """verl declares the key's type (its dataclass annotation, else its default's type) and the value is not one."""
    kinds = set(r.verl_kinds)
    if not kinds or "any" in kinds:
        return False
    kind = _kind_of(r.value)
    return not (kind in kinds or (kind == "int" and "float" in kinds))


def _not_a_name(r: Row) -> bool:
    """A name verl looks up at run time (fsdpcfg lists the names), drawn as verl's default with ``_x`` appended."""
    names = K.allowed_values(r.key)
    return bool(names) and isinstance(r.default, str) and r.value == r.default + "_x" and r.value not in names


#: id -> (fsdpcfg's rules on the key, verl's verdict, the overrides it covers). fsdpcfg's errors of
#: :data:`KEY_RULES` on the key must all be among the rules; for a key verl ignores, one of its reports must be.
#: The reasons are data (fsdpcfg/data/verl_coverage.yaml ``oracle_disagreements``), printed in docs/verl-coverage.md.
EXPECTED: dict[str, tuple[frozenset[str], str, Callable[[Row], bool]]] = {
    "unread": (
        frozenset({"FC101", "FC102", "FC113", "FC701"}),
        "ignored",
        lambda r: True,
    ),
    "set_by_verl": (frozenset({"FC102"}), "accepted", lambda r: K.set_by_verl(r.key) is not None),
    "read_by_name": (frozenset({"FC102"}), "accepted", _read_by_name),
    "names_or_lists": (
        frozenset({"FC103"}),
        "accepted",
        lambda r: any(r.key.split(".", 1)[-1].startswith(n) for n in NAMES_OR_LISTS),
    ),
    "not_verls_type": (frozenset({"FC103"}), "accepted", _not_verls_type),
    "null_default_types": (
        frozenset({"FC103"}),
        "accepted",
        lambda r: r.key in NULL_DEFAULT_TYPES and _kind_of(r.value) not in (NULL_DEFAULT_TYPES[r.key], "null"),
    ),
    "not_a_name": (frozenset({"FC103"}), "accepted", _not_a_name),
}


def _disagreement(r: Row) -> str | None:
    """What is wrong with fsdpcfg's verdict on ``r`` (None: it agrees with verl)."""
    hydra = r.verl_error
    if "Could not append" in hydra and "FC112" not in r.errors:
        return "verl's Hydra refuses the + on an existing key: FC112 expected"
    if "FC112" in r.errors and "Could not append" not in hydra:
        return "FC112 where verl's Hydra does not refuse the +"
    if "FC105" in r.errors and "Could not override" not in hydra:
        return "FC105 (add +) where verl's Hydra does not ask for a +"
    if r.verl in ("refused", "crashes"):
        return None if r.errors else f"verl {r.verl} ({hydra[:160]}) and fsdpcfg has no error on the key"
    if r.verl == "ignored":
        return "reported on a key verl ignores" if r.reports else "verl ignores the key and fsdpcfg says nothing"
    wrong = r.errors & KEY_RULES
    return f"{', '.join(sorted(wrong))} on an override verl accepts and reads" if wrong else None


def _expected(r: Row, why: str) -> str | None:
    """The id of the :data:`EXPECTED` entry that covers the disagreement ``why`` of ``r``, or None."""
    for eid, (rules, verdict, match) in EXPECTED.items():
        if r.verl != verdict:
            continue
        mine = r.errors & KEY_RULES
        named = bool(r.reports & rules) if verdict == "ignored" else bool(mine) and mine <= rules
        if named and match(r):
            return eid
    return None


# -- running both sides ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def oracle(tmp_path_factory):
    """verl's side: the sets and the verdicts (one subprocess), with its CPU seconds."""
    out = tmp_path_factory.mktemp("oracle") / "verdicts.json"
    path = os.pathsep.join(filter(None, [str(paths.REPO_DIR), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(
        [sys.executable, str(WORKER), str(SEED), str(SETS), str(PER_SET), str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=out.parent,
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads(out.read_text())
    doc["cpu_s_process"] = round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 1)
    return doc


def _rows(mode: str, doc: dict[str, Any], findings_per_set: list[list[Any]]) -> list[Row]:
    rows = []
    for i, (items, findings) in enumerate(zip(doc["sets"], findings_per_set, strict=True)):
        for it in items:
            mine = [f for f in findings if any(_names(it["key"], k) for k in f.keys)]
            rows.append(
                Row(
                    mode,
                    i,
                    it["text"],
                    it["kind"],
                    it["key"],
                    it["verdict"],
                    it.get("error") or "",
                    _value(it["text"]),
                    it["default"],
                    it["verl_kinds"],
                    frozenset(f.rule for f in mine if f.severity == "error"),
                    frozenset(f.rule for f in mine if f.severity in ("error", "warning")),
                    [f"{f.rule} {f.severity}: {f.message[:140]}" for f in mine],
                )
            )
    return rows


@pytest.fixture(scope="module")
def rows(oracle, tmp_path_factory):
    """fsdpcfg's side in both modes, with its CPU seconds."""
    from fsdpcfg.check import check_config, compose_for_check
    from fsdpcfg.check.runscript.translate import SCRIPT_BASE
    from fsdpcfg.check.sources import check_run_script

    BASE = oracle_worker.BASE
    t0 = time.process_time()
    as_overrides = []
    for items in oracle["sets"]:
        composed, fatal = compose_for_check([*SCRIPT_BASE, *BASE, *(it["text"] for it in items)])
        as_overrides.append(check_config(composed) if composed is not None else fatal)
    script = tmp_path_factory.mktemp("script") / "run.sh"
    quote = lambda t: "'" + t.replace("'", "'\\''") + "'"  # noqa: E731
    script.write_text(
        "#!/bin/bash\nset -x\n"
        + "".join(
            "python3 -m verl.trainer.main_ppo " + " ".join(quote(t) for t in [*BASE, *(it["text"] for it in s)]) + "\n"
            for s in oracle["sets"]
        )
    )
    checked = check_run_script(script)
    assert len(checked) == len(oracle["sets"]), [c.label for c in checked]
    out = _rows("overrides", oracle, as_overrides) + _rows("script", oracle, [c.findings for c in checked])
    oracle["cpu_s_fsdpcfg"] = round(time.process_time() - t0, 1)
    return out


def test_the_draw_covers_verls_key_tree_and_every_verdict(oracle):
    kinds = Counter(it["kind"] for s in oracle["sets"] for it in s)
    verdicts = Counter(it["verdict"] for s in oracle["sets"] for it in s)
    assert len(oracle["sets"]) == SETS + 1 and sum(kinds.values()) == SETS * PER_SET + len(oracle_worker.PINNED)
    assert set(kinds) == set(oracle_worker.KINDS), kinds
    assert set(verdicts) == {"refused", "crashes", "ignored", "accepted"}, verdicts
    assert oracle["proofs"]["sets"] == SETS + 1  # every set's verdicts equal verl's own compose of it


def test_fsdpcfg_agrees_with_verl_on_every_override(oracle, rows):
    from fsdpcfg.catalog import verl_coverage

    reasons = verl_coverage.load_mapping().oracle_disagreements
    assert set(reasons) == set(EXPECTED), "EXPECTED and verl_coverage.yaml's oracle_disagreements differ"
    left: dict[str, list[Row]] = {}
    wrong: list[str] = []
    for r in rows:
        why = _disagreement(r)
        if why is None:
            continue
        eid = _expected(r, why)
        if eid is None:
            wrong.append(f"{r.show()}: {why}\n      " + "\n      ".join(r.messages or ["(no finding)"]))
        else:
            left.setdefault(eid, []).append(r)
    n_keys = len({r.key for r in rows})
    print(
        f"\n{SETS} sets x {PER_SET} overrides (seed {SEED}) and {len(oracle_worker.PINNED)} pinned: "
        f"{len(rows) // 2} overrides, {n_keys} keys; verl's tree: {oracle['tree']}; "
        f"verl's verdicts: {dict(Counter(r.verl for r in rows if r.mode == 'script'))}"
    )
    print(
        f"CPU s: {oracle['cpu_s_process'] + oracle['cpu_s_fsdpcfg']:.1f} in all; verl's side {oracle['cpu_s_process']} "
        f"(tree and draw {oracle['cpu_s']['tree_and_draw']}, verdicts {oracle['cpu_s']['verdicts']}; "
        f"{oracle['proofs']['composes']} composes of verl's own), fsdpcfg's side {oracle['cpu_s_fsdpcfg']} (both modes)"
    )
    for eid, rs in left.items():
        examples = ", ".join(sorted({f"`{r.text}`" for r in rs})[:3])
        print(f"  left on purpose, {eid}: {len(rs)} (e.g. {examples}): {reasons[eid]['reason'][:100]}...")
    assert not wrong, f"{len(wrong)} disagreements with verl not in EXPECTED:\n" + "\n".join(wrong)
    unused = sorted(set(EXPECTED) - set(left))
    assert not unused, f"EXPECTED entries that match no override (drop them, or draw what they cover): {unused}"
    # both modes judge every override alike
    by_mode: dict[tuple[int, str], dict[str, frozenset[str]]] = {}
    for r in rows:
        by_mode.setdefault((r.set, r.text), {})[r.mode] = r.errors & KEY_RULES
    differ = [k for k, v in by_mode.items() if v["overrides"] != v["script"]]
    assert not differ, f"check as overrides and as a run script differ on {differ[:5]}"


def test_the_comparison_can_fail():
    """A false alarm, a miss and a wrong FC112 are each reported, not covered by EXPECTED."""
    base = dict(set=0, kind="leaf_default", default=None, verl_kinds=["int"], value=4)
    false_alarm = Row("overrides", text="trainer.nnodes=4", key="trainer.nnodes", verl="accepted", verl_error="",
                      errors=frozenset({"FC101"}), reports=frozenset({"FC101"}), **base)  # fmt: skip
    miss = Row("overrides", text="+trainer.nnodes=4", key="trainer.nnodes", verl="refused",
               verl_error="ConfigCompositionException: Could not append to config", **base)  # fmt: skip
    silent = Row("overrides", text="+trainer.nnodez=4", key="trainer.nnodez", verl="ignored", verl_error="", **base)
    for r in (false_alarm, miss, silent):
        why = _disagreement(r)
        assert why is not None and _expected(r, why) is None, r
