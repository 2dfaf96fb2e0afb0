#!/usr/bin/env python3
"""Test extension: on every tool_call it sends a custom message (session/sendMessage with
NOTES_DELIVER_AS, default steer) before it allows the call; on agent_settled of the first
prompt it sends one with triggerTurn."""
import json
import os
import sys

deliver_as = os.environ.get("NOTES_DELIVER_AS", "steer")
n = 0
settled = 0


def send(msg):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **msg}) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    msg = json.loads(line)
    method, mid = msg.get("method"), msg.get("id")
    if method == "initialize":
        send({"id": mid, "result": {"protocolVersion": 1, "name": "notes",
              "subscribe": {"tool_call": "intercept", "agent_settled": "observe"}}})
    elif method == "intercept":
        n += 1
        send({"id": f"n{n}", "method": "session/sendMessage",
              "params": {"customType": "note", "content": f"note {n}", "display": True,
                         "deliverAs": deliver_as}})
        send({"id": mid, "result": {}})
    elif method == "event" and msg["params"]["event"]["type"] == "agent_settled":
        settled += 1
        if settled == 1 and os.environ.get("NOTES_TRIGGER"):
            send({"id": "t", "method": "session/sendMessage",
                  "params": {"customType": "note", "content": "wake up", "triggerTurn": True}})
    elif method == "shutdown":
        send({"id": mid, "result": {}})
        break
