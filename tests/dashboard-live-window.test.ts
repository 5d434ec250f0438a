/**
 * A live dashboard over the log file it follows (the embedded cluster's: embedded-thread.ts)
 * keeps no records: the views that read records whole read them again from the file
 * (dashboard/server/log-window.ts). Over a log written in pieces cut anywhere, its answers
 * are those of a model that keeps the records, its window holds the latest records from a
 * frame's start, and its machines count from the window's start at the first ask on, carried
 * on as asked. The follower builds only the fields of inputs' events that the live folds read
 * (LIVE_INPUT_FIELDS): over logs with steals, failures, a killed worker and transfers the
 * summary and the task stream are those of the whole records.
 */
import { appendFile, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readLogSync } from "../log/reader.js";
import type { LogRecord } from "../log/types.js";
import { LIVE_INPUT_FIELDS, LogFollower } from "../dashboard/server/log-follow.js";
import { cutOfQuery } from "../dashboard/server/machines-handler.js";
import { MachineTally } from "../dashboard/server/machine-tally.js";
import { DashboardModel } from "../dashboard/server/model.js";
import { recordIncident, recordTree } from "./support/recorded-runs.js";

const LOG = "tests/fixtures/logs/old-98e2957.natlog";
const records: LogRecord[] = readLogSync(LOG).records;
const source = { kind: "embedded" as const, location: LOG, cluster: "c", live: true };

let dir: string;
let bytes: Buffer;
let header: number;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "natsched-window-"));
  bytes = await readFile(LOG);
  header = bytes.indexOf(10) + 1;
  await recordIncident(join(dir, "incident.natlog"));
  await recordTree(join(dir, "tree.natlog"), 64);
}, 120_000);

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A model reading `path` as the embedded dashboard's thread does, window and all; `grow` appends the next bytes and follows them. */
async function following(path: string, keep: number) {
  await writeFile(path, bytes.subarray(0, header));
  const follower = (await LogFollower.open(path, keep))!;
  const model = new DashboardModel(source, follower.created);
  model.readFrom({ kept: () => follower.window.kept(follower.end()), machines: () => follower.window.machines(follower.end()) });
  let written = header;
  const grow = async (to: number) => {
    await appendFile(path, bytes.subarray(written, to));
    written = to;
    if ((await follower.read((record) => model.add(record))) > 0) model.changed();
  };
  return { follower, model, grow };
}

function keeping(upTo: number, created: number): DashboardModel {
  const model = new DashboardModel(source, created);
  for (const record of records.slice(0, upTo)) model.add(record);
  return model;
}

function tallyOf(some: readonly LogRecord[]): MachineTally {
  const tally = new MachineTally();
  for (const record of some) if (record.kind === "transition") tally.add(record);
  return tally;
}

const MACHINES = ["task", "wtask", "worker", "scheduler", "future"];

/** `handed` are `whole` as the follower builds them: an input's event with the fields the live folds read (all of them when its shape is new in its frame). */
function expectLean(handed: readonly LogRecord[], whole: readonly LogRecord[]): void {
  expect(handed.length).toBe(whole.length);
  let lean = 0;
  handed.forEach((record, i) => {
    const full = whole[i]!;
    if (record.kind !== "input" || full.kind !== "input") return expect(record, `record ${i}`).toEqual(full);
    const { event, ...rest } = record;
    const { event: fullEvent, ...fullRest } = full;
    expect(rest, `record ${i}`).toEqual(fullRest);
    const wanted = Object.fromEntries(Object.entries(fullEvent).filter(([k]) => LIVE_INPUT_FIELDS.has(k)));
    if (Object.keys(event).length < Object.keys(fullEvent).length) {
      lean++;
      expect(event, `record ${i}`).toEqual(wanted);
    } else expect(event, `record ${i}`).toEqual(fullEvent);
  });
  expect(lean).toBeGreaterThan(0);
}

