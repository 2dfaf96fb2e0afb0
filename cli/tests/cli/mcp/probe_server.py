#!/usr/bin/env python3
"""A real MCP stdio server for pith's end-to-end tests, on the MCP Python SDK's `MCPServer`
(the `mcp` package mcp-server-time brings into target/mcp-servers/venv).

    probe_server.py MARKER PIDFILE [--http]

Over stdio, or with `--http` as a streamable HTTP server at `http://127.0.0.1:<port>/mcp` on
a free port, printing `listening <port>` first.
Tools: `pid` (read-only: writes this process's pid to PIDFILE and returns it), `nap {ms}`
(sleeps, then answers `slept`), `die` (the process exits mid-call), `hang` (never
answers; writes PIDFILE.cancelled when the client cancels it), `spawn_child` (starts a grandchild whose command line holds MARKER, returns its pid).
MARKER is in this server's command line too, so a test finds what is left by it.
"""
import asyncio
import os
import subprocess
import sys

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

MARKER, PIDFILE = sys.argv[1], sys.argv[2]
server = MCPServer("probe")


@server.tool(name="pid", description="This server's process id.",
             annotations=ToolAnnotations(readOnlyHint=True))
def pid() -> str:
    with open(PIDFILE, "w") as f:
        f.write(str(os.getpid()))
    return str(os.getpid())


@server.tool(name="hang", description="Never answers.",
             annotations=ToolAnnotations(readOnlyHint=True))
async def hang() -> str:
    try:
        await asyncio.sleep(3600)
    except asyncio.CancelledError:
        # The client's notifications/cancelled reached the server.
        with open(PIDFILE + ".cancelled", "w") as f:
            f.write("cancelled")
        raise
    return "woke up"


@server.tool(name="nap", description="Sleeps `ms` milliseconds, then answers `slept`.",
             annotations=ToolAnnotations(readOnlyHint=True))
async def nap(ms: int) -> str:
    await asyncio.sleep(ms / 1000)
    return "slept"


@server.tool(name="die", description="Ends this server in the middle of the call.")
def die() -> str:
    os._exit(3)


@server.tool(name="spawn_child", description="Starts a grandchild process.")
def spawn_child() -> str:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", MARKER])
    return str(child.pid)


if "--http" in sys.argv:
    import socket

    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    print(f"listening {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(server.streamable_http_app(), log_level="warning")
    asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))
else:
    asyncio.run(server.run_stdio_async())
