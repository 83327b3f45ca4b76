"""Run one piece of work in its own process, watching its memory from outside.

A fresh process per candidate (bench) or per probe keeps memory figures clean, and a crash, an
OOM kill, a timeout or a load failure there becomes a failed outcome instead of taking the sweep
down (seed 000 §3.4). The parent samples the child's RSS and swap, which also lets it enforce `mem_limit` (emulating a device's
budget) on any OS without cgroups.
"""

from __future__ import annotations

import os
import signal
import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable

from edgepick.errors import EdgepickError
from edgepick.launch.process import spawn_context
from edgepick.launch.process import die_with_parent

# Each sample wakes a third thread on a machine whose cores the engine's threads keep busy, and
# llama.cpp's threads wait for each other at every op, so frequent samples can slow what is
# being measured (an A/B on 2 cores: prefill median 3% lower at 5 ms than at 25 ms, about the
# noise). Peak RSS itself comes exactly from the kernel's high-water mark; the samples only add
# swap and enforce --mem-limit.
_POLL_S = 0.025


@dataclass
class WorkerOutcome:
    ok: bool
    value: Any = None
    error: str | None = None
    peak_rss_bytes: int = 0  # the child's own high-water mark (VmHWM) when it reports one
    peak_rss_swap_bytes: int = 0  # max of RSS + swap sampled from outside
    # the split of the peak (docs/metrics.md): anonymous memory and file-backed pages (mapped
    # weights, libraries), each its highest sample; 0 = not sampled
    peak_rss_anon_bytes: int = 0
    peak_rss_file_bytes: int = 0
    wall_s: float = 0.0
    rss_samples: list[tuple[float, int]] = field(default_factory=list)


def _status_bytes(pid: int) -> dict[str, int]:
    out = {}
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith(("VmRSS:", "VmSwap:", "VmHWM:", "RssAnon:", "RssFile:")):
                    k, v = line.split(":", 1)
                    out[k] = int(v.split()[0]) * 1024
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        pass
    return out


def own_peak_rss() -> int:
    return _status_bytes(os.getpid()).get("VmHWM", 0)


def own_rss() -> int:
    return _status_bytes(os.getpid()).get("VmRSS", 0)


def own_rss_split() -> dict[str, int]:
    """This process's RssAnon and RssFile now, and its VmHWM."""
    st = _status_bytes(os.getpid())
    return {"anon": st.get("RssAnon", 0), "file": st.get("RssFile", 0), "hwm": st.get("VmHWM", 0)}


def clear_referenced() -> bool:
    """Clear the accessed bits of this process's pages (/proc/self/clear_refs), so that
    referenced_file_bytes later counts the file pages read since: after a model's load, the
    mapped pages it reads while running, not those only the load touched."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("1")
        return True
    except OSError:
        return False


def referenced_file_bytes(path: str | None = None) -> int | None:
    """Bytes of file-backed pages this process referenced since clear_referenced (the kernel's
    per-mapping `Referenced` of /proc/self/smaps, over mappings of a file, or of `path` only);
    None off Linux."""
    total, file_backed = 0, False
    real = os.path.realpath(path) if path else None
    try:
        with open("/proc/self/smaps") as fh:
            for line in fh:
                head = line.split(None, 5)
                if head and "-" in head[0] and not head[0].endswith(":"):
                    file_backed = len(head) >= 5 and head[4] != "0"  # inode: a file's mapping
                    if real is not None:
                        file_backed = len(head) == 6 and head[5].strip() == real
                elif file_backed and line.startswith("Referenced:"):
                    total += int(line.split()[1]) * 1024
    except OSError:
        return None
    return total


def _child(conn: Any, fn: Callable, args: tuple, kwargs: dict) -> None:
    # a parent killed with SIGKILL cannot stop its worker; without this the orphan would keep
    # the CPU busy (and skew the next measurement) until its configuration finished
    die_with_parent(signal.SIGKILL)
    try:
        value = fn(*args, **kwargs)
        conn.send(("ok", value, own_peak_rss()))
    except EdgepickError as exc:
        conn.send(("error", str(exc), own_peak_rss()))
    except MemoryError:
        conn.send(("error", "out of memory (MemoryError)", own_peak_rss()))
    except BaseException as exc:  # report anything, the parent decides
        tb = traceback.format_exc(limit=3).strip().splitlines()[-1]
        conn.send(("error", f"{type(exc).__name__}: {exc} [{tb}]", own_peak_rss()))
    finally:
        conn.close()


def run_isolated(fn: Callable, *args: Any, mem_limit: int | None = None,
                 timeout: float | None = None, **kwargs: Any) -> WorkerOutcome:
    """Call `fn(*args, **kwargs)` in a spawned process; `fn` must be importable (top level)."""
    ctx = spawn_context()
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(child, fn, args, kwargs), daemon=True)
    t0 = time.perf_counter()
    proc.start()
    child.close()
    peak = {"rss_swap": 0, "killed_for": None, "anon": 0, "file": 0}
    samples: list[tuple[float, int]] = []
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set() and proc.is_alive():
            st = _status_bytes(proc.pid)
            total = st.get("VmRSS", 0) + st.get("VmSwap", 0)
            if total:
                peak["rss_swap"] = max(peak["rss_swap"], total)
                peak["anon"] = max(peak["anon"], st.get("RssAnon", 0))
                peak["file"] = max(peak["file"], st.get("RssFile", 0))
                samples.append((time.perf_counter() - t0, total))
            if mem_limit and total > mem_limit:
                peak["killed_for"] = total
                os.kill(proc.pid, signal.SIGKILL)
                return
            time.sleep(_POLL_S)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    msg = None
    try:
        deadline = None if timeout is None else t0 + timeout
        while True:
            remaining = None if deadline is None else max(0.0, deadline - time.perf_counter())
            if parent.poll(min(0.2, remaining) if remaining is not None else 0.2):
                try:
                    msg = parent.recv()
                except EOFError:
                    msg = None
                break
            if not proc.is_alive():
                break
            if deadline is not None and time.perf_counter() >= deadline:
                os.kill(proc.pid, signal.SIGKILL)
                break
    finally:
        proc.join(timeout=10)
        if proc.is_alive():
            proc.kill()
            proc.join()
        stop.set()
        watcher.join()
    wall = time.perf_counter() - t0
    samples = samples[:: max(1, len(samples) // 400)]
    if msg is not None:
        status, value, hwm = msg
        out = WorkerOutcome(ok=status == "ok", wall_s=wall, peak_rss_bytes=hwm,
                            peak_rss_swap_bytes=max(peak["rss_swap"], hwm), rss_samples=samples,
                            peak_rss_anon_bytes=peak["anon"], peak_rss_file_bytes=peak["file"])
        if status == "ok":
            out.value = value
        else:
            out.error = value
        return out
    if peak["killed_for"] is not None:
        err = (f"exceeded the memory limit of {mem_limit / 2**20:.0f} MiB "
               f"(RSS+swap reached {peak['killed_for'] / 2**20:.0f} MiB); killed")
    elif timeout is not None and wall >= timeout:
        err = f"timed out after {timeout:.0f} s; killed"
    else:
        code = proc.exitcode
        if code is not None and code < 0:
            name = signal.Signals(-code).name
            hint = " (likely the kernel's OOM killer)" if name == "SIGKILL" else ""
            err = f"worker died with {name}{hint}"
        else:
            err = f"worker exited with code {code} without a result"
    return WorkerOutcome(ok=False, error=err, wall_s=wall, peak_rss_swap_bytes=peak["rss_swap"],
                         peak_rss_bytes=peak["rss_swap"], rss_samples=samples)
