"""Starting a child process the same way everywhere: it dies with edgepick, inherits no
descriptor but stdin/stdout/stderr, and can be waited for from asyncio without a thread.

Every engine, tool and test server edgepick starts goes through `start` (or `AsyncChild` for the
serving engine), so none of them is ever orphaned or handed edgepick's listening socket.
"""

from __future__ import annotations

import asyncio
import ctypes
import multiprocessing as mp
import os
import signal
import socket
import subprocess
from typing import IO, Any, Sequence

from edgepick.errors import EdgepickError

PR_SET_PDEATHSIG = 1


def _libc():
    return ctypes.CDLL(None, use_errno=True)


try:  # resolved in the parent: a forked child of a threaded process should not load libraries
    _LIBC = _libc()
except OSError:
    _LIBC = None


def die_with_parent(sig: int = signal.SIGTERM) -> None:
    """In a child (before exec, or first thing in a worker): `sig` when the parent dies.

    The kernel ties this to the thread that forked the child, so start children from a
    long-lived thread (the main one or the event loop's)."""
    if _LIBC is None:
        return
    try:
        _LIBC.prctl(PR_SET_PDEATHSIG, sig)
        if os.getppid() == 1:  # the parent died before prctl took effect
            os._exit(1)
    except (OSError, AttributeError):
        pass


def start(argv: Sequence[str], *, stdin: IO | int | None = subprocess.DEVNULL,
          new_session: bool = False, death_signal: int = signal.SIGTERM,
          **popen: Any) -> subprocess.Popen:
    """`subprocess.Popen(argv, **popen)` with die-with-parent and every descriptor above 2
    closed on exec (the listening socket of a server edgepick runs included).

    `new_session` puts the child in its own session: a Ctrl-C or `timeout` aimed at edgepick's
    process group then does not reach it first (edgepick stops it on the way out)."""
    try:
        return subprocess.Popen(list(argv), stdin=stdin, close_fds=True,
                                start_new_session=new_session,
                                preexec_fn=lambda: die_with_parent(death_signal), **popen)
    except OSError as exc:
        raise EdgepickError(f"{argv[0]}: cannot run ({exc.strerror or exc})") from None


def run_child(argv: Sequence[str], *, timeout_s: float | None = None,
              input: str | None = None) -> subprocess.CompletedProcess:
    """A short child run to its end, its output captured as text: started like `start` (dies
    with edgepick, no inherited descriptors, stdin closed unless `input` is given), killed at
    `timeout_s`. Raises what `subprocess.run` raises: OSError when it cannot start,
    `subprocess.TimeoutExpired` past the timeout."""
    return subprocess.run(list(argv), input=input,
                          stdin=None if input is not None else subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=timeout_s, close_fds=True,
                          preexec_fn=die_with_parent)


def spawn_context():
    """The one multiprocessing context edgepick's workers use: spawn, so a worker never inherits
    a loaded model, a lock held by another thread, or an event loop."""
    return mp.get_context("spawn")


class AsyncChild:
    """A started child awaited from asyncio through a pidfd (Linux ≥ 5.3): no watcher thread,
    and it works under any event loop (uvloop's own subprocess support passes descriptors on)."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.popen = proc
        self.pid = proc.pid
        self._fd: int | None = None
        self._exit: asyncio.Future | None = None
        try:
            self._fd = os.pidfd_open(proc.pid)
        except (AttributeError, OSError):
            pass

    @classmethod
    def start(cls, argv: Sequence[str], **kwargs: Any) -> "AsyncChild":
        return cls(start(argv, **kwargs))

    @property
    def returncode(self) -> int | None:
        return self.popen.poll()

    async def wait(self) -> int:
        """The exit code, once the child has exited; any number of tasks may wait at once."""
        if self.popen.poll() is None:
            if self._fd is None:
                while self.popen.poll() is None:
                    await asyncio.sleep(0.1)
            else:
                await asyncio.shield(self._exited())
        self._close_fd()
        return self.popen.returncode

    def _exited(self) -> asyncio.Future:
        # one reader per descriptor: a second add_reader would replace the first waiter's
        if self._exit is None:
            loop = asyncio.get_running_loop()
            fut = self._exit = loop.create_future()
            fd = self._fd

            def readable() -> None:
                loop.remove_reader(fd)
                self.popen.poll()
                if not fut.done():
                    fut.set_result(None)

            loop.add_reader(fd, readable)
        return self._exit

    def send_signal(self, sig: int) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def _close_fd(self) -> None:
        if self._fd is not None:
            # a reader still registered on the pidfd must go first: once closed, its number is
            # reused (by a socket), and the stale reader fires on it in a loop (uvloop refuses
            # to remove it then), stalling the event loop
            fut, self._exit = self._exit, None
            if fut is not None and not fut.done():
                try:
                    fut.get_loop().remove_reader(self._fd)
                    fut.set_result(None)
                except (RuntimeError, ValueError, OSError):
                    pass  # the loop is gone (a child collected at interpreter exit)
            os.close(self._fd)
            self._fd = None

    def __del__(self) -> None:
        self._close_fd()


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now (a child binds it next)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
