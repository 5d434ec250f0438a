/** `natsched replay`: what it prints and its exit codes. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../cli/run.js";
import { readLogSync } from "../log/reader.js";
import type { LogRecord, TransitionRecord } from "../log/types.js";
import { findLine, isTransition, lineOf, logLines, recordOf, recordRun, writeLines } from "./replay-fixtures.js";
import { assignedWorker } from "./sim-helpers.js";

const dir = mkdtempSync(join(tmpdir(), "natsched-replay-cli-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const path = join(dir, "run.natlog");
let records: LogRecord[];

beforeAll(async () => {
  await recordRun({ path, format: "jsonl" }); // edited line by line below
  records = readLogSync(path).records;
});

async function cli(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(["replay", ...argv], { out: (text) => out.push(text), err: (text) => err.push(text) });
  return { code, out: out.join("\n"), err: err.join("\n") };
}

describe("natsched replay", () => {
  it("exits 0 on a log that replays, with a summary per actor", async () => {
    const { code, out, err } = await cli(path);
    expect(err).toBe("");
    expect(code).toBe(0);
    const transitions = records.filter(isTransition).length;
    expect(out).toContain(`replay of ${path}: ok`);
    expect(out).toContain(`${records.length} records, ${records.filter((r) => r.kind === "input").length} inputs re-fed, ${transitions} transitions reproduced`);
    for (const actor of ["scheduler", "worker.worker-0", "worker.worker-1", "worker.worker-2"]) expect(out).toMatch(new RegExp(`^  ${actor.replace(".", "\\.")} .* stopped$`, "m"));
    expect(out).not.toContain("cluster state");
  });

  it("--state --until prints the cluster at that point", async () => {
    const assign = records.find((r): r is TransitionRecord => isTransition(r) && r.actor === "scheduler" && r.event === "ASSIGN" && r.id.startsWith("slow-"))!;
    const { code, out } = await cli(path, "--until", String(assign.seq), "--state");
    expect(code).toBe(0);
    expect(out).toContain(`cluster state at scheduler #${assign.seq}`);
    expect(out).toMatch(new RegExp(`^    processing\\.assigned +\\d+  .*${assign.id}`, "m"));
    expect(out).toContain("workers as the scheduler sees them:");
    expect(out).toMatch(new RegExp(`^    ${assignedWorker(assign)} +running +2 `, "m"));
    expect(out).toContain("worker cores:");
    const json = await cli(path, "--until", String(assign.seq), "--json");
    expect(JSON.parse(json.out).state.scheduler.tasks["processing.assigned"]).toContain(assign.id);
  });

  it("exits 1 and prints the divergence on a tampered log", async () => {
    const lines = logLines(path);
    const at = findLine(lines, (r) => isTransition(r) && r.actor === "scheduler" && r.event === "FINISH");
    const genuine = recordOf(lines[at]!) as TransitionRecord;
    lines[at] = lineOf({ ...genuine, to: "erred" });
    const tampered = join(dir, "tampered.natlog");
    writeLines(tampered, lines);
    const { code, out, err } = await cli(tampered);
    expect(code).toBe(1);
    expect(out).toContain(`replay of ${tampered}: DIVERGED`);
    expect(err).toContain("DIVERGENCE: scheduler diverged at input #");
    expect(err).toContain(`  recorded:   #${genuine.seq} task ${genuine.id}: ${genuine.from} -> erred (FINISH)`);
    expect(err).toContain(`  reproduced: task ${genuine.id}: ${genuine.from} -> memory (FINISH)`);
    expect(err).toContain(`  task ${genuine.id}, before -> after the input (as replayed):`);
    expect(err).toContain(`    state: "${genuine.from}" -> "memory"`);
  });

  it("exits 1 on an incomplete log, saying where", async () => {
    const lines = logLines(path);
    const at = findLine(lines, (r) => r.kind === "input" && r.actor === "worker.worker-0" && r.seq > 3);
    lines.splice(at, 1);
    const gap = join(dir, "gap.natlog");
    writeLines(gap, lines);
    const { code, out, err } = await cli(gap);
    expect(code).toBe(1);
    expect(out).toContain(`replay of ${gap}: INCOMPLETE`);
    expect(err).toContain("INCOMPLETE LOG: 1 problem(s)");
    expect(err).toContain(`  gap at line ${at + 1} (worker.worker-0): line ${at + 1}: actor worker.worker-0 expected seq`);
  });

  it("exits 2 on bad usage, 1 on a missing file", async () => {
    expect((await cli()).code).toBe(2);
    expect((await cli(path, "--until", "soon")).code).toBe(2);
    expect((await cli(path, "--until", "soon")).err).toContain('--until takes a seq (1234), an actor and seq (worker.a:40), a time (1763785.5) or seconds from the start (+2.5), got "soon"');
    expect((await cli(path, "--bogus")).code).toBe(2);
    const missing = await cli(join(dir, "nope.natlog"));
    expect(missing.code).toBe(1);
    expect(missing.err).toContain("no such file");
    const nobody = await cli(path, "--actor", "worker.nobody");
    expect(nobody.code).toBe(1);
    expect(nobody.err).toContain('no records of actor "worker.nobody"');
  });

  it("--until +seconds and --actor", async () => {
    const start = records.find((r) => r.actor === "worker.worker-2" && r.kind === "start")!;
    const since = (start.t - records[0]!.t + 0.001).toFixed(6);
    const { code, out } = await cli(path, "--actor", "worker.worker-2", "--until", `+${since}`, "--state");
    expect(code).toBe(0);
    expect(out).toMatch(/^  worker\.worker-2 /m);
    expect(out).not.toMatch(/^  scheduler /m);
    expect(out).toContain("scheduler: not replayed");
    // Times from the run's start (the log's first record), the start itself once.
    const t0 = records[0]!.t;
    expect(out).toContain(`cluster state at +${(t0 + Number(since) - t0).toFixed(3)}s`);
    expect(out).toContain(`(t=${t0})`);
  });
});
