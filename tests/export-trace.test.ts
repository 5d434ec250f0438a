/**
 * `natsched export <log> --format trace`: Chrome Trace Event JSON of a real run, checked as
 * Perfetto reads it: JSON, an "X" event per execution on a named thread of a named
 * process, flows that pair up, each end inside a slice on its thread, deaths as instants.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "../cli/run.js";
import { FileLogSink } from "../log/file-log.js";
import type { LogRecord } from "../log/types.js";
import type { TraceEvent, TraceFile } from "../tools/trace-events.js";
import { embeddedRun, simulatedRun } from "./support/task-stream-runs.js";

const dir = mkdtempSync(join(tmpdir(), "natsched-trace-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function writeLog(name: string, records: LogRecord[]): Promise<string> {
  const path = join(dir, name);
  const sink = await FileLogSink.open(path);
  for (const record of records) sink.append(record);
  await sink.close();
  return path;
}

async function cli(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(argv, { out: (text) => out.push(text), err: (text) => err.push(text) });
  return { code, out: out.join("\n"), err: err.join("\n") };
}

function checkTrace(trace: TraceFile, records: LogRecord[]): void {
  const events = trace.traceEvents;
  const executions = records.filter((r) => r.kind === "transition" && r.actor.startsWith("worker.") && r.machine === "wtask" && r.event === "EXECUTE");
  const bars = events.filter((e) => e.ph === "X" && e.cat !== "transfer" && e.cat !== "steal");
  expect(bars.length).toBe(executions.length);
  expect(bars.map((e) => e.name).sort()).toEqual(executions.map((r) => (r as { id: string }).id).sort());
  for (const bar of bars) expect(["ok", "erred", "cancelled", "lost", "running"]).toContain(bar.args?.outcome);

  const processNames = new Map(events.filter((e) => e.ph === "M" && e.name === "process_name").map((e) => [e.pid, String(e.args?.name)]));
  const threadNames = new Set(events.filter((e) => e.ph === "M" && e.name === "thread_name").map((e) => `${e.pid}/${e.tid}`));
  for (const e of events.filter((e) => e.ph !== "M")) {
    expect(processNames.has(e.pid)).toBe(true);
    if (e.ph !== "i") expect(threadNames.has(`${e.pid}/${e.tid}`)).toBe(true);
  }

  // Slices on one thread never cross (they may only nest), or Perfetto drops them.
  const byThread = new Map<string, TraceEvent[]>();
  for (const e of events.filter((e) => e.ph === "X")) byThread.set(`${e.pid}/${e.tid}`, [...(byThread.get(`${e.pid}/${e.tid}`) ?? []), e]);
  for (const slices of byThread.values()) {
    slices.sort((a, b) => a.ts! - b.ts!);
    for (let i = 1; i < slices.length; i++) expect(slices[i]!.ts!).toBeGreaterThanOrEqual(slices[i - 1]!.ts! + slices[i - 1]!.dur!);
  }

  const starts = events.filter((e) => e.ph === "s");
  const finishes = events.filter((e) => e.ph === "f");
  expect(starts.map((e) => `${e.cat} ${e.id}`).sort()).toEqual(finishes.map((e) => `${e.cat} ${e.id}`).sort());
  expect(new Set(starts.map((e) => e.id)).size).toBe(starts.length);
  for (const flow of [...starts, ...finishes]) {
    const enclosing = (byThread.get(`${flow.pid}/${flow.tid}`) ?? []).filter((x) => x.cat === flow.cat && x.ts! <= flow.ts! && flow.ts! <= x.ts! + x.dur!);
    expect(enclosing.length).toBe(1);
  }
  const fetched = records.flatMap((r) => (r.kind === "input" && r.event.op === "gather-done" ? (r.event.received as unknown[]).concat(r.event.missing as unknown[]) : []));
  expect(starts.filter((e) => e.cat === "transfer").length).toBe(fetched.length);
  const steals = records.filter((r) => r.kind === "transition" && r.actor === "scheduler" && r.event === "STEAL");
  expect(starts.filter((e) => e.cat === "steal").length).toBe(steals.length);
}

describe("natsched export --format trace", () => {
  let embedded: LogRecord[];
  beforeAll(async () => {
    embedded = await embeddedRun();
  }, 60_000);

  it("writes an embedded run (transfers, a failure, a killed worker) as trace events Perfetto can read", async () => {
    const path = await writeLog("embedded.natlog", embedded);
    const out = join(dir, "embedded.trace.json");
    const { code, out: text } = await cli("export", path, "--format", "trace", "--out", out);
    expect(code).toBe(0);
    expect(text).toMatch(/wrote .*embedded\.trace\.json: \d+ executions on 3 workers/);
    const trace = JSON.parse(readFileSync(out, "utf8")) as TraceFile;
    checkTrace(trace, embedded);
    expect(trace.traceEvents.filter((e) => e.ph === "i").map((e) => e.args?.worker)).toEqual(["gamma"]);
    expect(trace.traceEvents.some((e) => e.ph === "X" && e.args?.outcome === "erred" && e.cat === "boom")).toBe(true);
  });

  it("writes the simulator's log too, with its steal as a flow from victim to thief, next to the log by default", async () => {
    const records = simulatedRun();
    const path = await writeLog("sim.natlog", records);
    const { code } = await cli("export", path, "--format", "trace");
    expect(code).toBe(0);
    const trace = JSON.parse(readFileSync(join(dir, "sim.trace.json"), "utf8")) as TraceFile;
    checkTrace(trace, records);
    const pidOf = (worker: string) => trace.traceEvents.find((e) => e.ph === "M" && e.name === "process_name" && String(e.args?.name).startsWith(`worker ${worker} `))!.pid;
    const steal = trace.traceEvents.filter((e) => e.cat === "steal" && (e.ph === "s" || e.ph === "f"));
    expect(steal.map((e) => [e.ph, e.pid])).toEqual([
      ["s", pidOf("b")],
      ["f", pidOf("c")],
    ]);
  });

  it("refuses --around with --format trace, and an unknown format", async () => {
    expect((await cli("export", "x.natlog", "--format", "trace", "--around", "k")).code).toBe(2);
    const unknown = await cli("export", "x.natlog", "--format", "svg");
    expect(unknown.code).toBe(2);
    expect(unknown.err).toMatch(/expected trace or slice, got svg/);
  });
});
