"""Bench: speed, memory and robustness measured on the target (SPEC §6)."""
