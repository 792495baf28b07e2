"""The policy: pinned checkpoints, tokenizer and chat protocol, batched rollouts, LoRA and critic."""
