#!/usr/bin/env python3
"""A scripted mock LLM server (Python 3.11, standard library only).

Serves OpenAI Chat Completions (POST .../chat/completions) and Anthropic Messages
(POST .../messages), streaming (SSE) or not, and, streaming only, the OpenAI Responses API
(POST .../responses) and Google's Generative Language API
(POST .../models/<model>:streamGenerateContent?alt=sse), from a JSON script, and logs every
request.

    mock_llm.py --script replies.json --log requests.jsonl [--port 0] [--port-file F]
                [--host 127.0.0.1] [--idle-exit 600] [--chunk-delay-ms 0] [--pause-ms 30]

The script is a JSON list; each POST to a chat endpoint takes the next reply:
    {"text": "Hello", "thinking": "...", "tool_calls": [{"id": "call_1", "name": "bash",
      "arguments": {"command": "ls"}}], "finish_reason": "stop"|"tool_calls"|"length",
      "usage": {"input": 10, "output": 5, "cacheRead": 0},
      "status": 500, "error": {"message": "boom", "type": "server_error"}, "headers": {...},
      "cut": true, "delay_ms": 0}
- "status" >= 400: answered with that status and body {"error": error} (no stream).
- "cut": the stream stops after the text deltas, without finish_reason / [DONE] (socket closed).
- finish_reason defaults to "tool_calls" when there are tool calls, else "stop".
Responses API: a reasoning item (rs_mock_N, its summary streamed), a message item (msg_mock_N),
a function_call item per tool call (fc_mock_N_K, call_id the scripted id), then
response.completed (response.incomplete with max_output_tokens for "length") with usage.
Google: thought parts (the first with thoughtSignature "bW9jay1zaWc="), text parts, then one
chunk with the functionCall parts (the scripted id, name and args), finishReason (STOP, or
MAX_TOKENS for "length") and usageMetadata.
When the script is used up, requests get HTTP 400 {"error": {"message": "mock: script exhausted"}}.
GET .../models lists one model ("mock-model"). Each request is appended to the log as
{"n", "method", "path", "headers", "body"} (body parsed as JSON when it is JSON).
--pause-ms waits after the response headers and before the final chunk, so that a client that
prints events as they come sees a stable order (usage only at the end). The server exits by
itself after --idle-exit seconds without a request.
"""

import argparse
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

STATE = {"replies": [], "next": 0, "n": 0, "last": time.monotonic()}
LOCK = threading.Lock()
ARGS = None


