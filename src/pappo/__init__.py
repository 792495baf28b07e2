"""PAPPO: evidence pipeline for PPO and patch-aware credit assignment on code-repair agents."""

__version__ = "0.1.0"
