/**
 * ClientCore under any interleaving of the user's calls, the scheduler's answers, reports and
 * new runs, holders that deliver or not, timers and a close: every promise the host made is
 * settled exactly once (never twice, never one it did not make), those with a timeout once
 * the time has passed and every answer is in, and all of them once the client closes. The
 * core never asks for a timer it has running, clears one it has not, nor sends a request
 * that is still out; and its futures are the ones the host holds, and the transitions it
 * reports for them (machine "future", what the log records) follow each one's status.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ClientCore } from "../machines/client/core.js";
import { timerName, type ClientInput, type ClientInstruction, type ClientQuery, type ClientStimulus, type ClientTimer } from "../machines/client/inputs.js";
import type { ClientToScheduler, SchedulerToClient } from "../machines/protocol.js";
import type { SchedulerReply } from "../machines/scheduler/inputs.js";
import { CLIENT_INIT } from "./support/client-core-init.js";

const KEYS = ["k0", "k1", "k2", "k3", "k4"];
const WORKERS = ["w0", "w1", "w2"];

type Action =
  | { a: "submit"; key: number; deps: number[] }
  | { a: "scatter"; key: number }
  | { a: "release"; key: number }
  | { a: "wait"; keys: number[]; timeout: number | undefined }
  | { a: "gather"; keys: number[]; timeout: number | undefined }
  | { a: "join" }
  | { a: "flush" }
  | { a: "report"; key: number; kind: number; workers: number[] }
  | { a: "answer-request"; pick: number; refuse: number }
  | { a: "fail-request"; pick: number; noResponders: boolean }
  | { a: "answer-query"; pick: number; wanted: number; known: number; run: number; reports: number; garbage: boolean }
  | { a: "fail-query"; pick: number }
  | { a: "fetch"; pick: number; outcome: number }
  | { a: "timer"; pick: number }
  | { a: "announce"; run: number | undefined }
  | { a: "reconnected" }
  | { a: "resuming" }
  | { a: "resumed" }
  | { a: "advance"; ms: number }
  | { a: "close" };

const key = fc.nat(KEYS.length - 1);
const keys = fc.array(key, { minLength: 1, maxLength: 3 });
const timeout = fc.option(fc.integer({ min: 0, max: 3000 }), { nil: undefined });
const mask = fc.nat(31);
const w = <T>(weight: number, arbitrary: fc.Arbitrary<T>) => ({ weight, arbitrary });
const actionArb: fc.Arbitrary<Action> = fc.oneof(
  w(8, fc.record({ a: fc.constant("submit" as const), key, deps: fc.array(key, { maxLength: 2 }) })),
  w(3, fc.record({ a: fc.constant("scatter" as const), key })),
  w(4, fc.record({ a: fc.constant("release" as const), key })),
  w(6, fc.record({ a: fc.constant("wait" as const), keys, timeout })),
  w(6, fc.record({ a: fc.constant("gather" as const), keys, timeout })),
  w(2, fc.constant({ a: "join" as const })),
  w(10, fc.constant({ a: "flush" as const })),
  w(10, fc.record({ a: fc.constant("report" as const), key, kind: fc.nat(5), workers: fc.array(fc.nat(WORKERS.length - 1), { minLength: 1, maxLength: 2 }) })),
  w(8, fc.record({ a: fc.constant("answer-request" as const), pick: fc.nat(), refuse: fc.oneof(fc.constant(0), mask) })),
  w(4, fc.record({ a: fc.constant("fail-request" as const), pick: fc.nat(), noResponders: fc.boolean() })),
  w(6, fc.record({ a: fc.constant("answer-query" as const), pick: fc.nat(), wanted: mask, known: mask, run: fc.nat(2), reports: mask, garbage: fc.boolean() })),
  w(2, fc.record({ a: fc.constant("fail-query" as const), pick: fc.nat() })),
  w(8, fc.record({ a: fc.constant("fetch" as const), pick: fc.nat(), outcome: fc.nat(3) })),
  w(8, fc.record({ a: fc.constant("timer" as const), pick: fc.nat() })),
  w(2, fc.record({ a: fc.constant("announce" as const), run: fc.option(fc.integer({ min: 2, max: 4 }), { nil: undefined }) })),
  w(2, fc.constant({ a: "reconnected" as const })),
  w(1, fc.constant({ a: "resuming" as const })),
  w(1, fc.constant({ a: "resumed" as const })),
  w(4, fc.record({ a: fc.constant("advance" as const), ms: fc.integer({ min: 1, max: 2000 }) })),
  w(1, fc.constant({ a: "close" as const })),
);

function bits(m: number): string[] {
  return KEYS.filter((_, i) => (m >> i) & 1);
}

/** A host in miniature: it keeps what is out (requests, queries, fetches, timers) and the promises it made. */
class World {
  /** Each held key's future as the reported transitions leave it (absent: pending, as a future begins). */
  readonly reported = new Map<string, string>();
  readonly core = new ClientCore(
    { ...CLIENT_INIT, requestTimeout: 800, resumeWait: 3000 },
    {
      transition: (_machine, key, event, from, to) => {
        const was = this.reported.get(key) ?? "pending";
        if (from !== was) this.problems.push(`${key} ${event}: from ${from}, but it was ${was}`);
        this.reported.set(key, to);
      },
    },
  );
  t = 0;
  private nextId = 1;
  private flushPending = false;
  private readonly requests = new Map<number, { ops: readonly ClientToScheduler[]; attempt: number }>();
  /** Tries a request was sent again over (a resumed scheduler, a new run): their answers must change nothing. */
  private stale: { request: number; attempt: number }[] = [];
  private stimulus = "";
  private readonly queries = new Map<number, ClientQuery>();
  private fetches: { gather: number; holder: string; keys: string[] }[] = [];
  private readonly timers = new Map<string, { timer: ClientTimer; due: number; every: number | null }>();
  /** Promises made: kind and id -> whether it had a timeout; and those settled. */
  readonly made = new Map<string, boolean>();
  readonly settled = new Set<string>();
  private readonly scatterOf = new Map<string, number>();
  readonly refs = new Map<string, number>();
  readonly problems: string[] = [];

