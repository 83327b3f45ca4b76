"""Run a plan's measurements on a device farm: jobs, executors (local, Ray), nodes (docs/scale.md).

Measure on the target device, never trust a spec sheet (seed 000 §3.4, seed 003): each bench, eval
and fidelity job runs on the machine that is that device, and its rows come back to the driver,
which alone writes its store. Nothing here imports Ray until the Ray executor is asked for.
"""
