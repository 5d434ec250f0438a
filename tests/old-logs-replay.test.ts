/**
 * Logs recorded by an earlier natsched replay with today's cores: the layout of the code
 * (log/, replay/, tools/, the host kit, the client core, typed reasons) changed after them,
 * the log format did not. tests/fixtures/logs/old-98e2957.* were recorded by commit 98e2957
 * (before issue 21) with tests/fixtures/logs/record-old-log.ts.txt, in both file formats: an
 * embedded cluster of three workers with stealing on, 24 slow roots and their sums, a failing
 * task, data scattered and used, a worker killed, the failed key submitted again, a worker
 * retired.
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readLogSync, type LogRecord, type TransitionRecord } from "../log/index.js";
import { readReason } from "../machines/reasons.js";
import { replay } from "../replay/index.js";
import { storyLines } from "../tools/story.js";

const DIR = join(import.meta.dirname, "fixtures/logs");

describe.each(["old-98e2957.natlog", "old-98e2957.jsonl"])("%s, recorded before the floors", (file) => {
  const path = join(DIR, file);

  it("replays: every actor reproduces its recorded transitions", async () => {
    const result = await replay(path);
    expect(result.problems).toEqual([]);
    expect(result.ok).toBe(true);
    expect(Object.keys(result.actors).sort()).toEqual(["scheduler", "worker.a", "worker.b", "worker.c"]);
    expect(result.stats.transitions).toBeGreaterThan(400);
  });

  it("reads back: every why is a reason of a known kind, and a story explains the failed key", () => {
    const records: LogRecord[] = readLogSync(path).records;
    const transitions = records.filter((r): r is TransitionRecord => r.kind === "transition");
    const unknown = transitions.map((r) => readReason(r)).filter((reason) => reason.kind === "unknown");
    expect(unknown).toEqual([]);
    const failed = transitions.find((r) => r.machine === "task" && r.to === "erred")!;
    expect(failed).toBeDefined();
    const lines = storyLines(records, failed.id);
    expect(lines.some((line) => line.text.includes("erred"))).toBe(true);
  });
});
