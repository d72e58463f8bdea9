"""FC5xx/FC6xx/FC7xx unit tests."""

from rule_helpers import errors, run, warnings

from fsdpcfg.rules import algorithm, legacy_keys, rollout_engine, traps

GPU = ["launcher=verl", "rollout=vllm", "trainer=gpu_8x"]
A = "actor_rollout_ref"


def test_fc501_context_and_rope(shared_models):
    f = errors(
        run(
            rollout_engine.context_length,
            "data.max_prompt_length=2048",
            "data.max_response_length=8192",
            model="meta-llama__Llama-2-7b-hf",
        )
    )
    assert f and "10240" in f[0].message and "4096" in f[0].message and "override_config" in f[0].fix
    # Llama-3.2: 131072 positions already include the llama3 rope scaling
    assert not run(
        rollout_engine.context_length,
        "data.max_prompt_length=2048",
        "data.max_response_length=8192",
        model="meta-llama__Llama-3.2-3B-Instruct",
    )
    # DeepSeek-V2-Lite's yarn factor 40 x 4096 original: 163840 already in max_position_embeddings
    assert not run(
        rollout_engine.context_length,
        "data.max_prompt_length=4096",
        "data.max_response_length=60000",
        model="deepseek-ai__DeepSeek-V2-Lite",
    )


def test_fc501_max_model_len_below_prompt_and_answer_is_clamped_by_verl():
    # verl clamps each answer to max_model_len - the prompt's length (vllm_async_server.generate): a warning with it
    got = run(
        rollout_engine.context_length,
        *GPU,
        f"{A}.rollout.max_model_len=6000",
        "data.max_prompt_length=2048",
        "data.max_response_length=8192",
    )
    assert not errors(got)
    [w] = warnings(got)
    assert "at most 3952 of the 8192 tokens" in w.message and f"{A}.rollout.max_model_len=10240" in w.fix
    # a full-length prompt leaves no room: verl raises ValueError for it
    [e] = errors(
        run(
            rollout_engine.context_length,
            *GPU,
            f"{A}.rollout.max_model_len=2048",
            "data.max_prompt_length=2048",
            "data.max_response_length=512",
        )
    )
    assert "raises ValueError" in e.message


def test_fc502_fc503_fc504_fc505(shared_models):
    # verl 0.9.1 raises max_num_batched_tokens to max_model_len itself (case c11): a warning with the value it uses,
    # the model's max_position_embeddings (Mistral-7B-v0.3: 32768) when rollout.max_model_len is unset
    got = run(
        rollout_engine.chunked_prefill,
        *GPU,
        f"{A}.rollout.enable_chunked_prefill=false",
        f"{A}.rollout.max_num_batched_tokens=8192",
        "data.max_prompt_length=4096",
        "data.max_response_length=8192",
        model="mistralai__Mistral-7B-Instruct-v0.3",
    )
    assert not errors(got)
    [f] = warnings(got)
    assert f"raises {A}.rollout.max_num_batched_tokens to 32768 itself" in f.message
    assert f"{A}.rollout.max_num_batched_tokens=32768" in f.fix
    [g] = warnings(
        run(
            rollout_engine.chunked_prefill,
            *GPU,
            f"{A}.rollout.enable_chunked_prefill=false",
            f"{A}.rollout.max_num_batched_tokens=8192",
            f"{A}.rollout.max_model_len=12288",
            "data.max_prompt_length=4096",
            "data.max_response_length=8192",
        )
    )
    assert "max_model_len = 12288" in g.message and "to 12288 itself" in g.message
    assert not run(
        rollout_engine.chunked_prefill,
        *GPU,
        f"{A}.rollout.enable_chunked_prefill=false",
        f"{A}.rollout.max_num_batched_tokens=12288",
        f"{A}.rollout.max_model_len=12288",
        "data.max_prompt_length=4096",
        "data.max_response_length=8192",
    )
    assert errors(run(rollout_engine.lora_rank_vllm, *GPU, f"{A}.model.lora_rank=1024"))
    assert not run(rollout_engine.lora_rank_vllm, *GPU, f"{A}.model.lora_rank=512")
    assert errors(
        run(rollout_engine.layered_summon, *GPU, f"{A}.model.lora_rank=16", f"{A}.rollout.layered_summon=true")
    )
    assert not run(
        rollout_engine.layered_summon,
        *GPU,
        f"{A}.model.lora_rank=16",
        f"{A}.rollout.layered_summon=true",
        f"{A}.rollout.load_format=safetensors",
    )
    f = errors(
        run(rollout_engine.load_format, "launcher=verl", "rollout=sglang", f"{A}.rollout.load_format=dummy_dtensor")
    )
    assert f and "pre-0.5 verl name" in f[0].message
    assert not run(rollout_engine.load_format, "launcher=verl", "rollout=sglang", f"{A}.rollout.load_format=layered")
    assert warnings(run(rollout_engine.load_format, *GPU, f"{A}.rollout.load_format=myplugin"))


