"""Rules from public reports (issue 20 item 10): rollout TP against the heads (FC307), adaptive KL (FC604), the
DAPO overlong buffer (FC605), the critic's placeholder path (FC418), top_p/top_k in the training rollout (FC508),
greedy validation with n > 1 (FC509), an override_config the rollout engine never sees (FC510). Each: a firing
case with its exact numbers and a real-style case that stays silent."""

from __future__ import annotations

from rule_helpers import errors, run, warnings

from fsdpcfg.rules import algorithm, dead_keys, lora_rules, model_rules, parallel, rollout_engine

A = "actor_rollout_ref"
R = f"{A}.rollout"
GPU = ["launcher=verl", "rollout=vllm", "trainer=gpu_8x"]


# -- FC307: rollout TP against the attention and KV heads ---------------------------------------------------------
def test_fc307_heads_not_divisible(shared_models):
    f = errors(
        run(
            parallel.rollout_tp_heads,
            *GPU,
            f"{R}.tensor_model_parallel_size=4",
            model="Qwen__Qwen2.5-0.5B-Instruct__resaved",
        )
    )
    assert len(f) == 1 and f[0].rule == "FC307"
    assert "num_attention_heads = 14 is not divisible by 4" in f[0].message
    assert "num_key_value_heads" not in f[0].message  # 2 KV heads: 4 % 2 == 0, replicated
    assert f[0].fix.endswith("one of [1, 2]")


def test_fc307_kv_heads_do_not_fit(shared_models):
    # Llama-3.2-3B: 24 heads divide by 3, its 8 KV heads neither divide by 3 nor divide 3
    f = errors(
        run(
            parallel.rollout_tp_heads,
            "launcher=verl",
            "rollout=sglang",
            "trainer.n_gpus_per_node=6",
            f"{R}.tensor_model_parallel_size=3",
            model="meta-llama__Llama-3.2-3B-Instruct",
        )
    )
    assert len(f) == 1
    assert "num_key_value_heads = 8 and 3 do not divide one another" in f[0].message
    assert "num_attention_heads" not in f[0].message and "sglang refuses" in f[0].message
    assert f[0].fix.endswith("one of [1, 2]")  # 6 ranks: 1, 2 (3 and 6 do not fit 8 KV heads)


def test_fc307_silent_on_fitting_tp_and_without_an_engine(shared_models):
    # verl's GSM8K examples: Qwen2.5 on TP 2, Qwen3-8B (32 heads, 8 KV) on TP 8 / 16 replicates KV heads
    assert not run(
        parallel.rollout_tp_heads,
        *GPU,
        f"{R}.tensor_model_parallel_size=2",
        model="Qwen__Qwen2.5-0.5B-Instruct__resaved",
    )
    assert not run(parallel.rollout_tp_heads, *GPU, f"{R}.tensor_model_parallel_size=8", model="Qwen__Qwen3-8B")
    assert not run(
        parallel.rollout_tp_heads,
        *GPU,
        "trainer.nnodes=2",
        f"{R}.tensor_model_parallel_size=16",
        model="Qwen__Qwen3-8B",
    )
    # the hf rollout has no tensor parallelism
    assert not run(
        parallel.rollout_tp_heads, f"{R}.tensor_model_parallel_size=4", model="Qwen__Qwen2.5-0.5B-Instruct__resaved"
    )


# -- FC604: adaptive KL ---------------------------------------------------------------------------------------------
ADAPTIVE = ["algorithm.use_kl_in_reward=true", "algorithm.kl_ctrl.type=adaptive"]


def test_fc604_target_zero_divides_by_zero():
    f = errors(run(algorithm.adaptive_kl, *ADAPTIVE, "algorithm.kl_ctrl.target_kl=0"))
    assert len(f) == 1 and "algorithm.kl_ctrl.target_kl = 0 with" in f[0].message
    assert "ZeroDivisionError" in f[0].message
    assert f[0].keys == ["algorithm.kl_ctrl.target_kl", "algorithm.kl_ctrl.type"]


def test_fc604_negative_target_and_unused_controller_warn():
    f = warnings(run(algorithm.adaptive_kl, *ADAPTIVE, "algorithm.kl_ctrl.target_kl=-0.05"))
    assert len(f) == 1 and "target_kl = -0.05" in f[0].message and "only shrinks" in f[0].message
    f = warnings(run(algorithm.adaptive_kl, "algorithm.kl_ctrl.type=adaptive", "algorithm.kl_ctrl.target_kl=0"))
    assert len(f) == 1 and "use_kl_in_reward = false" in f[0].message  # the controller is never built
    assert not errors(run(algorithm.adaptive_kl, "algorithm.kl_ctrl.type=adaptive", "algorithm.kl_ctrl.target_kl=0"))


