"""Launchers: run a piece of work in its own process and watch it from outside (after
optimum-benchmark's launchers). Bench, the engine probe, the server and the test servers share
these: `start` / `AsyncChild` (die with edgepick, no inherited descriptors), `run_child` (a
short one to its end, bounded in time), `spawn_context`, `stop`. Every child process edgepick
starts goes through here."""

from edgepick.launch.isolated import WorkerOutcome, own_peak_rss, own_rss, run_isolated
from edgepick.launch.process import (AsyncChild, die_with_parent, free_port, run_child,
                                     spawn_context, start)
from edgepick.launch.stop import stop

__all__ = ["AsyncChild", "WorkerOutcome", "die_with_parent", "free_port", "own_peak_rss",
           "own_rss", "run_child", "run_isolated", "spawn_context", "start", "stop"]