  feed(stimulus: ClientStimulus): void {
    this.stimulus = stimulus.op;
    for (const i of this.core.handle({ ...stimulus, t: this.t } as ClientInput)) this.apply(i);
  }

  /** The answer to a try sent over since: nothing may come of it. */
  private answerStale(): boolean {
    const stale = this.stale.shift();
    if (stale === undefined) return false;
    const out = this.core.handle({ op: "request-failed", request: stale.request, attempt: stale.attempt, noResponders: false, failure: { kind: "host", error: { name: "TimeoutError", message: "late" } }, t: this.t });
    if (out.length > 0) this.problems.push(`the answer to try ${stale.attempt} of request ${stale.request}, sent again since, did something`);
    return true;
  }

  private promise(kind: string, timed = false): number {
    const id = this.nextId++;
    this.made.set(`${kind}-${id}`, timed);
    return id;
  }

  private settle(name: string): void {
    if (!this.made.has(name)) this.problems.push(`settled ${name}, never made`);
    if (this.settled.has(name)) this.problems.push(`settled ${name} twice`);
    this.settled.add(name);
    const scatter = this.scatterOf.get(name);
    if (scatter !== undefined) this.feed({ op: "scatter-end", scatter });
  }

  private apply(i: ClientInstruction): void {
    switch (i.do) {
      case "schedule-flush":
        if (this.flushPending) this.problems.push("a flush scheduled twice");
        this.flushPending = true;
        break;
      case "request": {
        const out = this.requests.get(i.request);
        // Only a resumed scheduler, or one that announces a new run, makes the client send again
        // what is out (the try may have gone to the one before).
        if (out !== undefined) {
          if ((this.stimulus !== "scheduler-resumed" && this.stimulus !== "scheduler-started") || i.attempt <= out.attempt) this.problems.push(`request ${i.request} sent while out`);
          this.stale.push({ request: i.request, attempt: out.attempt });
        }
        this.requests.set(i.request, { ops: i.ops, attempt: i.attempt });
        break;
      }
      case "publish":
        break;
      case "query":
        this.queries.set(i.query, i.body);
        break;
      case "fetch":
        this.fetches.push({ gather: i.gather, holder: i.holder, keys: i.keys });
        break;
      case "set-timer": {
        const name = timerName(i.timer);
        if (this.timers.has(name)) this.problems.push(`timer ${name} set while running`);
        this.timers.set(name, { timer: i.timer, due: this.t + i.ms, every: i.repeat ? i.ms : null });
        break;
      }
      case "clear-timer": {
        const name = timerName(i.timer);
        if (!this.timers.delete(name)) this.problems.push(`timer ${name} cleared, not running`);
        break;
      }
      case "answer-call":
      case "fail-call":
        this.settle(`call-${i.call}`);
        break;
      case "resolve-wait":
      case "reject-wait":
        this.settle(`wait-${i.wait}`);
        break;
      case "resolve-gather":
      case "reject-gather":
        this.settle(`gather-${i.gather}`);
        break;
    }
  }

  private pick<T>(items: T[], n: number): T | undefined {
    return items.length === 0 ? undefined : items[n % items.length];
  }

  private retain(k: string): void {
    this.refs.set(k, (this.refs.get(k) ?? 0) + 1);
    this.feed({ op: "retain", keys: [k] });
  }

