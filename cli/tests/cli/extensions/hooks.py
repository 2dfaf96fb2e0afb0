#!/usr/bin/env python3
"""Test extension: cancels forks and switches to a new session, and supplies compaction
summaries (session_before_fork/_switch/_compact intercepts); logs session_compact."""
import json
import sys


def send(msg):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **msg}) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    msg = json.loads(line)
    method, mid = msg.get("method"), msg.get("id")
    if method == "initialize":
        send({"id": mid, "result": {"protocolVersion": 1, "name": "hooks",
              "subscribe": {"session_before_fork": "intercept",
                            "session_before_switch": "intercept",
                            "session_before_compact": "intercept",
                            "session_compact": "await"}}})
    elif method == "intercept":
        ev = msg["params"]["event"]
        t = ev["type"]
        if t == "session_before_fork":
            result = {"cancel": "no forks here"}
        elif t == "session_before_switch":
            result = {"cancel": "stay"} if ev["reason"] == "new" else {}
        elif t == "session_before_compact":
            n = len(ev["preparation"]["messagesToSummarize"])
            result = {"summary": f"EXT summary of {n}", "details": {"by": "hooks"}}
        else:
            send({"id": "a", "method": "session/appendEntry",
                  "params": {"customType": "hook-log", "data": {"compact": ev["fromExtension"]}}})
            result = {}
        send({"id": mid, "result": result})
    elif method == "shutdown":
        send({"id": mid, "result": {}})
        break
