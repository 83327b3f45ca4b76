"""Watching a running `edgepick serve` against the figures the decision was based on (seed 000
§7.4)."""
