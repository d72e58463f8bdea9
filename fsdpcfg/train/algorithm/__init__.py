"""The RL algorithm of the native loop, with verl 0.9.1's semantics (``verl/trainer/ppo/core_algos.py``).

Public API: :mod:`fsdpcfg.train.algorithm.losses` (``agg_loss``, ``kl_penalty``, ``entropy_from_logits``,
``masked_mean``) and :mod:`fsdpcfg.train.algorithm.grpo` (``grpo_advantages``, ``policy_loss_vanilla``,
``token_level_rewards``, ``ppo_actor_loss``).
"""
