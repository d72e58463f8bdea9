"""docs/verl-coverage.md: the checks found in the installed verl equal the mapping's, every rule it names
exists (and proves its example in tests/rules/test_rule_examples.py), the evidence overrides are reported by a
mapped rule, fsdpcfg's copies of verl's name tables equal verl's, and the page is fresh."""

from __future__ import annotations

import textwrap

import pytest

from fsdpcfg.catalog import ruleinfo, verl_checks, verl_coverage

try:
    ROOT = verl_checks.verl_root()
except FileNotFoundError:  # pragma: no cover - the venv has verl
    ROOT = None
needs_verl = pytest.mark.skipif(ROOT is None, reason="verl is not installed")

#: The config the evidence overrides apply to (a valid 8-GPU verl run of the main recipe) and the SFT one.
PPO_BASE = [
    "+recipe=qwen_grpo",
    "launcher=verl",
    "rollout=vllm",
    "trainer=gpu_8x",
    "data.train_batch_size=64",
    "actor_rollout_ref.actor.ppo_mini_batch_size=16",
]
SFT_BASE = ["+recipe=qwen_sft", "launcher=verl"]
GROUPS = ("launcher", "rollout", "trainer", "engine", "model", "data", "algorithm", "reward")


@pytest.fixture(scope="module")
def checks():
    return verl_checks.scan()


@pytest.fixture(scope="module")
def mapping():
    return verl_coverage.load_mapping()


@needs_verl
def test_every_verl_check_is_mapped_and_nothing_else(checks, mapping):
    found = {c.id for c in checks}
    assert len(found) == len(checks), "check ids must be unique"
    unmapped = sorted(found - set(mapping.checks))
    stale = sorted(set(mapping.checks) - found)
    assert not unmapped, (
        "verl checks not in fsdpcfg/data/verl_coverage.yaml (map each to a rule or a runtime "
        f"reason; `python scripts/gen_verl_coverage.py --missing`): {unmapped}"
    )
    assert not stale, f"mapping entries for checks verl no longer has: {stale}"


def test_mapping_values_name_real_rules_or_known_reasons(mapping):
    rules = ruleinfo.rules()
    for cid, value in mapping.checks.items():
        ids = verl_coverage.rule_ids(value)
        if ids:
            assert all(i in rules for i in ids), f"{cid}: {value} names a rule that does not exist"
        else:
            text = value[len(verl_coverage.RUNTIME) :].strip()
            assert value.startswith(verl_coverage.RUNTIME) and text and text != "TODO", f"{cid}: {value!r}"
            assert text in mapping.reasons or " " in text, f"{cid}: unknown reason code {text!r}"
    assert set(mapping.evidence) <= set(mapping.checks)


