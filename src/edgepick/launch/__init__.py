"""Launchers: run a piece of work in its own process and watch it from outside (STYLE.md:
optimum-benchmark's launchers). Bench, the engine probe, the server and the test servers share
these: `start` / `AsyncChild` (die with edgepick, no inherited descriptors), `stop`."""

from edgepick.launch.isolated import WorkerOutcome, own_peak_rss, own_rss, run_isolated
from edgepick.launch.process import AsyncChild, die_with_parent, free_port, start
from edgepick.launch.stop import stop

__all__ = ["AsyncChild", "WorkerOutcome", "die_with_parent", "free_port", "own_peak_rss",
           "own_rss", "run_isolated", "start", "stop"]
