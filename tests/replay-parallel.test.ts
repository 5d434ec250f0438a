/**
 * Replay on several threads (replay/replay-parallel.ts) gives exactly the result of one
 * pass: same verdict, actors, problems (each once, with its line, in line order), state.
 * Checked on a real log and on damaged copies of it: every kind of problem, a divergence,
 * and a forged line that names two actors (which the split cannot place: one pass then).
 */
import { appendFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { partOf } from "../replay/replay-parallel.js";
import { replay } from "../replay/replay.js";
import type { ReplayResult } from "../replay/replay-types.js";
import type { LogRecord, TransitionRecord } from "../log/types.js";
import { findLine, isTransition, lineOf, logLines, recordOf, recordRun, writeLines } from "./replay-fixtures.js";

const dir = mkdtempSync(join(tmpdir(), "natsched-replay-parallel-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const original = join(dir, "run.natlog");
let lines: string[];

beforeAll(async () => {
  await recordRun({ path: original, format: "jsonl" }); // edited line by line below
  lines = logLines(original);
});

function variant(name: string, edit: (copy: string[]) => void, tail = ""): string {
  const copy = [...lines];
  edit(copy);
  const path = join(dir, name);
  writeLines(path, copy);
  if (tail !== "") appendFileSync(path, tail);
  return path;
}

/** The result without what may differ between runs: the time taken and the thread count. */
function comparable(result: ReplayResult): unknown {
  return { ...result, stats: { ...result.stats, seconds: 0, threads: 0 } };
}

async function sameEitherWay(path: string, threadsExpected = true): Promise<ReplayResult> {
  const one = await replay(path, { threads: 1 });
  expect(one.stats.threads).toBe(1);
  for (const threads of [2, 3]) {
    const split = await replay(path, { threads });
    if (threadsExpected) expect(split.stats.threads).toBe(threads);
    expect(comparable(split)).toEqual(comparable(one));
  }
  return one;
}

const at = (pred: (r: LogRecord) => boolean): number => findLine(lines, pred);
const workerLine = (r: LogRecord): boolean => r.actor.startsWith("worker.") && r.seq > 5;
const schedulerTransition = (r: LogRecord): boolean => r.actor === "scheduler" && isTransition(r) && r.seq > 20;

describe("replay on several threads", () => {
  it("splits the actors: the scheduler in part 0, the others over the rest", () => {
    expect(partOf("scheduler", 3)).toBe(0);
    expect(partOf("worker.a", 2)).toBe(1);
    for (const actor of ["worker.a", "worker.b", "client.x"]) expect(partOf(actor, 3)).toBeGreaterThanOrEqual(1);
    expect(partOf("worker.a", 1)).toBe(0);
  });

  it("verifies an intact log exactly as one pass does", async () => {
    const result = await sameEitherWay(original);
    expect(result.ok).toBe(true);
    expect(Object.keys(result.actors).length).toBeGreaterThanOrEqual(4);
  });

  it("reports a gap, a duplicate, a checksum, a malformed and an empty line each once, with its line", async () => {
    const path = variant("damaged.natlog", (copy) => {
      const w = at(workerLine);
      const s = at(schedulerTransition);
      copy.splice(w, 1); // a worker record missing: a gap
      copy.splice(s + 2, 0, copy[s]!); // a scheduler record twice: a duplicate
      const c = s + 10;
      copy[c] = copy[c]!.replace('"kind"', '"kinD"'); // a checksum mismatch
      copy.splice(c + 5, 0, ""); // an empty line
      copy.splice(c + 9, 0, "not a record line");
    });
    const result = await sameEitherWay(path);
    const kinds = result.problems.map((p) => p.kind);
    for (const kind of ["gap", "duplicate", "checksum", "malformed"]) expect(kinds).toContain(kind);
    expect(result.ok).toBe(false);
  });

  it("reports a torn last line and an actor cut off in the middle of an input", async () => {
    const path = variant("torn.natlog", (copy) => copy.splice(copy.length - 40), '0badc0de {"actor":"worker.');
    const result = await sameEitherWay(path);
    expect(result.problems.map((p) => p.kind)).toContain("torn");
  });

  it("finds a rewritten transition as the same divergence, with the state diff", async () => {
    const s = at((r) => r.actor === "scheduler" && isTransition(r) && r.event === "FINISH");
    const path = variant("diverged.natlog", (copy) => (copy[s] = lineOf({ ...(recordOf(copy[s]!) as TransitionRecord), to: "erred" })));
    const result = await sameEitherWay(path);
    expect(result.actors["scheduler"]!.divergence?.state?.length).toBeGreaterThan(0);
    const w = at((r) => r.actor.startsWith("worker.") && isTransition(r) && r.seq > 10);
    const path2 = variant("diverged-worker.natlog", (copy) => (copy[w] = lineOf({ ...(recordOf(copy[w]!) as TransitionRecord), to: "erred" })));
    const result2 = await sameEitherWay(path2);
    expect(Object.values(result2.actors).some((a) => a.divergence !== undefined)).toBe(true);
  });

  it("replays in one pass a line that starts as one actor's and decodes to another's", async () => {
    const w = at(workerLine);
    const forged = recordOf(lines[w]!);
    // A valid line whose first "actor" field is the scheduler, and whose last (the one JSON keeps) a worker.
    const json = `{"actor":"scheduler",${JSON.stringify(forged).slice(1)}`;
    const { crc32 } = await import("node:zlib");
    const line = `${crc32(json).toString(16).padStart(8, "0")} ${json}`;
    const path = variant("forged.natlog", (copy) => (copy[w] = line));
    const one = await replay(path, { threads: 1 });
    const split = await replay(path, { threads: 2 });
    expect(split.stats.threads).toBe(1);
    expect(comparable(split)).toEqual(comparable(one));
    expect(one.ok).toBe(true);
  });
});
