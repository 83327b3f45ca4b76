"""Bench: speed, memory and robustness measured on the target (docs/bench.md)."""
