#!/usr/bin/env node
// Rules injector for pith (PXP/1, Node without dependencies): use cases 5 and 8 of the spec.
//
// - before_agent_start: the project's RULES.md (in the session cwd) is appended to the system
//   prompt, and a short reminder is injected as a custom message after each prompt.
// - input: `?? text` is expanded to "Explain briefly: text"; `/ping` is handled here and
//   never reaches the model.
//
//     pith -e examples/extensions/node/rules.mjs
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";

let cwd = process.cwd();
const send = (msg) => process.stdout.write(JSON.stringify({ jsonrpc: "2.0", ...msg }) + "\n");

function rules() {
  try {
    return readFileSync(join(cwd, "RULES.md"), "utf8").trim();
  } catch {
    return "";
  }
}

function intercept(event) {
  switch (event.type) {
    case "input":
      if (event.text.startsWith("?? ")) {
        return { action: "transform", text: `Explain briefly: ${event.text.slice(3)}` };
      }
      if (event.text.trim() === "/ping") {
        send({ method: "ui/notify", params: { message: "pong", level: "info" } });
        return { action: "handled" };
      }
      return { action: "continue" };
    case "before_agent_start": {
      const text = rules();
      if (!text) return {};
      return {
        appendSystemPrompt: `Project rules:\n${text}`,
        message: { customType: "rules", content: "Remember the project rules.", display: false },
      };
    }
    default:
      return {};
  }
}

createInterface({ input: process.stdin }).on("line", (line) => {
  const { id, method, params } = JSON.parse(line);
  switch (method) {
    case "initialize":
      cwd = params.cwd ?? cwd;
      return send({
        id,
        result: {
          protocolVersion: 1,
          name: "rules",
          version: "1.0.0",
          subscribe: { input: "intercept", before_agent_start: "intercept" },
        },
      });
    case "intercept":
      return send({ id, result: intercept(params.event) });
    case "shutdown":
      send({ id, result: {} });
      process.exit(0);
    default:
      if (id !== undefined && method !== undefined)
        send({ id, error: { code: -32601, message: "unknown method" } });
  }
});
