/**
 * The README's first command, `npm run demo` (examples/demo.ts), as a newcomer runs it: the
 * right result, a progress bar per task prefix from client.progress (plain lines, stdout is a
 * pipe here), a summary, and the kept event log it names, which reads without problems.
 */
import { execFile } from "node:child_process";
import { existsSync, rmSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { readLogSync } from "../index.js";

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, "..");

describe("npm run demo", () => {
  it("computes the graph, draws its progress per prefix, and keeps the log it names", async () => {
    const { stdout, stderr } = await run(process.execPath, ["--import", "tsx", join(ROOT, "examples", "demo.ts")], { cwd: ROOT });
    const logPath = /event log at (\S+\.natlog)/.exec(stdout)?.[1];
    try {
      expect(stdout).toMatch(/^result: (\d+) \(expected \1\) OK$/m);
      for (const [prefix, n] of [["load", 64], ["clean", 64], ["total", 64], ["add", 21]] as const) {
        expect(stdout).toMatch(new RegExp(`^${prefix}\\s+\\[#+\\] 100% ${n}/${n}$`, "m"));
      }
      expect(stdout).not.toContain("\x1b[");
      expect(stdout).toContain("tasks submitted: 213");
      expect(stderr).toContain(`event log kept at ${logPath}`);
      expect(logPath !== undefined && existsSync(logPath)).toBe(true);
      expect(readLogSync(logPath!).problems).toEqual([]);
      expect(stdout).toContain(`try: npx natsched story ${logPath} add-`);
    } finally {
      if (logPath) rmSync(logPath, { force: true });
    }
  });
});
