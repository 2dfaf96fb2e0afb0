#!/usr/bin/env python3
"""Permission gate for pith (PXP/1, standard library only).

Use cases 1 and 2 of the spec (extensions.md §2): dangerous bash commands (rm -rf, sudo,
git push --force) are confirmed with ui/select when there is a UI and blocked when there is
none; writes and edits of protected paths (.env, .git/, lock files) are always blocked with
the reason the model gets.

    pith -e examples/extensions/python/permission_gate.py
"""
import json
import re
import sys

DANGEROUS = re.compile(r"\brm\s+-[a-zA-Z]*[rf]|\bsudo\b|\bgit\s+push\b.*(--force|-f\b)")
PROTECTED = re.compile(r"(^|/)(\.env(\..*)?|\.git/.*|package-lock\.json|Cargo\.lock)$")

next_id = 0
waiting = []  # lines that arrived while we waited for our own answer


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def read():
    if waiting:
        return waiting.pop(0)
    line = sys.stdin.readline()
    return json.loads(line) if line else None


def ask(method, params):
    """Sends a request to pith and waits for its answer (other lines wait their turn)."""
    global next_id
    next_id += 1
    send({"jsonrpc": "2.0", "id": f"g{next_id}", "method": method, "params": params})
    while True:
        line = sys.stdin.readline()
        if not line:
            sys.exit(0)
        msg = json.loads(line)
        if msg.get("id") == f"g{next_id}" and "method" not in msg:
            return msg
        waiting.append(msg)


def gate(event, has_ui):
    name, args = event["toolName"], event.get("input") or {}
    if name in ("write", "edit") and PROTECTED.search(str(args.get("path", ""))):
        send({"jsonrpc": "2.0", "method": "ui/notify",
              "params": {"message": f"blocked a {name} of {args['path']}", "level": "warning"}})
        return {"block": {"reason": f"Path {args['path']} is protected"}}
    if name == "bash" and DANGEROUS.search(str(args.get("command", ""))):
        if not has_ui:
            return {"block": {"reason": "Dangerous command blocked (no UI to confirm)"}}
        answer = ask("ui/select", {
            "title": f"Dangerous command:\n  {args['command']}\nAllow?",
            "options": ["Yes", "No"],
        })
        if answer.get("result", {}).get("value") != "Yes":
            return {"block": {"reason": "Blocked by user"}}
    return {}


def main():
    has_ui = False
    while True:
        msg = read()
        if msg is None:
            return
        method, mid = msg.get("method"), msg.get("id")
        if method == "initialize":
            has_ui = msg["params"].get("hasUI", False)
            result = {"protocolVersion": 1, "name": "permission-gate", "version": "1.0.0",
                      "subscribe": {"tool_call": "intercept"}}
        elif method == "intercept":
            result = gate(msg["params"]["event"], has_ui)
        elif method == "shutdown":
            send({"jsonrpc": "2.0", "id": mid, "result": {}})
            return
        else:
            if mid is not None and method is not None:
                send({"jsonrpc": "2.0", "id": mid,
                      "error": {"code": -32601, "message": "unknown method"}})
            continue
        send({"jsonrpc": "2.0", "id": mid, "result": result})


if __name__ == "__main__":
    main()