  run(action: Action): void {
    const open = !this.core.closed;
    switch (action.a) {
      case "submit": {
        if (!open) return;
        const k = KEYS[action.key]!;
        const deps = action.deps.map((d) => KEYS[d]!).filter((d) => d !== k && (this.refs.get(d) ?? 0) > 0);
        this.retain(k);
        return this.feed({ op: "submit", tasks: [{ key: k, func: "f", args: deps, deps }], wants: [k] });
      }
      case "scatter": {
        if (!open) return;
        const k = KEYS[action.key]!;
        this.retain(k);
        const scatter = this.nextId++;
        this.feed({ op: "scatter-start", scatter, keys: [k] });
        const call = this.promise("call");
        this.scatterOf.set(`call-${call}`, scatter);
        return this.feed({ op: "update-data", call, data: [{ key: k, nbytes: 8, workers: ["w0"] }] });
      }
      case "release": {
        const k = KEYS[action.key]!;
        const n = this.refs.get(k) ?? 0;
        if (n === 0) return;
        this.refs.set(k, n - 1);
        return this.feed({ op: "release", keys: [k] });
      }
      case "wait":
        return this.feed({ op: "wait", wait: this.promise("wait", action.timeout !== undefined), keys: action.keys.slice(0, 1).map((k) => KEYS[k]!), timeout: action.timeout });
      case "gather":
        if (!open) return;
        return this.feed({ op: "gather", gather: this.promise("gather", action.timeout !== undefined), keys: action.keys.map((k) => KEYS[k]!), timeout: action.timeout });
      case "join":
        if (!open) return;
        return this.feed({ op: "join", call: this.promise("call") });
      case "flush":
        if (!this.flushPending) return;
        this.flushPending = false;
        return this.feed({ op: "flush" });
      case "report": {
        const k = KEYS[action.key]!;
        const workers = action.workers.map((w) => WORKERS[w]!);
        const op: SchedulerToClient =
          action.kind < 4
            ? { op: "key-in-memory", key: k, nbytes: 8, workers }
            : action.kind === 4
              ? { op: "key-erred", key: k, failedKey: k, error: { name: "E", message: "m" } }
              : { op: "key-cancelled", key: k, reason: "r" };
        return this.feed({ op: "reports", ops: [op] });
      }
      case "answer-request": {
        const id = this.pick([...this.requests.keys()], action.pick);
        if (id === undefined) return;
        const { ops, attempt } = this.requests.get(id)!;
        this.requests.delete(id);
        const replies: SchedulerReply[] = ops.map((_, n) => ((action.refuse >> n) & 1 ? { ok: false, error: { name: "GraphError", message: "no", code: "GRAPH" } } : { ok: true }));
        return this.feed({ op: "answered", request: id, replies, attempt });
      }
      case "fail-request": {
        const id = this.pick([...this.requests.keys()], action.pick);
        if (id === undefined) return;
        const { attempt } = this.requests.get(id)!;
        this.requests.delete(id);
        return this.feed({ op: "request-failed", request: id, attempt, noResponders: action.noResponders, failure: { kind: "host", error: { name: "ProtocolError", message: "no responders" } } });
      }
      case "answer-query": {
        const id = this.pick([...this.queries.keys()], action.pick);
        if (id === undefined) return;
        const body = this.queries.get(id)!;
        this.queries.delete(id);
        if (body.op === "who-has") return this.feed({ op: "who-has", query: id, whoHas: Object.fromEntries(bits(action.known).map((k) => [k, [WORKERS[action.run]!]])) });
        if (action.garbage) return this.feed({ op: "client-keys", query: id, answer: null });
        const reports: SchedulerToClient[] = bits(action.reports).map((k) => ({ op: "key-in-memory", key: k, nbytes: 8, workers: ["w1"] }));
        return this.feed({ op: "client-keys", query: id, answer: { known: bits(action.known), wanted: bits(action.wanted), run: action.run, reports } });
      }
      case "fail-query": {
        const id = this.pick([...this.queries.keys()], action.pick);
        if (id === undefined) return;
        this.queries.delete(id);
        return this.feed({ op: "query-failed", query: id });
      }
      case "fetch": {
        const f = this.pick(this.fetches, action.pick);
        if (f === undefined) return;
        this.fetches = this.fetches.filter((x) => x !== f);
        if (action.outcome === 0) return this.feed({ op: "fetched", gather: f.gather, holder: f.holder, keys: f.keys, missing: [] });
        if (action.outcome === 1) return this.feed({ op: "fetched", gather: f.gather, holder: f.holder, keys: f.keys, missing: f.keys.slice(0, 1) });
        const refused = action.outcome === 3 ? { kind: "host" as const, error: { name: "HolderRefusedError", message: "no" } } : undefined;
        return this.feed({ op: "fetch-failed", gather: f.gather, holder: f.holder, keys: f.keys, refused });
      }
      case "timer": {
        const name = this.pick([...this.timers.keys()].sort(), action.pick);
        if (name === undefined) return;
        this.fire(name);
        return;
      }
      case "announce":
        return this.feed(action.run === undefined ? { op: "scheduler-started" } : { op: "scheduler-started", run: action.run });
      case "reconnected":
        return this.feed({ op: "reconnected" });
      case "resuming":
        return this.feed({ op: "scheduler-resuming", every: 100 });
      case "resumed":
        return this.feed({ op: "scheduler-resumed" });
      case "advance":
        this.t += action.ms;
        return;
      case "close":
        if (!open) return;
        return this.feed({ op: "close", call: this.promise("call") });
    }
  }

