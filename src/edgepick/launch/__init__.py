"""Launchers: run a piece of work in its own process and watch it from outside (STYLE.md:
optimum-benchmark's launchers). Bench, the engine probe and the server share this one."""

from edgepick.launch.isolated import WorkerOutcome, own_peak_rss, own_rss, run_isolated
from edgepick.launch.stop import stop

__all__ = ["WorkerOutcome", "own_peak_rss", "own_rss", "run_isolated", "stop"]
