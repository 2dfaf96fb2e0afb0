#!/usr/bin/env python3
"""Test extension: two tools. `slow` answers after 400 ms and declares a prompt snippet and
guidelines (with the blanks and repeats pi normalises away); `quick` answers at once and has
no snippet. `slow` is `executionMode: "sequential"` unless TIMED_SLOW_MODE says otherwise.
Calls are answered on threads, so the extension itself never orders them."""
import json
import os
import sys
import threading
import time

lock = threading.Lock()


def send(msg):
    with lock:
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", **msg}) + "\n")
        sys.stdout.flush()


def answer(mid, name):
    if name == "slow":
        time.sleep(0.4)
    send({"id": mid, "result": {"content": [{"type": "text", "text": f"{name} done"}]}})


slow = {"name": "slow", "description": "Waits a little.",
        "inputSchema": {"type": "object", "properties": {}},
        "promptSnippet": "Wait  a\n little  ",
        "promptGuidelines": ["  Call slow before quick ", "", "Call slow before quick"],
        "executionMode": os.environ.get("TIMED_SLOW_MODE", "sequential")}
quick = {"name": "quick", "description": "Answers at once.",
         "inputSchema": {"type": "object", "properties": {}}}

for line in sys.stdin:
    msg = json.loads(line)
    method, mid = msg.get("method"), msg.get("id")
    if method == "initialize":
        send({"id": mid, "result": {"protocolVersion": 1, "name": "timed",
              "tools": [slow, quick]}})
    elif method == "tool/call":
        threading.Thread(target=answer, args=(mid, msg["params"]["name"])).start()
    elif method == "shutdown":
        send({"id": mid, "result": {}})
        break
