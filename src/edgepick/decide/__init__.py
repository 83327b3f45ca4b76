"""Decide: weigh the measurements for a scenario (docs/decide.md, seed 000 §3.2 and §7)."""
