#!/usr/bin/env python3
"""The Python twin of pith's Rust `PromptCounter` (actors/runtime/src/extension.rs): counts the
prompts of a session in `custom` entries (`{"count": n}`, customType `prompt-counter`), picks
the count up again from `session_start.customEntries` (so it survives restarts and resumes),
and registers `/count`. Hosted in a process it writes the same entries as the Rust one.

    pith -e examples/extensions/python/prompt_counter.py
"""
import json
import sys

CUSTOM_TYPE = "prompt-counter"
count = 0
next_id = 0


def send(msg):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", **msg}) + "\n")
    sys.stdout.flush()


def on_event(event):
    global count, next_id
    if event["type"] == "session_start":
        counts = [e["data"]["count"] for e in event.get("customEntries", [])
                  if e.get("customType") == CUSTOM_TYPE and isinstance(e.get("data"), dict)]
        count = counts[-1] if counts else 0
    elif event["type"] == "message_end" and event["message"].get("role") == "user":
        count += 1
        next_id += 1
        # Sent before the answer to the await: it lands before the run goes on.
        send({"id": f"p{next_id}", "method": "session/appendEntry",
              "params": {"customType": CUSTOM_TYPE, "data": {"count": count}}})


for line in sys.stdin:
    msg = json.loads(line)
    method, mid = msg.get("method"), msg.get("id")
    if method == "initialize":
        send({"id": mid, "result": {
            "protocolVersion": 1, "name": "prompt-counter", "version": "1.0.0",
            "subscribe": {"session_start": "await", "message_end": "await"},
            "customTypes": [CUSTOM_TYPE],
            "commands": [{"name": "count", "description": "How many prompts this session has had"}]}})
    elif method == "intercept":
        on_event(msg["params"]["event"])
        send({"id": mid, "result": {}})
    elif method == "command/run":
        send({"id": mid, "result": {"text": f"{count} prompt(s) in this session"}})
    elif method == "shutdown":
        send({"id": mid, "result": {}})
        break
