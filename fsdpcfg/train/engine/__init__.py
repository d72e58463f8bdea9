"""The training engine of the native loop: FSDP/FSDP2 sharding (:mod:`.fsdp`), the optimizer and learning-rate
schedule (:mod:`.optim`) and the log-prob forward (:mod:`.forward`)."""
