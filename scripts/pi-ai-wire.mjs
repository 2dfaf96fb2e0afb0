// Records what pi-ai 1.6.0 sends and makes of scripted replies, for pith's provider tests
// (actors/llm/tests/pi_ai_wire.rs replays the same cases against pith and compares).
//
//   scripts/install-pi
//   target/pi-oracle/bin/node scripts/pi-ai-wire.mjs actors/llm/tests/pi-ai/*.json
//
// Each file holds {"case": {...}} and gets {"pi": {...}} (re)written next to it. A case:
//   model        pi-ai's Model; `baseUrl` is a path appended to the local server's address
//   systemPrompt, messages, tools   the context (pi-ai's shapes)
//   options      streamSimple's options (apiKey, reasoning, sessionId, maxTokens, ...)
//   replies      [{status, headers, body, end?: "cut"|"hang", delayHeadersMs?}] in order;
//                bodies are sent 7 bytes at a time, 1 ms apart, as pith's test server does
//   abortAfterEvents / abortAfterMs   abort the request after that many events / ms
// The result: every request (method, path, the headers pith compares, body as sent), the
// events without their partial messages, and the final message.
import http from "node:http";
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const AI = process.env.PI_AI ?? path.join(repo, "target/pi-oracle/pi/node_modules/@earendil-works/pi-ai/dist");
const API_FILES = { "google-generative-ai": "google-generative-ai.js", "openai-responses": "openai-responses.js" };
const HEADERS = ["content-type", "accept", "authorization", "x-goog-api-key", "session-id", "x-client-request-id", "x-session-id"];
const { normalizeContext } = await import(pathToFileURL(path.join(AI, "utils/transcript.js")).href);

async function run(c) {
  const api = await import(pathToFileURL(path.join(AI, "api", API_FILES[c.model.api])).href);
  const requests = [];
  const replies = [...(c.replies ?? [])];
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (d) => chunks.push(d));
    req.on("end", async () => {
      const headers = Object.fromEntries(HEADERS.filter((h) => req.headers[h] !== undefined).map((h) => [h, req.headers[h]]));
      requests.push({ method: req.method, url: req.url, headers, body: Buffer.concat(chunks).toString("utf8") });
      const r = replies.shift() ?? { status: 500, headers: { "content-type": "text/plain" }, body: "no scripted reply left" };
      if (r.delayHeadersMs) await new Promise((ok) => setTimeout(ok, r.delayHeadersMs));
      res.writeHead(r.status ?? 200, r.headers ?? { "content-type": "text/event-stream" });
      const body = Buffer.from(r.body ?? "", "utf8");
      for (let i = 0; i < body.length; i += 7) {
        res.write(body.subarray(i, i + 7));
        await new Promise((ok) => setTimeout(ok, 1));
      }
      if (r.end === "cut") {
        await new Promise((ok) => setTimeout(ok, 20));
        res.socket.destroy();
        return;
      }
      if (r.end === "hang") return;
      res.end();
    });
  });
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
  const base = `http://127.0.0.1:${server.address().port}`;
  const model = { ...c.model, baseUrl: base + (c.model.baseUrl ?? "") };
  const context = normalizeContext({ systemPrompt: c.systemPrompt, messages: c.messages, tools: c.tools });
  const controller = new AbortController();
  if (c.abortAfterMs !== undefined) setTimeout(() => controller.abort(), c.abortAfterMs);
  const events = [];
  let message;
  try {
    for await (const e of api.streamSimple(model, context, { ...c.options, signal: controller.signal })) {
      const event = { type: e.type };
      if (e.contentIndex !== undefined) event.contentIndex = e.contentIndex;
      if (e.delta !== undefined) event.delta = e.delta;
      events.push(event);
      if (events.length === c.abortAfterEvents) controller.abort();
      if (e.type === "done") message = e.message;
      if (e.type === "error") message = e.error;
    }
  } catch (e) {
    message = { thrown: String(e?.message ?? e) };
  }
  server.closeAllConnections();
  server.close();
  return { requests, events, message };
}

const files = process.argv.slice(2);
if (files.length > 1) {
  // One process per case: pi-ai's Gemini call-id counter is module-wide, so each case starts
  // it from 0 as pith's provider does.
  const { spawnSync } = await import("node:child_process");
  for (const file of files) {
    const r = spawnSync(process.execPath, [fileURLToPath(import.meta.url), file], { stdio: "inherit" });
    if (r.status !== 0) process.exit(r.status ?? 1);
  }
  process.exit(0);
}
for (const file of files) {
  const fixture = JSON.parse(fs.readFileSync(file, "utf8"));
  fixture.pi = await run(fixture.case);
  fs.writeFileSync(file, JSON.stringify(fixture, null, 1) + "\n");
  console.log(`${file}: ${fixture.pi.requests.length} request(s), ${fixture.pi.events.length} events, ${fixture.pi.message.stopReason ?? "thrown"}`);
}
process.exit(0);
