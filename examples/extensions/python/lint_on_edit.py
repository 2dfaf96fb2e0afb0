#!/usr/bin/env python3
"""Lint on edit for pith (PXP/1, standard library only): use case 3 of the spec.

After every successful `edit` or `write`, the file is checked and the findings are appended
to the tool result the model sees (a `tool_result` patch), so it can fix them in its next
turn: Python files are compiled, every file is checked for trailing
whitespace. The result's details get `{"lint": {"ok": bool}}`.

    pith -e examples/extensions/python/lint_on_edit.py
"""
import json
import os
import sys


def send(msg):
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def lint(path):
    problems = []
    if path.endswith(".py"):
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                compile(f.read(), path, "exec")
        except SyntaxError as e:
            problems.append(f"{os.path.basename(path)}:{e.lineno}: {e.msg}")
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for n, line in enumerate(f, 1):
                if line.rstrip("\n") != line.rstrip():
                    problems.append(f"{os.path.basename(path)}:{n}: trailing whitespace")
    except OSError as e:
        problems.append(str(e))
    return problems


def patch(event, cwd):
    if event["toolName"] not in ("edit", "write") or event.get("isError"):
        return {}
    path = (event.get("input") or {}).get("path")
    if not path:
        return {}
    problems = lint(os.path.join(cwd, path))
    text = "lint: ok" if not problems else "lint:\n" + "\n".join(problems)
    details = event.get("details") or {}
    details = dict(details, lint={"ok": not problems})
    return {"content": event["content"] + [{"type": "text", "text": text}], "details": details}


def main():
    cwd = os.getcwd()
    for line in sys.stdin:
        msg = json.loads(line)
        method, mid = msg.get("method"), msg.get("id")
        if method == "initialize":
            cwd = msg["params"].get("cwd", cwd)
            result = {"protocolVersion": 1, "name": "lint-on-edit", "version": "1.0.0",
                      "subscribe": {"tool_result": "intercept"}}
        elif method == "intercept":
            result = patch(msg["params"]["event"], cwd)
        elif method == "shutdown":
            send({"jsonrpc": "2.0", "id": mid, "result": {}})
            return
        elif mid is not None and method is not None:
            send({"jsonrpc": "2.0", "id": mid,
                  "error": {"code": -32601, "message": "unknown method"}})
            continue
        else:
            continue
        send({"jsonrpc": "2.0", "id": mid, "result": result})


if __name__ == "__main__":
    main()
