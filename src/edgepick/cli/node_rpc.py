"""`edgepick node rpc`: lend this machine to another one's llama.cpp as a device of its own
(llama.cpp's rpc-server, tools/rpc), so a model too big for one board runs across two.

rpc-server has no authentication and no encryption: whoever reaches its port can allocate
memory on this machine and run ggml graphs there. It binds to 127.0.0.1 unless an address is
named, and naming one prints what that exposes.
"""

from __future__ import annotations

import signal

import typer

from edgepick.cli.output import err_console
from edgepick.launch.process import start
from edgepick.launch.stop import stop
from edgepick.llama_tools import tool_path

LOOPBACK = ("127.0.0.1", "localhost", "::1")
EXPOSED = ("rpc-server has no authentication and no encryption: anyone who can reach {host}:{port} "
           "can use this machine's memory and compute through it. Bind it to a private network "
           "only (a cable between the two boards, a VPN), never to the internet.")


def rpc_argv(host: str, port: int, threads: int | None, cache: bool) -> list[str]:
    argv = [tool_path("ggml-rpc-server"), "-H", host, "-p", str(port)]
    if threads:
        argv += ["-t", str(threads)]
    return argv + (["-c"] if cache else [])


def rpc_command(
    host: str = typer.Option("127.0.0.1", "--host", help="address to bind; another machine "
                             "needs this machine's LAN address (read the warning)"),
    port: int = typer.Option(50052, "--port", min=1, max=65535, help="TCP port (rpc-server's "
                             "default)"),
    threads: int = typer.Option(None, "--threads", min=1, help="CPU threads of the device"),
    cache: bool = typer.Option(False, "--cache", help="keep received tensors in a local file "
                               "cache, so a second load sends less (rpc-server -c)"),
) -> None:
    """Run llama.cpp's rpc-server here until Ctrl-C, so another machine can place layers on
    this one (`--rpc HOST:PORT`; planned with `edgepick fit --rpc`, docs/placement.md).

    It binds to 127.0.0.1 unless --host names another address. rpc-server has no authentication."""
    if host not in LOOPBACK:
        err_console.print(f"[bold yellow]warning:[/] {EXPOSED.format(host=host, port=port)}")
    else:
        err_console.print("[dim]bound to 127.0.0.1: only this machine can use it (--host ADDRESS "
                          "to lend it to another; rpc-server has no authentication)[/]")
    proc = start(rpc_argv(host, port, threads, cache))
    err_console.print(f"rpc-server at {host}:{port}; on the other machine: --rpc {host}:{port}")
    try:
        raise typer.Exit(proc.wait())
    except KeyboardInterrupt:
        stop(proc, signal.SIGTERM, timeout=10)