def chunk_text(text, size):
    """Split text into pieces of about `size` characters (0 = words)."""
    if not text:
        return []
    if size <= 0:
        out, cur = [], ""
        for ch in text:
            cur += ch
            if ch == " ":
                out.append(cur)
                cur = ""
        if cur:
            out.append(cur)
        return out
    return [text[i:i + size] for i in range(0, len(text), size)]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "mock-llm/1"

    def log_message(self, fmt, *args):  # quiet
        pass

    # ---------- plumbing ----------
    def _log_request(self, body_bytes):
        try:
            body = json.loads(body_bytes) if body_bytes else None
        except ValueError:
            body = body_bytes.decode("utf-8", "replace")
        with LOCK:
            STATE["n"] += 1
            STATE["last"] = time.monotonic()
            n = STATE["n"]
            rec = {"n": n, "method": self.command, "path": self.path,
                   "headers": {k.lower(): v for k, v in self.headers.items()}, "body": body}
            with open(ARGS.log, "a", encoding="utf-8") as f:
                f.write(json.dumps(rec, ensure_ascii=False) + "\n")
        return n, body

    def _send_json(self, status, obj, headers=None):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _start_sse(self, headers=None):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.flush()

    def _chunk(self, data):
        raw = data.encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(raw), raw))
        self.wfile.flush()
        if ARGS.chunk_delay_ms:
            time.sleep(ARGS.chunk_delay_ms / 1000)

    def _end_chunks(self):
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _take_reply(self):
        with LOCK:
            i = STATE["next"]
            STATE["next"] += 1
            return STATE["replies"][i] if i < len(STATE["replies"]) else None

    # ---------- HTTP verbs ----------
    def do_GET(self):
        self._log_request(b"")
        if self.path.rstrip("/").endswith("/models"):
            self._send_json(200, {"object": "list", "data": [
                {"id": "mock-model", "object": "model", "created": 0, "owned_by": "mock"}]})
        else:
            self._send_json(404, {"error": {"message": "not found: " + self.path}})

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        body_bytes = self.rfile.read(length) if length else b""
        n, body = self._log_request(body_bytes)
        path = self.path.split("?")[0].rstrip("/")
        if path.endswith("/chat/completions"):
            kind = "openai"
        elif path.endswith("/messages"):
            kind = "anthropic"
        elif path.endswith("/responses"):
            kind = "responses"
        elif path.endswith(":streamGenerateContent"):
            kind = "google"
        else:
            self._send_json(404, {"error": {"message": "not found: " + self.path}})
            return
        reply = self._take_reply()
        if reply is None:
            self._send_json(400, {"error": {"message": "mock: script exhausted",
                                            "type": "invalid_request_error"}})
            return
        if reply.get("delay_ms"):
            time.sleep(reply["delay_ms"] / 1000)
        status = reply.get("status", 200)
        if status >= 400:
            err = reply.get("error", {"message": "mock error", "type": "server_error"})
            payload = {"type": "error", "error": err} if kind == "anthropic" else {"error": err}
            self._send_json(status, payload, reply.get("headers"))
            return
        body = body if isinstance(body, dict) else {}
        model = body.get("model", "mock-model")
        try:
            if kind == "openai":
                self._openai(n, reply, model, bool(body.get("stream")),
                             bool((body.get("stream_options") or {}).get("include_usage")))
            elif kind == "responses":
                self._responses(n, reply, model)
            elif kind == "google":
                self._google(n, reply, path.rsplit("/", 1)[-1].split(":")[0])
            else:
                self._anthropic(n, reply, model, bool(body.get("stream")))
        except (BrokenPipeError, ConnectionResetError):
            pass

    # ---------- OpenAI chat completions ----------
    def _openai(self, n, reply, model, stream, include_usage):
        text = reply.get("text", "")
        thinking = reply.get("thinking", "")
        calls = reply.get("tool_calls", [])
        finish = reply.get("finish_reason") or ("tool_calls" if calls else "stop")
        u = reply.get("usage", {})
        usage = {"prompt_tokens": u.get("input", 10), "completion_tokens": u.get("output", 5)}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        if u.get("cacheRead"):
            usage["prompt_tokens_details"] = {"cached_tokens": u["cacheRead"]}
        cid = f"chatcmpl-mock-{n}"
        if not stream:
            msg = {"role": "assistant", "content": text or None}
            if calls:
                msg["tool_calls"] = [{"id": c["id"], "type": "function", "function": {
                    "name": c["name"], "arguments": json.dumps(c.get("arguments", {}))}} for c in calls]
            self._send_json(200, {"id": cid, "object": "chat.completion", "created": 0, "model": model,
                                  "choices": [{"index": 0, "message": msg, "finish_reason": finish}],
                                  "usage": usage}, reply.get("headers"))
            return
        self._start_sse(reply.get("headers"))

        def ev(delta, finish_reason=None, **extra):
            obj = {"id": cid, "object": "chat.completion.chunk", "created": 0, "model": model,
                   "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]}
            obj.update(extra)
            self._chunk("data: " + json.dumps(obj) + "\n\n")

        ev({"role": "assistant", "content": ""})
        time.sleep(ARGS.pause_ms / 1000)
        for piece in chunk_text(thinking, ARGS.chunk_size):
            ev({"reasoning_content": piece})
        for piece in chunk_text(text, ARGS.chunk_size):
            ev({"content": piece})
        if reply.get("cut"):
            self.close_connection = True
            self.wfile.flush()
            self.connection.shutdown(2)
            return
        for i, c in enumerate(calls):
            ev({"tool_calls": [{"index": i, "id": c["id"], "type": "function",
                                "function": {"name": c["name"], "arguments": ""}}]})
            args = json.dumps(c.get("arguments", {}))
            for piece in chunk_text(args, max(ARGS.chunk_size, 8)):
                ev({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})
        time.sleep(ARGS.pause_ms / 1000)
        ev({}, finish)
        if include_usage:
            obj = {"id": cid, "object": "chat.completion.chunk", "created": 0, "model": model,
                   "choices": [], "usage": usage}
            self._chunk("data: " + json.dumps(obj) + "\n\n")
        self._chunk("data: [DONE]\n\n")
        self._end_chunks()

    # ---------- Anthropic messages ----------
    def _anthropic(self, n, reply, model, stream):
        text = reply.get("text", "")
        thinking = reply.get("thinking", "")
        calls = reply.get("tool_calls", [])
        fin = reply.get("finish_reason") or ("tool_calls" if calls else "stop")
        stop = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens"}.get(fin, fin)
        u = reply.get("usage", {})
        usage = {"input_tokens": u.get("input", 10), "output_tokens": u.get("output", 5),
                 "cache_read_input_tokens": u.get("cacheRead", 0), "cache_creation_input_tokens": 0}
        mid = f"msg_mock_{n}"
        blocks = []
        if thinking:
            blocks.append({"type": "thinking", "thinking": thinking, "signature": "mock-sig"})
        if text:
            blocks.append({"type": "text", "text": text})
        for c in calls:
            blocks.append({"type": "tool_use", "id": c["id"], "name": c["name"],
                           "input": c.get("arguments", {})})
        if not stream:
            self._send_json(200, {"id": mid, "type": "message", "role": "assistant", "model": model,
                                  "content": blocks, "stop_reason": stop, "stop_sequence": None,
                                  "usage": usage}, reply.get("headers"))
            return
        self._start_sse(reply.get("headers"))

        def ev(name, obj):
            self._chunk(f"event: {name}\ndata: " + json.dumps(obj) + "\n\n")

        start_usage = dict(usage, output_tokens=1)
        ev("message_start", {"type": "message_start", "message": {
            "id": mid, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": start_usage}})
        time.sleep(ARGS.pause_ms / 1000)
        for i, b in enumerate(blocks):
            if b["type"] == "thinking":
                ev("content_block_start", {"type": "content_block_start", "index": i,
                                           "content_block": {"type": "thinking", "thinking": ""}})
                for p in chunk_text(b["thinking"], ARGS.chunk_size):
                    ev("content_block_delta", {"type": "content_block_delta", "index": i,
                                               "delta": {"type": "thinking_delta", "thinking": p}})
                ev("content_block_delta", {"type": "content_block_delta", "index": i,
                                           "delta": {"type": "signature_delta", "signature": "mock-sig"}})
            elif b["type"] == "text":
                ev("content_block_start", {"type": "content_block_start", "index": i,
                                           "content_block": {"type": "text", "text": ""}})
                for p in chunk_text(b["text"], ARGS.chunk_size):
                    ev("content_block_delta", {"type": "content_block_delta", "index": i,
                                               "delta": {"type": "text_delta", "text": p}})
                if reply.get("cut"):
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
            else:
                ev("content_block_start", {"type": "content_block_start", "index": i, "content_block": {
                    "type": "tool_use", "id": b["id"], "name": b["name"], "input": {}}})
                for p in chunk_text(json.dumps(b["input"]), max(ARGS.chunk_size, 8)):
                    ev("content_block_delta", {"type": "content_block_delta", "index": i,
                                               "delta": {"type": "input_json_delta", "partial_json": p}})
            ev("content_block_stop", {"type": "content_block_stop", "index": i})
        time.sleep(ARGS.pause_ms / 1000)
        ev("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                             "usage": {"output_tokens": usage["output_tokens"]}})
        ev("message_stop", {"type": "message_stop"})
        self._end_chunks()

    # ---------- OpenAI Responses (streaming) ----------
    def _responses(self, n, reply, model):
        text = reply.get("text", "")
        thinking = reply.get("thinking", "")
        calls = reply.get("tool_calls", [])
        fin = reply.get("finish_reason") or ("tool_calls" if calls else "stop")
        u = reply.get("usage", {})
        usage = {"input_tokens": u.get("input", 10) + u.get("cacheRead", 0),
                 "input_tokens_details": {"cached_tokens": u.get("cacheRead", 0)},
                 "output_tokens": u.get("output", 5),
                 "output_tokens_details": {"reasoning_tokens": 0}}
        usage["total_tokens"] = usage["input_tokens"] + usage["output_tokens"]
        rid = f"resp_mock_{n}"
        self._start_sse(reply.get("headers"))
        seq = [0]

        def ev(obj):
            obj["sequence_number"] = seq[0]
            seq[0] += 1
            self._chunk(f"event: {obj['type']}\ndata: " + json.dumps(obj) + "\n\n")

        def response(status, output):
            r = {"id": rid, "object": "response", "created_at": 0, "status": status,
                 "model": model, "output": output}
            if status != "in_progress":
                r["usage"] = usage
            if status == "incomplete":
                r["incomplete_details"] = {"reason": "max_output_tokens"}
            return r

        ev({"type": "response.created", "response": response("in_progress", [])})
        time.sleep(ARGS.pause_ms / 1000)
        done = []
        if thinking:
            i = len(done)
            item = {"type": "reasoning", "id": f"rs_mock_{n}", "summary": []}
            ev({"type": "response.output_item.added", "output_index": i, "item": item})
            part = {"type": "summary_text", "text": ""}
            ev({"type": "response.reasoning_summary_part.added", "item_id": item["id"],
                "output_index": i, "summary_index": 0, "part": part})
            for p in chunk_text(thinking, ARGS.chunk_size):
                ev({"type": "response.reasoning_summary_text.delta", "item_id": item["id"],
                    "output_index": i, "summary_index": 0, "delta": p})
            ev({"type": "response.reasoning_summary_text.done", "item_id": item["id"],
                "output_index": i, "summary_index": 0, "text": thinking})
            ev({"type": "response.reasoning_summary_part.done", "item_id": item["id"],
                "output_index": i, "summary_index": 0,
                "part": {"type": "summary_text", "text": thinking}})
            item = dict(item, summary=[{"type": "summary_text", "text": thinking}])
            ev({"type": "response.output_item.done", "output_index": i, "item": item})
            done.append(item)
        if text:
            i = len(done)
            item = {"type": "message", "id": f"msg_mock_{n}", "status": "in_progress",
                    "role": "assistant", "content": []}
            ev({"type": "response.output_item.added", "output_index": i, "item": item})
            ev({"type": "response.content_part.added", "item_id": item["id"], "output_index": i,
                "content_index": 0, "part": {"type": "output_text", "text": "", "annotations": []}})
            for p in chunk_text(text, ARGS.chunk_size):
                ev({"type": "response.output_text.delta", "item_id": item["id"],
                    "output_index": i, "content_index": 0, "delta": p})
            if reply.get("cut"):
                self.close_connection = True
                self.wfile.flush()
                self.connection.shutdown(2)
                return
            content = {"type": "output_text", "text": text, "annotations": []}
            ev({"type": "response.output_text.done", "item_id": item["id"], "output_index": i,
                "content_index": 0, "text": text})
            ev({"type": "response.content_part.done", "item_id": item["id"], "output_index": i,
                "content_index": 0, "part": content})
            item = dict(item, status="completed", content=[content])
            ev({"type": "response.output_item.done", "output_index": i, "item": item})
            done.append(item)
        for k, c in enumerate(calls):
            i = len(done)
            args = json.dumps(c.get("arguments", {}))
            item = {"type": "function_call", "id": f"fc_mock_{n}_{k}", "call_id": c["id"],
                    "name": c["name"], "arguments": "", "status": "in_progress"}
            ev({"type": "response.output_item.added", "output_index": i, "item": item})
            for p in chunk_text(args, max(ARGS.chunk_size, 8)):
                ev({"type": "response.function_call_arguments.delta", "item_id": item["id"],
                    "output_index": i, "delta": p})
            ev({"type": "response.function_call_arguments.done", "item_id": item["id"],
                "output_index": i, "arguments": args})
            item = dict(item, arguments=args, status="completed")
            ev({"type": "response.output_item.done", "output_index": i, "item": item})
            done.append(item)
        time.sleep(ARGS.pause_ms / 1000)
        status = "incomplete" if fin == "length" else "completed"
        ev({"type": "response.completed" if status == "completed" else "response.incomplete",
            "response": response(status, done)})
        self._end_chunks()

    # ---------- Google Generative Language (streaming) ----------
    def _google(self, n, reply, model):
        text = reply.get("text", "")
        thinking = reply.get("thinking", "")
        calls = reply.get("tool_calls", [])
        fin = reply.get("finish_reason") or ("tool_calls" if calls else "stop")
        reason = {"length": "MAX_TOKENS"}.get(fin, "STOP")
        u = reply.get("usage", {})
        meta = {"promptTokenCount": u.get("input", 10) + u.get("cacheRead", 0),
                "candidatesTokenCount": u.get("output", 5)}
        if u.get("cacheRead"):
            meta["cachedContentTokenCount"] = u["cacheRead"]
        meta["totalTokenCount"] = meta["promptTokenCount"] + meta["candidatesTokenCount"]
        self._start_sse(reply.get("headers"))

        def ev(parts, finish=None):
            cand = {"content": {"role": "model", "parts": parts}, "index": 0}
            if finish:
                cand["finishReason"] = finish
            obj = {"candidates": [cand], "modelVersion": model, "responseId": f"resp-mock-{n}"}
            if finish:
                obj["usageMetadata"] = meta
            self._chunk("data: " + json.dumps(obj) + "\r\n\r\n")

        time.sleep(ARGS.pause_ms / 1000)
        pieces = chunk_text(thinking, ARGS.chunk_size)
        for k, p in enumerate(pieces):
            part = {"text": p, "thought": True}
            if k == 0:
                part["thoughtSignature"] = "bW9jay1zaWc="
            ev([part])
        for p in chunk_text(text, ARGS.chunk_size):
            ev([{"text": p}])
        if reply.get("cut"):
            self.close_connection = True
            self.wfile.flush()
            self.connection.shutdown(2)
            return
        parts = [{"functionCall": {"id": c["id"], "name": c["name"], "args": c.get("arguments", {})}}
                 for c in calls]
        time.sleep(ARGS.pause_ms / 1000)
        ev(parts, reason)
        self._end_chunks()


def main():
    global ARGS
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--script", required=True)
    p.add_argument("--log", required=True)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--port-file")
    p.add_argument("--idle-exit", type=float, default=600.0)
    p.add_argument("--chunk-size", type=int, default=0, help="characters per delta (0: one word each)")
    p.add_argument("--chunk-delay-ms", type=float, default=0.0)
    p.add_argument("--pause-ms", type=float, default=30.0)
    ARGS = p.parse_args()
    if not ARGS.host.startswith("127.") and ARGS.host not in ("localhost", "::1"):
        sys.exit("mock_llm: only loopback addresses")
    with open(ARGS.script, encoding="utf-8") as f:
        STATE["replies"] = json.load(f)
    srv = ThreadingHTTPServer((ARGS.host, ARGS.port), Handler)
    srv.daemon_threads = True
    port = srv.server_address[1]
    if ARGS.port_file:
        tmp = ARGS.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(f"{port}\n")
        os.replace(tmp, ARGS.port_file)
    print(port, flush=True)

    def watchdog():
        while True:
            time.sleep(1)
            if time.monotonic() - STATE["last"] > ARGS.idle_exit:
                srv.shutdown()
                return

    threading.Thread(target=watchdog, daemon=True).start()
    srv.serve_forever()


if __name__ == "__main__":
    main()
