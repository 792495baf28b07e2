"""RL kernels and training pieces: losses, advantages, the PPO-family update."""