def test_fc601_groups():
    for est in ("grpo", "rloo", "opo", "grpo_passk", "gpg"):
        assert errors(run(algorithm.group_needs_samples, f"algorithm.adv_estimator={est}", f"{A}.rollout.n=1")), est
    assert not run(algorithm.group_needs_samples, "algorithm.adv_estimator=reinforce_plus_plus", f"{A}.rollout.n=1")
    assert errors(run(algorithm.known_names, f"{A}.actor.loss_agg_mode=mean"))


def test_fc701_fc702():
    f = errors(run(legacy_keys.legacy_reward_keys, "+custom_reward_function.path=r.py"))
    assert f and "reward.custom_reward_function.path" in f[0].keys
    # verl 0.9.1's own dumps list the legacy sections with null values: nothing is lost, nothing to report
    assert not run(legacy_keys.legacy_reward_keys, "+custom_reward_function.path=null", "+reward_model.enable=null")
    # launcher=verl implies trainer.device=cuda; an explicit cpu on the command line is the trap
    assert errors(run(traps.verl_on_cpu, "launcher=verl", "rollout=vllm", "trainer.device=cpu"))
    assert not run(traps.verl_on_cpu, "launcher=verl", "rollout=vllm")
    assert not run(traps.verl_on_cpu, "launcher=verl", "rollout=vllm", "trainer=gpu_8x")
    assert not run(traps.verl_on_cpu)  # native on CPU is the supported way


def test_fc703_fc704_fc705():
    w = warnings(
        run(traps.fsdp1_offload_under_fsdp2, *GPU, "engine=fsdp2", f"{A}.actor.fsdp_config.param_offload=true")
    )
    assert w and f"{A}.actor.fsdp_config.offload_policy" in w[0].keys
    assert not run(traps.fsdp1_offload_under_fsdp2, *GPU, "engine=fsdp", f"{A}.actor.fsdp_config.param_offload=true")
    # under launcher=native too (case c16): the warning says what the flags would not do under FSDP2; FC802 also
    # refuses them there (fsdpcfg/native/support.py)
    assert warnings(run(traps.fsdp1_offload_under_fsdp2, "engine=fsdp2", f"{A}.actor.fsdp_config.param_offload=true"))
    assert not run(traps.offload_on_cpu, *GPU, f"{A}.actor.fsdp_config.offload_policy=true")
    assert errors(run(traps.offload_on_cpu, f"{A}.actor.fsdp_config.offload_policy=true"))
    # the manual flags are FC802's under launcher=native (fsdpcfg/native/support.py): one finding per key
    assert not run(traps.offload_on_cpu, f"{A}.actor.fsdp_config.param_offload=true")
    w = warnings(
        run(
            traps.on_policy_micro_mismatch,
            *GPU,
            "data.train_batch_size=64",
            f"{A}.actor.ppo_mini_batch_size=64",
            f"{A}.rollout.log_prob_micro_batch_size_per_gpu=32",
            f"{A}.actor.ppo_micro_batch_size_per_gpu=4",
        )
    )
    assert w and "=4" in w[0].fix
    assert not run(
        traps.on_policy_micro_mismatch,
        *GPU,
        "data.train_batch_size=64",
        f"{A}.actor.ppo_mini_batch_size=32",
        f"{A}.rollout.log_prob_micro_batch_size_per_gpu=32",
        f"{A}.actor.ppo_micro_batch_size_per_gpu=4",
    )


def test_fc110_group_option_contradicted_on_the_same_command_line():
    from fsdpcfg.check import check_overrides

    fs = [
        f
        for f in check_overrides(["+recipe=qwen_grpo", "engine=fsdp2", f"{A}.actor.strategy=fsdp"])
        if f.rule == "FC110"
    ]
    assert len(fs) == 1 and fs[0].severity == "warning" and fs[0].keys == [f"{A}.actor.strategy"]
    assert "`engine=fsdp2`" in fs[0].message and "=fsdp on the same command line" in fs[0].message
    # agreeing values, a recipe value (not the command line), and a group alone are fine
    for ov in (["engine=fsdp2", f"{A}.actor.strategy=fsdp2"], [f"{A}.actor.strategy=fsdp"], ["engine=fsdp"]):
        assert not [f for f in check_overrides(["+recipe=qwen_grpo", *ov]) if f.rule == "FC110"], ov
    # the SFT tree has the same groups
    fs = [f for f in check_overrides(["+recipe=qwen_sft", "engine=fsdp2", "engine.strategy=fsdp"]) if f.rule == "FC110"]
    assert [f.keys for f in fs] == [["engine.strategy"]]
