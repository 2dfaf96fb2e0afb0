#!/usr/bin/env python3
"""Test extension: the tool `tally` adds `n` to a running total, reporting progress on the way
(tool/progress) and keeping the total in its result's `details` (pi's pattern), so the total
follows the branch: on session_start (any reason) and session_tree it reads the branch back
with session/getBranch. `/tally` shows the total."""
import json
import sys

total = 0
waiting = []


def send(msg):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **msg}) + "\n")
    sys.stdout.flush()


def ask(rid, method, params):
    send({"id": rid, "method": method, "params": params})
    for line in sys.stdin:
        msg = json.loads(line)
        if msg.get("id") == rid and "method" not in msg:
            return msg
        waiting.append(msg)
    sys.exit(0)


def restore():
    global total
    page = ask("b", "session/getBranch", {"types": ["message"]})
    total = 0
    for e in page.get("result", {}).get("entries", []):
        m = e.get("message", {})
        if m.get("role") == "toolResult" and m.get("toolName") == "tally":
            total = (m.get("details") or {}).get("total", total)


def lines():
    while True:
        if waiting:
            yield waiting.pop(0)
            continue
        line = sys.stdin.readline()
        if not line:
            return
        yield json.loads(line)


for msg in lines():
    method, mid = msg.get("method"), msg.get("id")
    if method == "initialize":
        send({"id": mid, "result": {
            "protocolVersion": 1, "name": "tally", "version": "1.0.0",
            "subscribe": {"session_start": "await", "session_tree": "await"},
            "tools": [{"name": "tally", "description": "Add n to the running total",
                       "inputSchema": {"type": "object",
                                       "properties": {"n": {"type": "integer"}},
                                       "required": ["n"]}}],
            "commands": [{"name": "tally", "description": "Show the total"}]}})
    elif method == "intercept":
        restore()
        send({"id": mid, "result": {}})
    elif method == "tool/call":
        p = msg["params"]
        n = p["arguments"]["n"]
        send({"method": "tool/progress", "params": {
            "toolCallId": p["toolCallId"],
            "content": [{"type": "text", "text": f"adding {n} to {total}"}]}})
        total += n
        send({"id": mid, "result": {"content": [{"type": "text", "text": f"total {total}"}],
                                    "details": {"total": total}}})
    elif method == "command/run":
        send({"id": mid, "result": {"text": f"total {total}"}})
    elif method == "shutdown":
        send({"id": mid, "result": {}})
        break
