// Runs pi 1.6.0's own grep/find/ls tools on the differential fixture tree and prints what
// they return, for scripts/gen-search-fixtures (which sets up node, rg and fd).
//
// usage: node search-oracle.mjs PI_PACKAGE_DIR FIXTURE_DIR WORK_DIR > expected.json
//
// The tree (FIXTURE_DIR/tree.json) is built under WORK_DIR/root; each case of
// FIXTURE_DIR/cases.json is validated with pi-ai's validateToolArguments (the agent does that
// before a tool runs) and executed with the tool's definition, as pi's agent calls it.
import { mkdirSync, realpathSync, symlinkSync, writeFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { dirname, join } from "node:path";

const [piDir, fixtureDir, workDir] = process.argv.slice(2);
const pi = await import(join(piDir, "dist/index.js"));
const piAi = await import(join(piDir, "../pi-ai/dist/index.js"));

const tree = JSON.parse(await readFile(join(fixtureDir, "tree.json"), "utf8"));
const cases = JSON.parse(await readFile(join(fixtureDir, "cases.json"), "utf8"));

function fill(template, i) {
  return template.replace(/\{i(?::(\d+))?\}/g, (_, width) => String(i).padStart(Number(width ?? 0), "0"));
}

function partBytes(part) {
  if (part.text !== undefined) return Buffer.from(part.text, "utf8");
  if (part.base64 !== undefined) return Buffer.from(part.base64, "base64");
  const chunks = [];
  for (let i = 1; i <= part.repeat.count; i++) chunks.push(Buffer.from(fill(part.repeat.text, i), "utf8"));
  return Buffer.concat(chunks);
}

const root = join(workDir, "root");
mkdirSync(root, { recursive: true });
for (const entry of tree.entries) {
  if (entry.many) {
    const m = entry.many;
    mkdirSync(join(root, m.dir), { recursive: true });
    for (let i = 1; i <= m.count; i++) writeFileSync(join(root, m.dir, fill(m.name, i)), fill(m.text, i));
    continue;
  }
  const path = join(root, entry.path);
  if (entry.dir) {
    mkdirSync(path, { recursive: true });
    continue;
  }
  mkdirSync(dirname(path), { recursive: true });
  if (entry.symlink !== undefined) symlinkSync(entry.symlink, path);
  else writeFileSync(path, Buffer.concat(entry.parts.map(partBytes)));
}

const realRoot = realpathSync(root);
const substitute = (value) =>
  typeof value === "string"
    ? value.replaceAll("$ROOT", realRoot)
    : value && typeof value === "object" && !Array.isArray(value)
      ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substitute(v)]))
      : value;
const normalize = (value) => JSON.parse(JSON.stringify(value ?? null).replaceAll(realRoot, "$ROOT"));

const factories = { grep: pi.createGrepToolDefinition, find: pi.createFindToolDefinition, ls: pi.createLsToolDefinition };
const specs = {};
for (const [name, create] of Object.entries(factories)) {
  const d = create(realRoot);
  specs[name] = { name: d.name, description: d.description, parameters: d.parameters, promptSnippet: d.promptSnippet };
}

const results = [];
for (const c of cases.cases) {
  const cwd = join(realRoot, c.cwd);
  const definition = factories[c.tool](cwd);
  let outcome;
  try {
    const args = piAi.validateToolArguments(definition, { name: c.tool, arguments: substitute(c.args) });
    const result = await definition.execute("call_1", args, undefined, undefined, undefined);
    outcome = { ok: { content: result.content, details: result.details ?? null } };
  } catch (e) {
    outcome = { error: e instanceof Error ? e.message : String(e) };
  }
  results.push({ name: c.name, ...normalize(outcome) });
}

process.stdout.write(`${JSON.stringify({ generator: "scripts/gen-search-fixtures (pi 1.6.0)", specs, results }, null, 1)}\n`);
