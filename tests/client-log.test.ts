/**
 * The embedded client as a logged actor (client.<id>) in the cluster's log: its start
 * record rebuilds its core, its inputs replay to the same future transitions, and a client
 * record altered (a transition, an input) is a divergence of that actor alone.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readLogSync } from "../log/reader.js";
import type { InputRecord, LogRecord, StartRecord, TransitionRecord } from "../log/types.js";
import { futureMachine, FUTURE } from "../machines/client/future-table.js";
import { replay } from "../replay/replay.js";
import { findLine, isTransition, lineOf, logLines, recordOf, recordRun, writeLines, type RunLog } from "./replay-fixtures.js";

const dir = mkdtempSync(join(tmpdir(), "natsched-client-log-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const original = join(dir, "run.natlog");
let run: RunLog;
let lines: string[];
let records: LogRecord[];
let actor: string;

beforeAll(async () => {
  run = await recordRun({ path: original, format: "jsonl" });
  lines = logLines(original);
  records = readLogSync(original).records;
  actor = records.find((r) => r.kind === "start" && r.role === "client")!.actor;
});

const mine = (r: LogRecord) => r.actor === actor;

function variant(name: string, edit: (copy: string[]) => void): string {
  const copy = [...lines];
  edit(copy);
  const path = join(dir, name);
  writeLines(path, copy);
  return path;
}

describe("the embedded client in the cluster's log", () => {
  it("has a start record with its core's init, its inputs, its futures' transitions and a stop record, and replays clean", async () => {
    const list = records.filter(mine);
    expect(actor).toMatch(/^client\.client-[0-9a-f]{16}$/);
    expect(list.map((r) => r.seq)).toEqual(list.map((_, i) => i));
    const start = list[0] as StartRecord;
    expect(start).toMatchObject({ kind: "start", role: "client", init: { id: actor.slice("client.".length), requestTimeout: 30_000 } });
    expect(list.at(-1)!.kind).toBe("stop");
    const ops = new Set(list.filter((r): r is InputRecord => r.kind === "input").map((r) => r.event.op));
    for (const op of ["attach", "retain", "submit", "flush", "answered", "reports", "wait", "gather", "scatter-start", "update-data", "scatter-end", "release", "close"]) expect(ops).toContain(op);
    // The failed task's future and its dependent's erred.
    const story = (key: string) => list.filter(isTransition).filter((r) => r.id === key).map((r) => `${r.from}>${r.to}`);
    expect(story(run.bad)).toEqual(["pending>error"]);
    expect(story(run.after)).toEqual(["pending>error"]);
    expect(story(run.fromScattered)).toEqual(["pending>finished"]);
    // Every transition is a move of the future machine.
    for (const t of list.filter(isTransition)) expect({ t: `${t.from} ${t.event}`, to: FUTURE.next(t.from as never, t.event as never) }).toEqual({ t: `${t.from} ${t.event}`, to: t.to });
    expect(futureMachine.id).toBe("future");

    const result = await replay(original);
    expect(result.problems).toEqual([]);
    expect(result.ok).toBe(true);
    expect(result.actors[actor]).toMatchObject({ role: "client", stopped: true, transitions: list.filter(isTransition).length, inputs: list.filter((r) => r.kind === "input").length });
    expect(result.actors[actor]!.sent.request).toBeGreaterThan(0);
    // In parts on replay threads too.
    expect((await replay(original, { threads: 2 })).actors[actor]).toEqual(result.actors[actor]);
  });

  it("a client transition rewritten is a divergence of the client, at that input; the other actors replay clean", async () => {
    const at = findLine(lines, (r) => mine(r) && isTransition(r) && r.to === "finished");
    const genuine = recordOf(lines[at]!) as TransitionRecord;
    const path = variant("to.natlog", (copy) => (copy[at] = lineOf({ ...genuine, to: "error" })));
    const result = await replay(path);
    expect(result.ok).toBe(false);
    const d = result.actors[actor]!.divergence!;
    expect(d).toMatchObject({ actor, cause: "input", recorded: { seq: genuine.seq, machine: "future", id: genuine.id, to: "error" }, reproduced: { machine: "future", id: genuine.id, to: "finished" } });
    expect(d.message).toContain(`${actor} diverged at input #`);
    for (const [name, a] of Object.entries(result.actors)) if (name !== actor) expect({ name, divergence: a.divergence }).toEqual({ name, divergence: undefined });
  });

  it("a client input altered (a result reported as failed) is a divergence too", async () => {
    const at = findLine(lines, (r) => mine(r) && r.kind === "input" && r.event.op === "reports" && (r.event.ops as { op: string }[]).every((op) => op.op === "key-in-memory"));
    const genuine = recordOf(lines[at]!) as InputRecord;
    const ops = (genuine.event.ops as { key: string }[]).map((op) => ({ op: "key-erred", key: op.key, failedKey: op.key, error: { name: "Error", message: "forged" } }));
    const path = variant("input.natlog", (copy) => (copy[at] = lineOf({ ...genuine, event: { ...genuine.event, ops } })));
    const result = await replay(path);
    expect(result.ok).toBe(false);
    expect(result.actors[actor]!.divergence).toMatchObject({ actor, seq: genuine.seq, cause: "input", reproduced: { machine: "future", to: "error" } });
  });

  it("a client start record that cannot rebuild the core halts that actor, saying why", async () => {
    const at = findLine(lines, (r) => mine(r) && r.kind === "start");
    const genuine = recordOf(lines[at]!) as StartRecord;
    const path = variant("start.natlog", (copy) => (copy[at] = lineOf({ ...genuine, init: { ...genuine.init, requestTimeout: "soon" } })));
    const result = await replay(path);
    expect(result.ok).toBe(false);
    expect(result.actors[actor]!.halted).toEqual({ seq: genuine.seq, reason: 'cannot rebuild the actor from its start record: a client\'s start record needs requestTimeout (a number), got "soon"' });
  });
});
