"""`edgepick serve` as a child process, for tests and benchmarks (dev-only, so outside the
package): started on a free loopback port, its URL read from the line it prints, waited for until
/health answers 200, and always stopped."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from edgepick.backends.llama_server_client import wait_healthy
from edgepick.errors import EdgepickError
from edgepick.launch.process import start
from edgepick.launch.stop import stop


@contextmanager
def spawn_serve(args: list[str], log: Path, env: dict | None = None, ready: bool = True,
                timeout_s: float = 180.0,
                new_session: bool = False) -> Iterator[tuple[str, subprocess.Popen]]:
    """Yields (http://127.0.0.1:PORT, process); stderr goes to `log`. `new_session` makes serve
    the leader of its own process group, as a shell makes a foreground job."""
    with open(log, "w") as fh:
        proc = start([sys.executable, "-m", "edgepick", "serve", "--port", "0", *args],
                     stdout=subprocess.PIPE, stderr=fh, text=True,
                     env=dict(os.environ, **(env or {})), new_session=new_session)
    box: list[str] = []

    def read_url() -> None:
        for line in proc.stdout:  # type: ignore[union-attr]
            m = re.search(r"(http://127\.0\.0\.1:\d+)/v1", line)
            if m and not box:
                box.append(m.group(1))

    threading.Thread(target=read_url, daemon=True).start()
    try:
        end = time.monotonic() + timeout_s
        while not box:
            if proc.poll() is not None:
                raise EdgepickError(f"edgepick serve exited with {proc.returncode}: "
                                    f"{log.read_text()[-1500:]}")
            if time.monotonic() > end:
                raise EdgepickError(f"edgepick serve printed no URL after {timeout_s:.0f} s; "
                                    f"see {log}")
            time.sleep(0.05)
        if ready:
            try:
                wait_healthy(box[0] + "/health", lambda: proc.poll() is None,
                             max(end - time.monotonic(), 0.0), "edgepick serve")
            except EdgepickError as exc:
                raise EdgepickError(f"{exc}: {log.read_text()[-1500:]}") from None
        yield box[0], proc
    finally:
        stop(proc)
