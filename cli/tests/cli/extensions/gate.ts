// The permission gate of examples/extensions/python/permission_gate.py as a pi extension, for
// the side-by-side run of extensions.md §4 step 4 (cli/tests/cli/differential.rs): dangerous
// bash commands are confirmed when there is a UI and blocked when there is none; writes and
// edits of protected paths are always blocked, with the same reasons the Python gate gives.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

const DANGEROUS = /\brm\s+-[a-zA-Z]*[rf]|\bsudo\b|\bgit\s+push\b.*(--force|-f\b)/;
const PROTECTED = /(^|\/)(\.env(\..*)?|\.git\/.*|package-lock\.json|Cargo\.lock)$/;

export default function (pi: ExtensionAPI) {
  pi.on("tool_call", async (event, ctx) => {
    const input = (event.input ?? {}) as { path?: unknown; command?: unknown };
    if ((event.toolName === "write" || event.toolName === "edit") && PROTECTED.test(String(input.path ?? ""))) {
      ctx.ui.notify(`blocked a ${event.toolName} of ${input.path}`, "warning");
      return { block: true, reason: `Path ${input.path} is protected` };
    }
    if (event.toolName === "bash" && DANGEROUS.test(String(input.command ?? ""))) {
      if (!ctx.hasUI) {
        return { block: true, reason: "Dangerous command blocked (no UI to confirm)" };
      }
      const choice = await ctx.ui.select(`Dangerous command:\n  ${input.command}\nAllow?`, ["Yes", "No"]);
      if (choice !== "Yes") {
        return { block: true, reason: "Blocked by user" };
      }
    }
    return undefined;
  });
}
