// Regenerates actors/src/builtin_models.json from pi-ai's model table.
//
//   npm install @mariozechner/pi-coding-agent@0.73.1   (pi-ai comes with it)
//   node scripts/builtin-models.mjs node_modules/@mariozechner/pi-ai > actors/src/builtin_models.json
//
// Only providers reached by an API key and through an API pith speaks (anthropic-messages,
// openai-completions) are kept. pi talks to `openai` through the Responses API; pith uses
// Chat Completions for the same models, so models only the Responses API serves are left out.
import { pathToFileURL } from "node:url";
import { resolve } from "node:path";

const root = process.argv[2];
if (!root) {
  console.error("usage: node builtin-models.mjs <path to @mariozechner/pi-ai>");
  process.exit(2);
}
const ai = await import(pathToFileURL(resolve(root, "dist/index.js")).href);
const providers = [
  "anthropic", "openai", "deepseek", "groq", "cerebras", "xai", "openrouter", "zai",
  "moonshotai", "moonshotai-cn", "huggingface", "fireworks", "minimax", "minimax-cn",
  "kimi-coding",
];
const responsesOnly = /(-pro$|-pro-|codex|deep-research)/;
const out = [];
for (const provider of providers) {
  for (const m of ai.getModels(provider)) {
    let model = { ...m };
    if (provider === "openai") {
      if (responsesOnly.test(m.id)) continue;
      model = { ...m, api: "openai-completions" };
    }
    if (model.api !== "anthropic-messages" && model.api !== "openai-completions") continue;
    out.push(model);
  }
}
process.stdout.write(JSON.stringify(out, null, 1) + "\n");