def test_fc604_silent_on_verls_adaptive_settings():
    assert not run(algorithm.adaptive_kl, *ADAPTIVE)  # verl's defaults: target_kl 0.1, horizon 10000
    assert not run(
        algorithm.adaptive_kl, *ADAPTIVE, "algorithm.kl_ctrl.target_kl=0.02", "algorithm.kl_ctrl.horizon=5000"
    )
    assert not run(algorithm.adaptive_kl, "algorithm.kl_ctrl.target_kl=0")  # fixed controller: target unused


# -- FC605: DAPO overlong buffer --------------------------------------------------------------------------------------
DAPO = ["reward.reward_manager.name=dapo", "+reward.reward_kwargs.overlong_buffer_cfg.enable=true"]
OB = "+reward.reward_kwargs.overlong_buffer_cfg"


def test_fc605_assertions_of_the_reward_manager():
    f = errors(run(algorithm.dapo_overlong_buffer, *DAPO, f"{OB}.len=16"))
    assert len(f) == 1 and "reward.reward_kwargs.max_resp_len = None" in f[0].message
    f = errors(run(algorithm.dapo_overlong_buffer, *DAPO, f"{OB}.len=64", "+reward.reward_kwargs.max_resp_len=32"))
    assert len(f) == 1 and "len = 64 is larger than reward.reward_kwargs.max_resp_len = 32" in f[0].message
    f = errors(run(algorithm.dapo_overlong_buffer, *DAPO, f"{OB}.len=0", "+reward.reward_kwargs.max_resp_len=32"))
    assert len(f) == 1 and "len = 0 must be positive" in f[0].message


def test_fc605_buffer_outside_the_response_length():
    # the recipe's data.max_response_length is 32
    f = warnings(run(algorithm.dapo_overlong_buffer, *DAPO, f"{OB}.len=16", "+reward.reward_kwargs.max_resp_len=64"))
    assert len(f) == 1
    assert "max_resp_len - reward.reward_kwargs.overlong_buffer_cfg.len = 64 - 16 = 48 tokens" in f[0].message
    assert "response_length = 32" in f[0].message and f[0].fix.startswith("set reward.reward_kwargs.max_resp_len=32")
    f = warnings(
        run(
            algorithm.dapo_overlong_buffer,
            *DAPO,
            f"{OB}.len=8",
            f"{OB}.penalty_factor=1.0",
            "+reward.reward_kwargs.max_resp_len=16",
        )
    )
    # start 16 - 8 = 8; a 32-token response: (32 - 8) / 8 x 1.0 = 3
    assert len(f) == 1 and "max_resp_len = 16 is below" in f[0].message and "down to -3 for" in f[0].message


def test_fc605_silent_on_dapo_as_verl_runs_it():
    # verl's DAPO examples: max_resp_len = max_response_length, buffer 4096 of it
    ok = [*DAPO, "data.max_response_length=8192", f"{OB}.len=4096", "+reward.reward_kwargs.max_resp_len=8192"]
    assert not run(algorithm.dapo_overlong_buffer, *ok)
    assert not run(algorithm.dapo_overlong_buffer, f"{OB}.enable=true", f"{OB}.len=0")  # naive manager: unread


# -- FC418: the critic's placeholder model --------------------------------------------------------------------------
def test_fc418_gae_without_a_critic_path():
    f = errors(run(model_rules.critic_placeholder_path, "algorithm.adv_estimator=gae"))
    assert len(f) == 1
    assert "critic.model.path = ~/models/deepseek-llm-7b-chat (from verl 0.9.1 default)" in f[0].message
    assert "algorithm.adv_estimator = gae" in f[0].message
    f = errors(run(model_rules.critic_placeholder_path, "critic.enable=true", "algorithm.adv_estimator=grpo"))
    assert len(f) == 1 and "critic.enable = true" in f[0].message


def test_fc418_silent_with_a_critic_model_or_no_critic():
    assert not run(
        model_rules.critic_placeholder_path,
        "algorithm.adv_estimator=gae",
        "critic.model.path=${actor_rollout_ref.model.path}",
    )
    assert not run(model_rules.critic_placeholder_path)  # GRPO: no critic
    assert not run(model_rules.critic_placeholder_path, "algorithm.adv_estimator=gae", "critic.enable=false")


