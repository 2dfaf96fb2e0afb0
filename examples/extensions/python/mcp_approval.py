#!/usr/bin/env python3
"""Approval of destructive MCP tools for pith (PXP/1, standard library only).

An MCP tool call reaches `tool_call` with `source: "mcp:<server>"` and the server's hints in
`annotations` (spec: extensions.md §1.3). Read-only tools pass. A tool the server marks
destructive (`destructiveHint: true`, or no hints saying otherwise: the MCP default) is
confirmed with ui/confirm when there is a UI, and blocked when there is none.

    pith -e examples/extensions/python/mcp_approval.py
"""
import json
import sys

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
    send({"jsonrpc": "2.0", "id": f"a{next_id}", "method": method, "params": params})
    while True:
        line = sys.stdin.readline()
        if not line:
            sys.exit(0)
        msg = json.loads(line)
        if msg.get("id") == f"a{next_id}" and "method" not in msg:
            return msg
        waiting.append(msg)


def destructive(hints):
    """The MCP defaults: not read-only, and destructive unless the server says it is not."""
    if hints.get("readOnlyHint") is True:
        return False
    return hints.get("destructiveHint", True) is True


def gate(event, has_ui):
    source = event.get("source", "")
    if not source.startswith("mcp:") or not destructive(event.get("annotations") or {}):
        return {}
    name = event["toolName"]
    if not has_ui:
        return {"block": {"reason": f"{name} ({source}) may be destructive; blocked without a UI to confirm"}}
    answer = ask("ui/confirm", {
        "title": f"Allow {name}?",
        "message": f"{source} marks it destructive.\n{json.dumps(event.get('input'))}",
    })
    if answer.get("result", {}).get("confirmed") is not True:
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
            result = {"protocolVersion": 1, "name": "mcp-approval", "version": "1.0.0",
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
