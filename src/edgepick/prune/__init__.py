"""Depth pruning: rank blocks on calibration text, build files without the least important."""
