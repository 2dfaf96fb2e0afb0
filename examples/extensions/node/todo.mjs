#!/usr/bin/env node
// A todo tool for pith (PXP/1, Node without dependencies): use cases 6 and 7 of the spec.
//
// The state lives in each `todo` tool result's `details` ({todos: [...]}), pi's pattern, so it
// follows the branch: on every session_start (startup, resume, fork, restart) and /tree move
// (session_tree) the extension
// reads the branch back with session/getBranch and takes the last todo result's details.
// `/todos` lists them.
//
//     pith -e examples/extensions/node/todo.mjs
import { createInterface } from "node:readline";

let todos = [];
let nextId = 0;
const waiting = new Map();

const send = (msg) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", ...msg }) + "\n");
const ask = (method, params) =>
  new Promise((resolve) => {
    const id = `t${++nextId}`;
    waiting.set(id, resolve);
    send({ id, method, params });
  });

const listText = () =>
  todos.length === 0
    ? "no todos"
    : todos.map((t, i) => `${i + 1}. [${t.done ? "x" : " "}] ${t.text}`).join("\n");

async function restore() {
  let before;
  for (;;) {
    const page = await ask("session/getBranch", { types: ["message"], limit: 100, before });
    const entries = page.result?.entries ?? [];
    for (let i = entries.length - 1; i >= 0; i--) {
      const m = entries[i].message;
      if (m?.role === "toolResult" && m.toolName === "todo" && m.details?.todos) {
        todos = m.details.todos;
        return;
      }
    }
    if (!page.result?.next) break;
    before = page.result.next;
  }
  todos = [];
}

function callTool(args) {
  switch (args.action) {
    case "add":
      todos = [...todos, { text: String(args.text ?? ""), done: false }];
      break;
    case "toggle": {
      const i = Number(args.index) - 1;
      if (!todos[i]) return { content: [{ type: "text", text: `no todo ${args.index}` }], isError: true };
      todos = todos.map((t, j) => (j === i ? { ...t, done: !t.done } : t));
      break;
    }
    case "list":
      break;
    default:
      return { content: [{ type: "text", text: `unknown action ${args.action}` }], isError: true };
  }
  return { content: [{ type: "text", text: listText() }], details: { todos } };
}

async function handle(msg) {
  const { id, method, params } = msg;
  switch (method) {
    case "initialize":
      return send({
        id,
        result: {
          protocolVersion: 1,
          name: "todo",
          version: "1.0.0",
          subscribe: { session_start: "await", session_tree: "await" },
          tools: [
            {
              name: "todo",
              description: "Keep a todo list: add an item, toggle one done, or list them.",
              inputSchema: {
                type: "object",
                properties: {
                  action: { type: "string", enum: ["add", "toggle", "list"] },
                  text: { type: "string" },
                  index: { type: "integer" },
                },
                required: ["action"],
              },
            },
          ],
          commands: [{ name: "todos", description: "Show the todo list" }],
        },
      });
    case "intercept":
      // The branch decides: after a resume, a fork, a restart or a /tree move.
      await restore();
      return send({ id, result: {} });
    case "tool/call":
      return send({ id, result: callTool(params.arguments) });
    case "command/run":
      return send({ id, result: { text: listText() } });
    case "shutdown":
      send({ id, result: {} });
      process.exit(0);
    default:
      if (id !== undefined && method !== undefined)
        send({ id, error: { code: -32601, message: "unknown method" } });
  }
}

createInterface({ input: process.stdin }).on("line", (line) => {
  const msg = JSON.parse(line);
  if (msg.method === undefined && waiting.has(msg.id)) {
    const resolve = waiting.get(msg.id);
    waiting.delete(msg.id);
    resolve(msg);
    return;
  }
  handle(msg);
});