  private fire(name: string): void {
    const timer = this.timers.get(name)!;
    this.t = Math.max(this.t, timer.due);
    if (timer.every === null) this.timers.delete(name);
    else timer.due = this.t + timer.every;
    this.feed({ op: "timer", timer: timer.timer });
  }

  /** Answer everything that is out (holders deliver, the scheduler accepts), fire every timer but the heartbeat, until nothing is left. */
  drain(): void {
    for (let step = 0; step < 2000; step++) {
      if (this.flushPending) {
        this.flushPending = false;
        this.feed({ op: "flush" });
        continue;
      }
      if (this.answerStale()) continue;
      const request = [...this.requests.keys()][0];
      if (request !== undefined) {
        const { ops, attempt } = this.requests.get(request)!;
        this.requests.delete(request);
        this.feed({ op: "answered", request, replies: ops.map(() => ({ ok: true })), attempt });
        continue;
      }
      const query = [...this.queries.keys()][0];
      if (query !== undefined) {
        this.queries.delete(query);
        this.feed({ op: "query-failed", query });
        continue;
      }
      const fetch = this.fetches.shift();
      if (fetch !== undefined) {
        this.feed({ op: "fetched", gather: fetch.gather, holder: fetch.holder, keys: fetch.keys, missing: [] });
        continue;
      }
      const timers = [...this.timers].filter(([, t]) => t.every === null).sort((a, b) => a[1].due - b[1].due);
      if (timers.length > 0) {
        this.fire(timers[0]![0]);
        continue;
      }
      return;
    }
    this.problems.push("drain did not end");
  }

  /** The core's futures are the keys the host holds futures for (until it closes). */
  checkFutures(): void {
    // A key no longer held ends its future: held again, it begins pending.
    for (const k of [...this.reported.keys()]) if (!this.core.holds(k)) this.reported.delete(k);
    const statuses = this.core.futures().map((f) => `${f.key}:${f.status}`).sort();
    const reported = this.core.futures().map((f) => `${f.key}:${this.reported.get(f.key) ?? "pending"}`).sort();
    if (statuses.join() !== reported.join()) this.problems.push(`futures ${statuses.join()} != reported ${reported.join()}`);
    if (this.core.closed) {
      if (this.core.futures().length > 0) this.problems.push("futures left after close");
      return;
    }
    const held = [...this.refs].filter(([, n]) => n > 0).map(([k, n]) => `${k}:${n}`).sort();
    const core = this.core.futures().map((f) => `${f.key}:${f.refs}`).sort();
    if (held.join() !== core.join()) this.problems.push(`futures ${core.join()} != held ${held.join()}`);
    for (const [k, spec] of this.core.keptSpecs()) {
      const needed = this.core.holds(k) || [...this.core.keptSpecs().values()].some((s) => s.key !== k && s.deps.includes(k));
      if (!needed) this.problems.push(`spec of ${k} kept, needed by nothing (${spec.deps.join()})`);
    }
  }

  unsettled(onlyTimed: boolean): string[] {
    return [...this.made].filter(([name, timed]) => (!onlyTimed || timed) && !this.settled.has(name)).map(([name]) => name);
  }
}

describe("ClientCore under any interleaving", () => {
  it("settles every promise once: those with a timeout when their time is up, all of them on close", () => {
    fc.assert(
      fc.property(fc.array(actionArb, { minLength: 5, maxLength: 80, size: "large" }), (actions) => {
        const world = new World();
        world.feed({ op: "attach" });
        for (const action of actions) {
          world.run(action);
          world.checkFutures();
        }
        // Every answer in and every timer fired: what has a timeout is settled (calls too: the scheduler answered).
        world.drain();
        world.checkFutures();
        expect(world.problems).toEqual([]);
        const timedOrCalls = world.unsettled(false).filter((name) => name.startsWith("call-") || world.made.get(name) === true);
        expect(timedOrCalls).toEqual([]);
        // Closed: everything is.
        world.run({ a: "close" });
        world.drain();
        expect(world.problems).toEqual([]);
        expect(world.unsettled(false)).toEqual([]);
      }),
      { numRuns: 400 },
    );
  });
});
