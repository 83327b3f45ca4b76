"""Decide: weigh the measurements for a scenario (SPEC §8, seed 000 §3.2 and §7)."""
