#!/usr/bin/env python3
"""Test extension: confirm /new (session_before_switch asks ui/confirm; "no" cancels)."""
import json
import sys


def send(msg):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **msg}) + "\n")
    sys.stdout.flush()


def ask(rid, method, params):
    send({"id": rid, "method": method, "params": params})
    for line in sys.stdin:
        msg = json.loads(line)
        if msg.get("id") == rid and "method" not in msg:
            return msg
    sys.exit(0)


for line in sys.stdin:
    msg = json.loads(line)
    method, mid = msg.get("method"), msg.get("id")
    if method == "initialize":
        send({"id": mid, "result": {"protocolVersion": 1, "name": "guard",
              "subscribe": {"session_before_switch": "intercept"}}})
    elif method == "intercept":
        answer = ask("c1", "ui/confirm", {"title": "Start a new session?", "message": "sure?"})
        ok = answer.get("result", {}).get("confirmed") is True
        send({"id": mid, "result": {} if ok else {"cancel": "kept the session"}})
    elif method == "shutdown":
        send({"id": mid, "result": {}})
        break
