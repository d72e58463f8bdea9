#!/bin/bash
# here-documents: one into a variable, one into a file
cat > /dev/null <<'EOF'
notes: it's "free" text with $dollars and `backquotes`
EOF
read -r -d '' OVERRIDES <<EOF || true
data.train_batch_size=64
actor_rollout_ref.model.path=Qwen/Qwen2.5-0.5B-Instruct
trainer.default_local_dir=$HOME/ckpt0
EOF
python3 -m verl.trainer.main_ppo $OVERRIDES trainer.total_epochs=1
