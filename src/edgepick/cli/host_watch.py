"""How busy the host was while a command measured this machine, read as bench reads it
(bench/hostload.py: other work's share of all CPUs from /proc/stat, our own process tree left
out). A measurement that is stored and used later (the probe's bandwidth and compute, the
engine's decode calibration, which every `fit --device local` estimate then scales by) is not
kept when it was contended, unless the user says so: a busy neighbour would otherwise sit in
every later estimate without a word (seed 000 §5.2: background load halves the speed)."""

from __future__ import annotations

from edgepick.bench import hostload
from edgepick.cli.output import err_console
from edgepick.errors import EdgepickError

ALLOW_HELP = ("keep a measurement taken while other work used more than a quarter of the CPUs "
              "(by default it is refused, as tune refuses to choose from one)")


class HostWatch:
    """`with HostWatch() as w: measure()`, then `w.load` (a host_load dict or None)."""

    def __init__(self, share: float = hostload.CONTENDED_SHARE) -> None:
        self.share = share
        self.load: dict | None = None
        self._own = hostload.OwnTree()
        self._start: hostload.Snapshot | None = None

    def __enter__(self) -> "HostWatch":
        self._start = hostload.snapshot(self._own)
        return self

    def read(self) -> dict | None:
        """The load from the start until now (may be called inside the block)."""
        end = hostload.snapshot(self._own)
        if self._start is None or end is None:
            return None
        self.load = hostload.load_between(self._start, end)
        return self.load

    def __exit__(self, *exc) -> None:
        self.read()

    @property
    def contended(self) -> bool:
        return hostload.is_contended(self.load, self.share)


def keep_or_refuse(watch: HostWatch, what: str, allow: bool,
                   kept_because: str = "--allow-contended") -> None:
    """Say when `what` was measured on a busy host; refuse it (EdgepickError) unless `allow`
    (then say why it is kept)."""
    load = watch.read() if watch.load is None else watch.load
    if not hostload.is_contended(load, watch.share):
        return
    seen = hostload.describe(load)
    if allow:
        err_console.print(f"[yellow]{what} measured on a busy host ({seen}); kept "
                          f"({kept_because})[/]", highlight=False)
        return
    raise EdgepickError(f"{what} was measured on a busy host ({seen}, more than "
                        f"{round(watch.share * 100)}% of the CPUs): it would say more about "
                        "the other work than about this machine, so it is not saved; stop the "
                        "other work and run again, or pass --allow-contended to keep it")
