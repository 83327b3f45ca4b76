"""Fit: what can run at all on the target, before anything runs (docs/fit.md)."""
