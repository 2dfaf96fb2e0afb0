// Regenerates actors/llm/src/builtin_models.json from pi-ai's model table.
//
//   scripts/install-pi        (pi 1.6.0 and its pi-ai, under target/pi-oracle)
//   target/pi-oracle/bin/node scripts/builtin-models.mjs \
//     target/pi-oracle/pi/node_modules/@earendil-works/pi-ai > actors/llm/src/builtin_models.json
//
// Only providers reached by an API key and through an API pith speaks (anthropic-messages,
// openai-completions, openai-responses, google-generative-ai) are kept; models of other APIs
// in those providers are left out. Models keep the members pi-ai gives them except `type`
// (always "chat" here) and `inputLimits` (request size and image limits pith does not check),
// which would double the table's size.
import { pathToFileURL } from "node:url";
import { resolve } from "node:path";

const root = process.argv[2];
if (!root) {
  console.error("usage: node builtin-models.mjs <path to @earendil-works/pi-ai>");
  process.exit(2);
}
const ai = await import(pathToFileURL(resolve(root, "dist/providers/all.js")).href);
const providers = [
  "anthropic", "openai", "google", "deepseek", "groq", "cerebras", "xai", "openrouter", "zai",
  "moonshotai", "moonshotai-cn", "huggingface", "fireworks", "minimax", "minimax-cn",
  "kimi-coding",
];
const apis = new Set(["anthropic-messages", "openai-completions", "openai-responses", "google-generative-ai"]);
const out = [];
for (const provider of providers) {
  for (const m of ai.getBuiltinModels(provider)) {
    if (!apis.has(m.api)) continue;
    const { type, inputLimits, ...model } = m;
    out.push(model);
  }
}
process.stdout.write(JSON.stringify(out, null, 1) + "\n");
