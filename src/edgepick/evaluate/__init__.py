"""Evaluate: task quality on the user's data, the gap to the reference, and fidelity."""
