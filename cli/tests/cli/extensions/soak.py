#!/usr/bin/env python3
"""The PXP/1 extension the SIGKILL soak runs attached (cli/tests/cli/kill_attached.rs).

- gates every tool call (intercept `tool_call`): sends `session/appendEntry` {customType
  "soak-gate", data {call}} and, without waiting for its answer, allows the call; pith persists
  the entry before the allow releases the run (spec: extensions.md §1.2, ordering);
- registers the tool `stamp {n}`: appends {customType "soak-stamp", data {call}}, waits for the
  entry id, sleeps SOAK_STAMP_MS (default 5) and answers "stamped <entryId>";
- awaits `session_before_compact` (continues, so the model summarises).

SOAK_LOG (a file) gets one line per step, written before the step, so a test can kill pith in
the middle of one: `gate <tool> <call>`, `append <call>`, `tool <call>`, `compact`.
SOAK_CRASH=<n> makes the process exit with status 3 in the middle of its n-th `stamp` call,
after its appendEntry was answered and before the result (the fault case).
"""
import json
import os
import sys
import time

log_path = os.environ.get("SOAK_LOG")
stamp_ms = int(os.environ.get("SOAK_STAMP_MS", "5"))
crash_at = int(os.environ.get("SOAK_CRASH", "0"))
next_id = 0
stamps = 0
waiting = []  # lines that arrived while we waited for an answer of our own


def log(step):
    if log_path:
        with open(log_path, "a") as f:
            f.write(step + "\n")


def send(msg):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **msg}) + "\n")
    sys.stdout.flush()


def append(custom_type, call):
    """Sends session/appendEntry; returns the request id."""
    global next_id
    next_id += 1
    rid = f"s{next_id}"
    log(f"append {call}")
    send({"id": rid, "method": "session/appendEntry",
          "params": {"customType": custom_type, "data": {"call": call}}})
    return rid


def answer_of(rid):
    """Reads until pith answers `rid`; other lines wait their turn."""
    while True:
        line = sys.stdin.readline()
        if not line:
            sys.exit(0)
        msg = json.loads(line)
        if msg.get("id") == rid and "method" not in msg:
            return msg
        waiting.append(msg)


def read():
    if waiting:
        return waiting.pop(0)
    line = sys.stdin.readline()
    return json.loads(line) if line else None


while True:
    msg = read()
    if msg is None:
        break
    method, mid = msg.get("method"), msg.get("id")
    if method == "initialize":
        send({"id": mid, "result": {
            "protocolVersion": 1, "name": "soak", "version": "0",
            "subscribe": {"tool_call": "intercept", "session_before_compact": "intercept"},
            "customTypes": ["soak-gate", "soak-stamp"],
            "tools": [{"name": "stamp", "description": "Appends an entry and answers its id.",
                       "inputSchema": {"type": "object",
                                       "properties": {"n": {"type": "integer"}}}}]}})
    elif method == "intercept":
        ev = msg["params"]["event"]
        if ev["type"] == "tool_call":
            log(f"gate {ev['toolName']} {ev['toolCallId']}")
            append("soak-gate", ev["toolCallId"])
        elif ev["type"] == "session_before_compact":
            log("compact")
        send({"id": mid, "result": {}})
    elif method == "tool/call":
        call = msg["params"]["toolCallId"]
        log(f"tool {call}")
        stamps += 1
        entry = answer_of(append("soak-stamp", call))
        if stamps == crash_at:
            sys.exit(3)
        time.sleep(stamp_ms / 1000)
        send({"id": mid, "result": {
            "content": [{"type": "text", "text": f"stamped {entry['result']['entryId']}"}]}})
    elif method == "shutdown":
        send({"id": mid, "result": {}})
        break
    elif mid is not None and method is not None:
        send({"id": mid, "error": {"code": -32601, "message": "unknown method"}})