# -- FC508: truncated sampling in the training rollout -------------------------------------------------------------
def test_fc508_top_p_and_top_k():
    f = warnings(run(rollout_engine.truncated_sampling, f"{R}.top_p=0.9", f"{R}.top_k=50"))
    assert len(f) == 1 and f[0].keys == [f"{R}.top_p", f"{R}.top_k"]
    assert f"{R}.top_p = 0.9 (from command line" in f[0].message and f"{R}.top_k = 50 (from" in f[0].message
    f = warnings(
        run(rollout_engine.truncated_sampling, f"{R}.top_p=0.95", "algorithm.rollout_correction.rollout_is=token")
    )
    assert len(f) == 1 and "rollout_is = token" in f[0].message


def test_fc508_silent_on_full_distribution_and_validation_only_truncation():
    assert not run(rollout_engine.truncated_sampling)  # top_p 1, top_k -1
    assert not run(
        rollout_engine.truncated_sampling, f"{R}.top_k=0", f"{R}.val_kwargs.top_p=0.7", f"{R}.val_kwargs.top_k=20"
    )


# -- FC509: n validation samples that are one greedy answer --------------------------------------------------------
def test_fc509_greedy_validation_with_n():
    f = warnings(run(rollout_engine.greedy_val_samples, f"{R}.val_kwargs.n=8"))
    assert len(f) == 1 and "val_kwargs.n = 8 but" in f[0].message and "temperature = 0" in f[0].message
    assert "mean@8 equals mean@1 at 8x the validation cost" in f[0].message
    vk = [f"{R}.val_kwargs.n=4", f"{R}.val_kwargs.temperature=0.6", f"{R}.val_kwargs.do_sample=false"]
    f = warnings(run(rollout_engine.greedy_val_samples, *vk))  # native launcher: greedy as do_sample says
    assert (
        len(f) == 1
        and "decodes validation greedily" in f[0].message
        and "temperature = 0.6 is not used" in f[0].message
    )
    # verl 0.9.1's agent loop samples at the val temperature whatever do_sample says: what n > 1 wants
    assert not run(rollout_engine.greedy_val_samples, *GPU, *vk)


def test_fc509_silent_on_sampled_or_single_validation():
    assert not run(rollout_engine.greedy_val_samples)  # n = 1, greedy: verl's default
    sampled = [f"{R}.val_kwargs.n=16", f"{R}.val_kwargs.temperature=0.7", f"{R}.val_kwargs.do_sample=true"]
    assert not run(rollout_engine.greedy_val_samples, *GPU, *sampled)


# -- FC510: override_config that the rollout engine never sees ------------------------------------------------------
QWEN = "Qwen__Qwen2.5-0.5B-Instruct__resaved"  # max_position_embeddings 32768, no rope_scaling
OC = f"+{A}.model.override_config"
YARN = f"{OC}.rope_scaling={{rope_type:yarn,factor:4.0,original_max_position_embeddings:32768}}"


def test_fc510_longer_context_the_engine_refuses(shared_models):
    f = errors(run(rollout_engine.override_context_unseen, *GPU, f"{OC}.max_position_embeddings=65536", model=QWEN))
    assert len(f) == 1
    assert "sets max_position_embeddings=65536, which vllm never receives" in f[0].message
    assert "verl sets it to the overridden max_position_embeddings 65536 > the engine's limit 32768" in f[0].message
    # YaRN x4 through override_config only: the trainer's limit is 131072, max_model_len 32768 still fits
    f = warnings(run(rollout_engine.override_context_unseen, *GPU, YARN, model=QWEN))
    assert len(f) == 1 and "rope_scaling=" in f[0].message and "mismatch" in f[0].message
    f = errors(run(rollout_engine.override_context_unseen, *GPU, YARN, f"{R}.max_model_len=65536", model=QWEN))
    assert len(f) == 1 and "max_model_len = 65536" in f[0].message and "limit 32768" in f[0].message


def test_fc510_silent_when_the_engine_gets_the_same_overrides(shared_models):
    same = f"+{R}.engine_kwargs.vllm.hf_overrides={{max_position_embeddings:65536}}"
    assert not run(
        rollout_engine.override_context_unseen, *GPU, f"{OC}.max_position_embeddings=65536", same, model=QWEN
    )
    # an override that does not touch the context (verl's examples: attention dropout)
    assert not run(rollout_engine.override_context_unseen, *GPU, f"{OC}.attention_dropout=0.0", model=QWEN)
    # the hf rollout reads the trainer's config
    assert not run(rollout_engine.override_context_unseen, f"{OC}.max_position_embeddings=65536", model=QWEN)


# -- FC419: LoRA target modules of the architecture -----------------------------------------------------------------
LORA = [f"{A}.model.lora_rank=8"]


