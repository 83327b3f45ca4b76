"""Stopping a child process the same way everywhere: ask first, then kill once it has had
its time to finish."""

from __future__ import annotations

import signal
import subprocess


def stop(proc: subprocess.Popen, sig: int = signal.SIGTERM, timeout: float = 30.0) -> None:
    """Send `sig`, wait up to `timeout` seconds, then SIGKILL; returns once the child is reaped."""
    if proc.poll() is not None:
        return
    proc.send_signal(sig)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