describe("a live model that reads its records from the log file it follows", () => {
  it("hands on every record of a log written in pieces cut anywhere, once, in order", async () => {
    const path = join(dir, "pieces.natlog");
    await writeFile(path, bytes.subarray(0, header));
    const follower = (await LogFollower.open(path, 50_000))!;
    try {
      const handed: LogRecord[] = [];
      for (let to = header; to < bytes.length; ) {
        const from = to;
        to = Math.min(bytes.length, to + 1 + ((to * 7919) % 9000));
        await appendFile(path, bytes.subarray(from, to));
        const n = await follower.read((record) => handed.push(record));
        expect(follower.end().records).toBe(handed.length);
        expect(n).toBeGreaterThanOrEqual(0);
      }
      expectLean(handed, records);
      expect(follower.end()).toEqual({ offset: bytes.length, records: records.length });
      expect(follower.problems).toEqual([]);
    } finally {
      await follower.close();
    }
  });

  it("answers the records kept, stories and cuts as a model keeping the records does", async () => {
    const { follower, model, grow } = await following(join(dir, "views.natlog"), 50_000);
    try {
      const half = Math.floor(bytes.length / 2);
      for (const to of [half, bytes.length]) {
        await grow(to);
        const n = model.size;
        const kept = keeping(n, follower.created);
        const read = await model.kept();
        expect(read.dropped).toBe(0);
        expect(read.records).toEqual(records.slice(0, n));
        const keys = [...new Set(records.slice(0, n).flatMap((r) => (r.kind === "transition" && r.machine === "task" ? [r.id] : [])))];
        for (const key of [keys[0]!, keys[Math.floor(keys.length / 2)]!, keys.at(-1)!]) expect(await model.story(key), key).toEqual(await kept.story(key));
        for (const query of [`index=0`, `index=${Math.floor(n / 3)}`, `index=${n}`, "seq=40", "t=0.5"]) {
          expect(await model.at(cutOfQuery(new URLSearchParams(query))!), query).toEqual(await kept.at(cutOfQuery(new URLSearchParams(query))!));
        }
        expect(model.summary()).toEqual(kept.summary());
      }
    } finally {
      await follower.close();
    }
  });

  it("reads at least the latest `keep` records, from the start of a frame", async () => {
    const keep = 300;
    const { follower, model, grow } = await following(join(dir, "window.natlog"), keep);
    try {
      for (let to = header; to < bytes.length; ) {
        to = Math.min(bytes.length, to + 20_000);
        await grow(to);
        const { records: read, dropped } = await model.kept();
        expect(dropped + read.length).toBe(model.size);
        expect(read.length).toBeGreaterThanOrEqual(Math.min(keep, model.size));
        expect(read).toEqual(records.slice(dropped, model.size));
      }
      expect((await model.kept()).dropped).toBeGreaterThan(0);
      // A story of what is left says so.
      const last = records.findLast((r) => r.kind === "transition" && r.machine === "task") as { id: string };
      expect((await model.story(last.id)).partial).toMatch(/keeps the latest/);
    } finally {
      await follower.close();
    }
  });

  it("counts the machines from the window's start at the first ask, carried on from each ask to the next", async () => {
    const { follower, model, grow } = await following(join(dir, "machines.natlog"), 100);
    try {
      let first: number | undefined;
      for (let to = header; to < bytes.length; ) {
        to = Math.min(bytes.length, to + 15_000);
        await grow(to);
        const asked = await Promise.all([model.wholeMachines()!, model.wholeMachines()!]);
        for (const { tally, records: counted, dropped } of asked) {
          first ??= dropped;
          expect(dropped).toBe(first);
          expect(counted).toBe(model.size - dropped);
          const fresh = tallyOf(records.slice(dropped, model.size));
          for (const machine of MACHINES) {
            expect(tally.edges(machine), machine).toEqual(fresh.edges(machine));
            expect(tally.counts(machine), machine).toEqual(fresh.counts(machine));
          }
        }
      }
    } finally {
      await follower.close();
    }
    // Asked first at the end: the window's records alone, not the whole file.
    const late = await following(join(dir, "machines-late.natlog"), 100);
    try {
      await late.grow(bytes.length);
      const { records: counted, dropped } = await late.model.wholeMachines()!;
      const { dropped: windowStart } = await late.model.kept();
      expect(dropped).toBe(windowStart);
      expect(dropped).toBeGreaterThan(0);
      expect(counted).toBe(records.length - dropped);
    } finally {
      await late.follower.close();
    }
  });

  it("folds the summary and the task stream of the fields it builds as of the whole records (steals, failures, a killed worker, transfers)", async () => {
    for (const name of ["incident", "tree"]) {
      const path = join(dir, `${name}.natlog`);
      const whole = readLogSync(path).records;
      const follower = (await LogFollower.open(path, 50_000))!;
      try {
        const handed: LogRecord[] = [];
        const lean = new DashboardModel({ ...source, location: path }, follower.created);
        await follower.read((record) => (handed.push(record), lean.add(record)));
        expectLean(handed, whole);
        const kept = new DashboardModel({ ...source, location: path }, follower.created);
        for (const record of whole) kept.add(record);
        expect(lean.summary(), name).toEqual(kept.summary());
        expect(lean.streamJson(), name).toBe(kept.streamJson());
        const kinds = new Set(whole.map((r) => (r.kind === "transition" ? `${r.machine}:${r.event}` : r.kind === "input" ? `input:${String(r.event.op)}` : r.kind)));
        if (name === "incident") for (const kind of ["task:STEAL_CONFIRM", "wtask:FAIL", "stop"]) expect(kinds.has(kind), kind).toBe(true);
        if (name === "tree") expect(kinds.has("input:gather-done"), "transfers").toBe(true);
      } finally {
        await follower.close();
      }
    }
  }, 60_000);
});
