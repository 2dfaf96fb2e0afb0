// pi 1.6.0's own RpcClient (exported by @earendil-works/pi-coding-agent) driving
// `pith --mode rpc` (issue 12 item 3): prompt, steer, follow-up, abort, compact, fork, switch,
// clone and the queries, asserting the values that come back. Run by cli/tests/cli/rpc/
// pi_client.rs with pi's own Node 22:
//
//   node pi_rpc_client.mjs <rpc-client.js> <pith binary> <cwd>
//
// PITH_AGENT_DIR and the faux script come through the environment and argv of the test.
// RpcClient spawns `node <cliPath> --mode rpc ...`; cliPath is a shim that runs pith with the
// same arguments and stdio, and passes SIGTERM on.

import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [rpcClientJs, pith, cwd, fauxScript] = process.argv.slice(2);
const { RpcClient } = await import(pathToFileURL(rpcClientJs).href);

const shim = join(mkdtempSync(join(tmpdir(), "pith-shim-")), "pith-shim.mjs");
writeFileSync(
  shim,
  `import { spawn } from "node:child_process";
const child = spawn(${JSON.stringify(pith)}, process.argv.slice(2), { stdio: "inherit" });
for (const s of ["SIGTERM", "SIGINT", "SIGHUP"]) process.on(s, () => child.kill(s));
child.on("exit", (code, signal) => process.exit(code ?? (signal ? 128 : 1)));
`,
);

let checks = 0;
const check = (actual, expected, what) => {
  assert.deepEqual(actual, expected, what);
  checks += 1;
};

const client = new RpcClient({ cliPath: shim, cwd, args: ["--faux-script", fauxScript] });
await client.start();
try {
  // A prompt, waited for with pi's own promptAndWait (it resolves on agent_settled).
  const events = await client.promptAndWait("hello", undefined, 20000);
  check(events.at(-1), { type: "agent_settled", aborted: false }, "settled last");
  const updates = events.filter((e) => e.type === "message_update");
  check(
    updates.map((u) => Object.keys(u)),
    updates.map(() => ["type", "usage", "assistantMessageEvent"]),
    "delta-only message_update",
  );
  check(
    updates.filter((u) => u.assistantMessageEvent.type === "text_delta").map((u) => u.assistantMessageEvent.delta).join(""),
    "first reply",
    "deltas add up to the reply",
  );
  const start = events.find((e) => e.type === "message_start" && e.message.role === "assistant");
  check(start.message.stopReason, "pending", "streaming message_start");
  check(events.find((e) => e.type === "agent_end").willRetry, false, "willRetry");
  check(await client.getLastAssistantText(), "first reply", "last assistant text");

  // Steer and follow up while a slow reply streams.
  check(await client.prompt("slow one"), "started", "prompt disposition");
  check(await client.steer("steer me"), "queued", "steer disposition");
  check(await client.followUp("follow me"), "queued", "follow-up disposition");
  check((await client.getState()).pendingMessageCount, 2, "two queued");
  await client.waitForIdle(20000);
  const texts = (await client.getMessages())
    .filter((m) => m.role === "user" || m.role === "assistant")
    .map((m) => m.content.filter((b) => b.type === "text").map((b) => b.text).join(""));
  check(
    texts,
    ["hello", "first reply", "slow one", "slow reply", "steer me", "after steer", "follow me", "after follow-up"],
    "steer then follow-up, each in its turn",
  );

  // clear_queue while idle: what was queued comes back, nothing is delivered.
  check(await client.followUp("never sent"), "queued", "queued while idle");
  check(await client.clearQueue(), { steering: [], followUp: ["never sent"] }, "clear_queue");
  check((await client.getState()).pendingMessageCount, 0, "queue empty");

  // Abort a reply that would take five seconds.
  check(await client.prompt("wait"), "started", "prompt to abort");
  const t0 = Date.now();
  await client.abort();
  assert.ok(Date.now() - t0 < 3000, "abort is answered before the reply would end");
  const state = await client.getState();
  check(state.isStreaming, false, "idle after abort");
  const aborted = (await client.getMessages()).filter((m) => m.role === "assistant").at(-1);
  check(aborted.stopReason, "aborted", "aborted reply kept");

  // Compact.
  const compacted = await client.compact("keep it short");
  check(typeof compacted.summary, "string", "summary");
  assert.ok(compacted.summary.length > 0);
  check(typeof compacted.firstKeptEntryId, "string", "first kept entry");
  assert.ok(compacted.tokensBefore > 0, "tokens before");

  // The queries.
  check(await client.getAvailableThinkingLevels(), ["off"], "thinking levels");
  const all = await client.getEntries();
  assert.ok(all.entries.length > 8, "entries");
  check(all.leafId, all.entries.at(-1).id, "leaf is the last entry");
  const since = await client.getEntries(all.entries[0].id);
  check(since.entries.map((e) => e.id), all.entries.slice(1).map((e) => e.id), "get_entries since");
  const tree = await client.getTree();
  check(tree.tree[0].entry.id, all.entries[0].id, "tree root");
  check(tree.leafId, all.leafId, "tree leaf");
  const stats = await client.getSessionStats();
  check(stats.sessionId, state.sessionId, "stats session");
  await client.setSessionName("driven by pi");
  check((await client.getState()).sessionName, "driven by pi", "session name");

  // Fork before the first prompt, then switch back, then clone.
  const original = state.sessionFile;
  const forkable = await client.getForkMessages();
  check(forkable[0].text, "hello", "fork messages");
  const forked = await client.fork(forkable[0].entryId);
  check(forked, { text: "hello", cancelled: false }, "fork");
  const forkedState = await client.getState();
  assert.notEqual(forkedState.sessionFile, original, "fork opens another file");
  check(forkedState.messageCount, 0, "fork before the first prompt has no messages");
  check(await client.switchSession(original), { cancelled: false }, "switch");
  check((await client.getState()).sessionFile, original, "back in the original");
  check(await client.clone(), { cancelled: false }, "clone");
  const cloned = await client.getState();
  assert.notEqual(cloned.sessionFile, original, "clone opens another file");
  check(cloned.messageCount, (await client.getMessages()).length, "clone keeps the context");
  assert.ok(cloned.messageCount > 0);

  // A prompt in the clone still works end to end.
  const again = await client.promptAndWait("and again", undefined, 20000);
  check(again.at(-1).type, "agent_settled", "settled in the clone");
} finally {
  await client.stop();
}
console.log(JSON.stringify({ ok: true, checks }));
