"""Rollout adapters of the native loop. ``hf`` (:mod:`.hf`): an unsharded Hugging Face replica per rank."""
