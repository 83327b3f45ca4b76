"""`edgepick tune`: the fastest runtime settings whose fidelity and gates still pass, found
without measuring the whole grid (tune/search.py)."""
