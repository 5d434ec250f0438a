/** LocalCluster's default event log: a temp file deleted at close() unless kept; a named file is always kept. */
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it, vi } from "vitest";
import { LocalCluster } from "../index.js";
import { readLogSync } from "../log/index.js";

const dir = mkdtempSync(join(tmpdir(), "natsched-temp-log-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const functions = { inc: (x: number) => x + 1 };

async function runOne(log?: { path?: string; keep?: boolean }): Promise<string> {
  const cluster = await LocalCluster.start({ workers: 1, functions, configFile: false, ...(log ? { log } : {}) });
  expect(await cluster.client().submit("inc", [1]).result()).toBe(2);
  const path = cluster.logPath!;
  expect(existsSync(path)).toBe(true);
  await cluster.close();
  return path;
}

describe("LocalCluster's temp event log", () => {
  it("is deleted by close() when nobody named it", async () => {
    const path = await runOne();
    expect(path.startsWith(tmpdir())).toBe(true);
    expect(existsSync(path)).toBe(false);
  });

  it("is kept, whole, with its path printed, when asked to keep it", async () => {
    const printed: string[] = [];
    const spy = vi.spyOn(process.stderr, "write").mockImplementation((chunk: string | Uint8Array) => {
      printed.push(String(chunk));
      return true;
    });
    let path: string;
    try {
      path = await runOne({ keep: true });
    } finally {
      spy.mockRestore();
    }
    try {
      expect(existsSync(path)).toBe(true);
      expect(printed.join("")).toContain(`event log kept at ${path}`);
      const { records, problems } = readLogSync(path);
      expect(problems).toEqual([]);
      expect(records.some((r) => r.kind === "stop" && r.actor === "scheduler")).toBe(true);
    } finally {
      rmSync(path, { force: true });
    }
  });

  it("is never deleted when the user named its path", async () => {
    const named = join(dir, "mine.natlog");
    expect(await runOne({ path: named })).toBe(named);
    expect(existsSync(named)).toBe(true);
  });
});
