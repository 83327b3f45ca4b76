"""The one launcher: children inherit no descriptor (an inheritable listening socket included),
die with their parent, and are awaited from asyncio."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time

from edgepick.launch import AsyncChild, start, stop


def _wait(check, timeout=30.0):
    end = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < end
        time.sleep(0.02)


def _links(pid: int) -> set[str]:
    """What the process's descriptors point at; one the starting interpreter opens and closes
    between the listing and the read is gone, not inherited."""
    out = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            out.add(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except FileNotFoundError:
            pass
    return out


def test_child_inherits_no_descriptor_even_an_inheritable_socket():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    sock.set_inheritable(True)  # as a server hands its socket to workers
    try:
        proc = start([sys.executable, "-c", "import time; time.sleep(60)"])
        try:
            _wait(lambda: os.path.exists(f"/proc/{proc.pid}/fd"))
            mine = os.readlink(f"/proc/self/fd/{sock.fileno()}")
            assert mine not in _links(proc.pid)
        finally:
            stop(proc, timeout=5)
    finally:
        sock.close()


def test_child_dies_with_its_parent_even_killed_outright(tmp_path):
    pid_file = tmp_path / "grandchild"
    parent = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys, time
        from edgepick.launch import start
        child = start([sys.executable, "-c", "import time; time.sleep(120)"])
        open({str(pid_file)!r}, "w").write(str(child.pid))
        time.sleep(120)
    """)])
    try:
        _wait(lambda: pid_file.exists() and pid_file.read_text())
        child = int(pid_file.read_text())
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        def gone() -> bool:
            try:
                with open(f"/proc/{child}/stat") as fh:
                    return fh.read().split(")")[1].split()[0] == "Z"
            except FileNotFoundError:
                return True
        _wait(gone)
    finally:
        if parent.poll() is None:
            parent.kill()


def test_async_child_is_awaited_without_a_thread():
    async def main() -> int:
        child = AsyncChild.start([sys.executable, "-c", "import sys; sys.exit(3)"])
        return await asyncio.wait_for(child.wait(), 30)

    assert asyncio.run(main()) == 3


def test_async_child_serves_several_waiters_at_once():
    """A supervisor waits for the engine's exit while stop() waits too: both get the code."""
    async def main() -> list[int]:
        child = AsyncChild.start([sys.executable, "-c", "import time; time.sleep(60)"])
        waiters = [asyncio.create_task(child.wait()) for _ in range(2)]
        await asyncio.sleep(0)  # both waiting
        child.terminate()
        return await asyncio.wait_for(asyncio.gather(*waiters), 30)

    assert asyncio.run(main()) == [-signal.SIGTERM, -signal.SIGTERM]