def test_fc419_llama_names_on_phi3(shared_models):
    f = errors(
        run(
            lora_rules.lora_targets_exist,
            *LORA,
            f"{A}.model.target_modules=[q_proj,v_proj]",
            model="microsoft__Phi-3-mini-128k-instruct",
        )
    )
    assert (
        len(f) == 1
        and "target_modules = ['q_proj', 'v_proj']: none of them is a module of Phi3ForCausalLM" in f[0].message
    )
    assert f[0].fix.endswith("['down_proj', 'gate_up_proj', 'o_proj', 'qkv_proj']")
    f = warnings(
        run(
            lora_rules.lora_targets_exist,
            *LORA,
            f"{A}.model.target_modules=[qkv_proj,gate_proj]",
            model="microsoft__Phi-3-mini-128k-instruct",
        )
    )
    assert len(f) == 1 and "gate_proj is not a module of Phi3ForCausalLM" in f[0].message


def test_fc419_silent_on_real_targets(shared_models):
    qwen = "Qwen__Qwen2.5-0.5B-Instruct__resaved"
    assert not run(lora_rules.lora_targets_exist, *LORA, model=qwen)  # all-linear, verl's default
    assert not run(
        lora_rules.lora_targets_exist,
        *LORA,
        f"{A}.model.target_modules=[q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj]",
        model=qwen,
    )
    assert not run(lora_rules.lora_targets_exist, f"{A}.model.target_modules=[qkv_proj]", model=qwen)  # LoRA off


# -- FC721: keys verl 0.9.1 never reads -----------------------------------------------------------------------------
def test_fc721_dead_key_names_what_is_read():
    f = warnings(run(dead_keys.unread_verl_key, f"{A}.actor.grad_clip=0.5"))
    assert len(f) == 1 and f[0].keys == [f"{A}.actor.grad_clip", f"{A}.actor.optim.clip_grad"]
    assert "verl reads actor_rollout_ref.actor.optim.clip_grad instead (now 1.0" in f[0].message
    assert f[0].fix == f"set {A}.actor.optim.clip_grad=0.5 and remove {A}.actor.grad_clip"
    f = run(dead_keys.unread_verl_key, "critic.forward_micro_batch_size_per_gpu=4")
    assert len(f) == 1 and f[0].severity == "warning" and "nothing takes its place" in f[0].message


def test_fc721_nccl_timeout_is_dead_in_verl_but_read_natively():
    # verl 0.9.1's workers pass timeout_second=None; the native process group takes it (fsdpcfg.native.rank_faults)
    f = warnings(run(dead_keys.unread_verl_key, *GPU, f"{A}.nccl_timeout=1200"))
    assert [x.keys for x in f] == [[f"{A}.nccl_timeout"]] and "nothing takes its place" in f[0].message
    assert not run(dead_keys.unread_verl_key, f"{A}.nccl_timeout=1200")  # launcher=native


def test_fc721_silent_on_defaults_of_fsdpcfgs_tree_and_on_verls_default():
    # conf/config.yaml itself writes actor.grad_clip: 1.0 (the schema's key): not the user's
    assert not run(dead_keys.unread_verl_key)
    # verl's own default, written out (as a run folder's config.yaml or a verl dump writes every key): nothing
    # was meant to change, nothing to report
    assert not run(dead_keys.unread_verl_key, f"{A}.rollout.multi_stage_wake_up=false")
    f = run(dead_keys.unread_verl_key, f"{A}.rollout.multi_stage_wake_up=true")
    assert len(f) == 1 and f[0].severity == "warning" and f[0].fix == f"remove {A}.rollout.multi_stage_wake_up"


def test_fc721_table_keys_exist_in_verl_and_are_not_read_by_verl():
    """Each table key is one of verl 0.9.1's (its defaults), and its leaf name occurs in no verl module outside the
    config definitions (the table's proof, asked of the installed wheel, read as text)."""
    import re
    from importlib.util import find_spec

    from fsdpcfg import verlref

    defaults = verlref.defaults("ppo")
    table = dead_keys.dead_keys()
    assert len(table) >= 10
    spec = find_spec("verl")
    if spec is None or not spec.submodule_search_locations:
        return
    from pathlib import Path

    root = Path(next(iter(spec.submodule_search_locations)))
    code = [
        p.read_text(errors="replace")
        for p in root.rglob("*.py")
        if not str(p.relative_to(root)).startswith(("workers/config/", "trainer/config/"))
    ]
    for key, entry in table.items():
        assert key in defaults, key
        leaf = re.compile(rf"\b{re.escape(key.rsplit('.', 1)[-1])}\b")
        assert not [t for t in code if leaf.search(t)], f"{key}: verl code names it"
        if entry["instead"]:  # a key of verl's YAML, or a field of its config dataclass (then set with "+")
            leaf_of_instead = entry["instead"].rsplit(".", 1)[-1]
            assert entry["instead"] in defaults or leaf_of_instead in (root / "workers/config/critic.py").read_text()