def test_mapped_rules_have_examples_that_test_rule_examples_proves(mapping):
    """Each rule the table names has an `explain` example (run by tests/rules/test_rule_examples.py) or is
    one of the documented exceptions there."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(
        "_rule_examples", Path(__file__).resolve().parents[1] / "rules" / "test_rule_examples.py"
    )
    examples = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(examples)
    NO_EXAMPLE = examples.NO_EXAMPLE
    rules = ruleinfo.rules()
    named = {i for v in mapping.checks.values() for i in verl_coverage.rule_ids(v)}
    missing = sorted(i for i in named if not rules[i].example and i not in NO_EXAMPLE)
    assert not missing, f"rules in the coverage table without a failing example: {missing}"


def _overrides(text: str) -> list[str]:
    parts = text.split()
    base = SFT_BASE if parts and parts[0] == "SFT" else PPO_BASE
    parts = [p for p in parts if p != "SFT"]
    # ++ sets a key whether or not the tree lists it yet (critic.*, trainer.v1.* ...)
    return base + [p if p.startswith("+") or p.split("=")[0] in GROUPS else "++" + p for p in parts]


@pytest.mark.slow
def test_evidence_is_reported_by_a_mapped_rule(mapping):
    """~60 checks of ~1 s each: slow."""
    from fsdpcfg.check import check_overrides

    base = {f.rule for f in check_overrides(PPO_BASE) if f.severity != "info"}
    assert not base, f"the evidence base config must be clean, got {base}"
    wrong = []
    for cid, text in mapping.evidence.items():
        want = set(verl_coverage.rule_ids(mapping.checks[cid]))
        got = {f.rule for f in check_overrides(_overrides(text)) if f.severity in ("error", "warning")}
        if not want & got:
            wrong.append(f"{cid}\n  {text}: mapped to {sorted(want)}, check reported {sorted(got)}")
    assert not wrong, "\n".join(wrong)


@needs_verl
def test_fsdpcfg_copies_of_verl_name_tables_equal_verl(checks, mapping):
    by_name = {c.id.split("::", 1)[1]: c for c in checks if c.kind == "registry"}
    assert set(mapping.names) == set(by_name) == {r.name for r in verl_checks.REGISTRIES}
    for name, ref in mapping.names.items():
        verl_names = set(by_name[name].condition.split(", "))
        ours = set(verl_coverage.fsdpcfg_names(ref))
        if name == "rollout":
            ours -= {"hf"}  # fsdpcfg's own native rollout, not one of verl's
        assert ours == verl_names, f"{ref} = {sorted(ours)}, verl registers {sorted(verl_names)}"


@needs_verl
def test_page_is_fresh():
    assert not verl_coverage.stale(), "run `python scripts/gen_verl_coverage.py` and commit docs/verl-coverage.md"


@needs_verl
def test_page_prints_the_totals(checks, mapping):
    text = verl_coverage.render()
    caught = sum(1 for c in checks if verl_coverage.rule_ids(mapping.checks[c.id]))
    assert (
        f"**{len(checks)} checks found in verl 0.9.1: {caught} caught before launch by `fsdpcfg check`, "
        f"{len(checks) - caught} runtime only.**" in text
    )
    for rid in verl_coverage.BEYOND_VERL:  # what verl never checks, listed from the rule table
        assert f"- [{rid}](reference.md#{rid.lower()}): {ruleinfo.rules()[rid].title}" in text


# -- the scanner on a verl tree written here ---------------------------------------------------------------
def _fake_verl(root, body: str):
    for rel in verl_checks.FILES:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("")
    for reg in verl_checks.REGISTRIES:
        for pattern in reg.files:
            path = root / pattern.replace("*", "reg")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch()
    (root / "workers/config/actor.py").write_text(textwrap.dedent(body))
    (root / "trainer/ppo/core_algos.py").write_text(
        textwrap.dedent("""
        class AdvantageEstimator(str, Enum):
            GAE = "gae"
        @register_adv_est(AdvantageEstimator.GAE)
        def gae(): ...
        @register_adv_est("grpo")
        def grpo(): ...
        @register_policy_loss("vanilla")
        def vanilla(): ...
        if x:
            y = 1
        def startup(config, t):
            assert t.shape[0] == 2
            if config.actor.n < 2:
                raise ValueError("n")
        """)
    )


def test_scanner_ids_survive_moved_lines_and_a_new_check_is_new(tmp_path):
    body = """
        class ActorConfig:
            def __post_init__(self):
                if self.use_dynamic_bsz:
                    pass
                elif self.mini < 1:
                    raise ValueError(f"mini {self.mini} must be >= 1")
                assert self.lr != MISSING
        """
    _fake_verl(tmp_path, body)
    first = verl_checks.scan(tmp_path)
    ids = {c.id for c in first}
    assert (
        "workers/config/actor.py::ActorConfig.__post_init__::raise::not (self.use_dynamic_bsz) and self.mini < 1" in ids
    )
    assert "workers/config/actor.py::ActorConfig.__post_init__::assert::self.lr != MISSING" in ids
    # start-up files keep only checks on config values: the tensor assert is left out
    assert "trainer/ppo/core_algos.py::startup::raise::config.actor.n < 2" in ids
    assert not [i for i in ids if "t.shape" in i]
    regs = {c.id: c.condition for c in first if c.kind == "registry"}
    assert regs["registry::adv_estimator"] == "gae, grpo" and regs["registry::policy_loss"] == "vanilla"
    msg = next(c.message for c in first if c.kind == "raise" and c.file == "workers/config/actor.py")
    assert msg == "mini {self.mini} must be >= 1"
    # ten blank lines later the ids are the same; a new check is a new id
    _fake_verl(
        tmp_path,
        "\n" * 10 + body.rstrip() + "\n                if self.lr > 1:\n                    raise ValueError('lr')\n",
    )
    second = verl_checks.scan(tmp_path)
    assert ids < {c.id for c in second}
    new = {c.id for c in second} - ids
    assert new == {"workers/config/actor.py::ActorConfig.__post_init__::raise::self.lr > 1"}
    rows = verl_coverage.join(second, verl_coverage.Mapping({i: "FC104" for i in ids}, {}, {}, {}))
    assert [r.check.id for r in rows if r.value is None] == sorted(new)
    assert "**not mapped**" in verl_coverage.render(rows, verl_coverage.Mapping({}, {}, {}, {}))


def test_scanner_needs_every_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="update FILES"):
        verl_checks.scan(tmp_path)
