"""Model traps read from the model's files before anything starts (fsdpcfg/rules/model_traps.py, issue 23 item
6): a checkpoint that is not a causal LM (FC420), a folder without weights (FC421), an external_lib that is not on
the import path (FC423). Each with the value that fires it and a real-style one that stays silent."""

from __future__ import annotations

import json
import shutil

from rule_helpers import run

from fsdpcfg import paths
from fsdpcfg.rules import model_traps

A = "actor_rollout_ref"
QWEN = paths.data_dir() / "model_configs" / "Qwen__Qwen2.5-0.5B-Instruct__resaved" / "config.json"


def _folder(tmp_path, name, *, weights=True, **edits):
    d = tmp_path / name
    d.mkdir()
    cfg = {**json.loads(QWEN.read_text()), **edits}
    (d / "config.json").write_text(json.dumps(cfg))
    if weights:
        (d / "model.safetensors").write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{}      ")
    return d


def test_fc420_other_heads_and_model_types_are_refused_on_the_native_path(tmp_path):
    bert = _folder(tmp_path, "bert", model_type="bert", architectures=["BertForMaskedLM"])
    (f,) = run(model_traps.causal_lm_checkpoint, f"{A}.model.path={bert}")
    assert (f.rule, f.severity) == ("FC420", "error")
    assert "the checkpoint is a BertForMaskedLM, not a causal LM" in f.message and "as BertLMHeadModel" in f.message
    t5 = _folder(tmp_path, "t5", model_type="t5", architectures=["T5ForConditionalGeneration"])
    (f,) = run(model_traps.causal_lm_checkpoint, f"{A}.model.path={t5}")
    assert "model_type 't5' (T5ForConditionalGeneration) has no causal-LM class in transformers" in f.message
    # verl picks its own classes: not judged there
    assert not run(model_traps.causal_lm_checkpoint, "launcher=verl", f"{A}.model.path={t5}")


def test_fc420_silent_on_causal_lms_and_remote_code_causal_lms(tmp_path):
    assert not run(model_traps.causal_lm_checkpoint, f"{A}.model.path={_folder(tmp_path, 'qwen')}")
    gpt2 = _folder(tmp_path, "gpt2", model_type="gpt2", architectures=["GPT2LMHeadModel"])
    assert not run(model_traps.causal_lm_checkpoint, f"{A}.model.path={gpt2}")
    remote = _folder(
        tmp_path, "remote", model_type="mylm", architectures=["MyLM"], auto_map={"AutoModelForCausalLM": "m.MyLM"}
    )
    assert not run(model_traps.causal_lm_checkpoint, f"{A}.model.path={remote}", f"{A}.model.trust_remote_code=true")


def test_fc421_a_folder_without_weights(tmp_path):
    bare = _folder(tmp_path, "bare", weights=False)
    (f,) = run(model_traps.weights_present, f"{A}.model.path={bare}")
    assert (f.rule, f.severity, f.keys) == ("FC421", "error", [f"{A}.model.path"])
    assert f"{bare} has config.json but no weights" in f.message and "it holds: config.json" in f.message
    assert not run(model_traps.weights_present, f"{A}.model.path={_folder(tmp_path, 'full')}")
    sharded = _folder(tmp_path, "sharded", weights=False)
    shutil.copy(QWEN, sharded / "model-00001-of-00002.safetensors")  # a shard's name is enough here
    assert not run(model_traps.weights_present, f"{A}.model.path={sharded}")


def test_fc423_external_lib_found_without_importing_it(tmp_path, monkeypatch):
    (f,) = run(model_traps.external_lib_found, f"{A}.model.external_lib=no_such_module_xyz")
    assert (f.rule, f.severity) == ("FC423", "error") and "no module no_such_module_xyz" in f.message
    (f,) = run(model_traps.external_lib_found, "launcher=verl", f"{A}.model.external_lib=no_such_module_xyz")
    assert f.severity == "warning"
    assert not run(model_traps.external_lib_found, f"{A}.model.external_lib=json.decoder")
    assert not run(model_traps.external_lib_found, f"{A}.model.external_lib=sys")  # built in
    assert run(model_traps.external_lib_found, f"{A}.model.external_lib=json.no_such_sub")
    # a module in a folder on the path is found, and not run
    (tmp_path / "mypkg").mkdir()
    (tmp_path / "mypkg" / "__init__.py").write_text("raise SystemExit('imported!')\n")
    (tmp_path / "mypkg" / "reg.py").write_text("raise SystemExit('imported!')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert not run(model_traps.external_lib_found, f"{A}.model.external_lib=mypkg.reg")


def test_fc422_tokenizer_ids_past_the_embedding(tmp_path):
    small = _folder(tmp_path, "small", vocab_size=1000)  # Qwen2.5's tokenizer files, an embedding of 1000 rows
    for f in ("vocab.json", "merges.txt", "tokenizer_config.json"):
        shutil.copy(paths.data_dir() / "tokenizers" / "qwen2.5-0.5b-instruct" / f, small / f)
    (f,) = run(model_traps.tokenizer_fits_embedding, f"{A}.model.path={small}")
    assert (f.rule, f.severity) == ("FC422", "error")
    # vocab.json's 151,643 ids, then the added tokens of tokenizer_config.json up to <|file_sep|> = 151664
    assert f"({small}/vocab.json) has ids up to 151664, but {small}/config.json has vocab_size = 1000" in f.message
    fits = _folder(tmp_path, "fits")  # the real vocab_size, 151936: more rows than tokens is normal
    for name in ("vocab.json", "tokenizer_config.json"):
        shutil.copy(small / name, fits / name)
    assert not run(model_traps.tokenizer_fits_embedding, f"{A}.model.path={fits}")
    edge = _folder(tmp_path, "edge", vocab_size=151665)  # ids 0..151664 exactly fit
    for name in ("vocab.json", "tokenizer_config.json"):
        shutil.copy(small / name, edge / name)
    assert not run(model_traps.tokenizer_fits_embedding, f"{A}.model.path={edge}")
    # tokenizer.json: its model's vocab and its added tokens
    tj = _folder(tmp_path, "tj", vocab_size=5)
    tokens = {"model": {"type": "WordLevel", "vocab": {"a": 0, "b": 1}}, "added_tokens": [{"id": 5, "content": "<x>"}]}
    (tj / "tokenizer.json").write_text(json.dumps(tokens))
    (f,) = run(model_traps.tokenizer_fits_embedding, f"{A}.model.path={tj}")
    assert "has ids up to 5, but" in f.message and "vocab_size = 5" in f.message
