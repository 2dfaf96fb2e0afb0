#!/usr/bin/env python3
"""A fault-injecting PXP/1 extension for pith's tests (spec: extensions.md §4).

FAULT_MODE says what it does when asked about a tool call (intercept tool_call) or when its
tool `flaky` is called:
  ok       allows every call; `flaky` answers "flaky ok"
  hang     never answers the tool_call intercept
  crash    exits with status 3 on the tool_call intercept
  garbage  writes a line that is not JSON on the tool_call intercept
  longline writes a 17 MiB line on the tool_call intercept
  tool     exits with status 3 in the middle of a `flaky` call (after a progress note)
FAULT_LOG (a file) gets one JSON line per event it saw: {"start": n} and the events.
"""
import json
import os
import sys

mode = os.environ.get("FAULT_MODE", "ok")
log_path = os.environ.get("FAULT_LOG")


def log(obj):
    if log_path:
        with open(log_path, "a") as f:
            f.write(json.dumps(obj) + "\n")


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


log({"pid": os.getpid()})
for line in sys.stdin:
    msg = json.loads(line)
    method, mid = msg.get("method"), msg.get("id")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": mid, "result": {
            "protocolVersion": 1, "name": "fault", "version": "0",
            "subscribe": {"tool_call": "intercept", "session_start": "observe"},
            "tools": [{"name": "flaky", "description": "a tool that may crash",
                       "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}},
                                       "required": ["n"]}}]}})
    elif method == "event":
        ev = msg["params"]["event"]
        log({"event": ev["type"], "reason": ev.get("reason")})
    elif method == "intercept":
        ev = msg["params"]["event"]
        log({"intercept": ev["type"], "tool": ev.get("toolName")})
        if ev.get("toolName") == "flaky" or mode in ("ok", "tool"):
            send({"jsonrpc": "2.0", "id": mid, "result": {}})
        elif mode == "hang":
            pass
        elif mode == "crash":
            sys.stderr.write("fault: crashing on purpose\n")
            sys.stderr.flush()
            sys.exit(3)
        elif mode == "garbage":
            sys.stdout.write("this is not json\n")
            sys.stdout.flush()
        elif mode == "longline":
            sys.stdout.write("x" * (17 * 1024 * 1024) + "\n")
            sys.stdout.flush()
    elif method == "tool/call":
        if mode == "tool":
            send({"jsonrpc": "2.0", "method": "tool/progress",
                  "params": {"toolCallId": msg["params"]["toolCallId"],
                             "content": [{"type": "text", "text": "half way"}]}})
            sys.stderr.write("fault: dying mid-call\n")
            sys.stderr.flush()
            sys.exit(3)
        send({"jsonrpc": "2.0", "id": mid, "result": {
            "content": [{"type": "text", "text": "flaky ok"}],
            "details": {"n": msg["params"]["arguments"]["n"]}}})
    elif method == "shutdown":
        send({"jsonrpc": "2.0", "id": mid, "result": {}})
        break
