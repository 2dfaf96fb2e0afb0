#!/usr/bin/env python3
"""Test extension: the command /pick asks ui/select, records the choice with
session/appendEntry and answers with the text "picked <value>"."""
import json
import sys

waiting = {}


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
        send({"id": mid, "result": {"protocolVersion": 1, "name": "picker",
              "commands": [{"name": "pick", "description": "pick one"}]}})
    elif method == "command/run":
        answer = ask("q1", "ui/select", {"title": "Pick", "options": ["A", "B"]})
        value = answer.get("result", {}).get("value")
        ask("q2", "session/appendEntry", {"customType": "picked", "data": {"value": value}})
        send({"id": mid, "result": {"text": f"picked {value}"}})
    elif method == "shutdown":
        send({"id": mid, "result": {}})
        break
