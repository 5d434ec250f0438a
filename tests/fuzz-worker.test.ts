/**
 * A worker survives anything on its subjects. A real WorkerActor on the in-process bus (with
 * and without a wire, so values are serialized and chunked as on NATS), a stand-in scheduler,
 * a peer that serves data and one that is gone, and an adversary sending random scheduler ops
 * and data-plane requests (tests/support/worker-fuzz-moves.ts): the worker never throws,
 * answers every request, and its bookkeeping stays sound (tests/support/worker-bookkeeping.ts);
 * its log replays exactly.
 *
 * 60 runs from seed 1 by default (a few seconds); FUZZ_RUNS=<n> FUZZ_SEED=<n> search longer or elsewhere.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Clock } from "../actors/host/clock.js";
import { WorkerActor } from "../actors/worker-actor.js";
import { NatschedError } from "../machines/errors.js";
import { MemoryLogSink } from "../log/memory-log.js";
import { replay } from "../replay/replay.js";
import { MemoryBus } from "../transport/memory.js";
import type { Msg, Payload, Transport } from "../transport/types.js";
import { WireLike } from "./support/wire-like.js";
import { workerBookkeepingProblems } from "./support/worker-bookkeeping.js";
import { ADVERSARY_SOURCE, PEER_KEYS, resolveSchedulerOp, workerMovesArb, type WorkerMove } from "./support/worker-fuzz-moves.js";

const CLUSTER = "wf";

class ManualClock implements Clock {
  t = 1_000;
  now(): number {
    return this.t;
  }
}

/** A task function that returns only when the test lets it ("progress" moves, and at the end). */
class Gate {
  private waiting: (() => void)[] = [];
  pass<T>(value: () => T): Promise<T> {
    return new Promise<void>((resolve) => this.waiting.push(resolve)).then(value);
  }
  release(): void {
    for (const resolve of this.waiting.splice(0)) resolve();
  }
}

/** Errors a worker reports about what it was sent: a refusal, never a fault of its own. */
const REFUSALS = new Set(["ProtocolError", "KeyExistsError", "TimeoutError"]);

async function run(moves: WorkerMove[], wire: boolean): Promise<string[]> {
  const problems: string[] = [];
  const clock = new ManualClock();
  const log = new MemoryLogSink();
  const gate = new Gate();
  const bus = new MemoryBus({ copy: true, onError: (error, msg) => problems.push(`handler for ${msg.subject} threw: ${String((error as Error)?.stack ?? error)}`) });
  const connect = (name: string): Transport => (wire ? new WireLike(bus.connect(name)) : bus.connect(name));
  const scheduler = connect("scheduler");
  const adversary = connect("adversary");
  const peer = connect("peer");
  const sub = `natsched.${CLUSTER}`;
  // The stand-in scheduler: takes the registration, and answers the scatter lease's who-has.
  scheduler.subscribe(`${sub}.scheduler.worker.w`, (msg: Msg) => {
    if (msg.reply !== undefined) scheduler.publish(msg.reply, { replies: ((msg.data as { ops?: unknown[] }).ops ?? []).map(() => ({ ok: true })) });
  });
  scheduler.subscribe(`${sub}.query`, (msg: Msg) => {
    const keys = (msg.data as { keys?: string[] }).keys ?? [];
    if (msg.reply !== undefined) scheduler.publish(msg.reply, { whoHas: Object.fromEntries(keys.map((k) => [k, k.length % 2 === 0 ? ["w"] : []])) });
  });
  // Peer p serves its keys; peer q is gone (no responders).
  peer.subscribe(`${sub}.data.p`, (msg: Msg) => {
    const keys = ((msg.data as { keys?: unknown[] }).keys ?? []) as string[];
    const held = keys.map((k) => PEER_KEYS.includes(k));
    if (msg.reply !== undefined) peer.publish(msg.reply, { values: held.map((h) => (h ? 42 : null)), nbytes: held.map((h) => (h ? 8 : -1)), missing: keys.filter((_, i) => !held[i]) });
  });
  // The adversary serves odd chunks for the transfers its put-data names.
  adversary.subscribe(ADVERSARY_SOURCE, (msg: Msg) => {
    const index = (msg.data as { index?: number }).index ?? 0;
    if (msg.reply !== undefined) adversary.publish(msg.reply, index % 3 === 2 ? { error: "no" } : new Uint8Array(index % 2 === 0 ? 4096 : 7));
  });
  const worker = new WorkerActor({
    cluster: CLUSTER,
    transport: connect("worker"),
    name: "w",
    id: "w-1",
    nthreads: 2,
    functions: { inc: (x: number) => x + 1, fail: () => { throw new Error("fails"); }, slow: () => gate.pass(() => "slow") },
    clock,
    log,
    transferIncomingCountLimit: 2,
    heartbeatInterval: Infinity,
    transferTimeout: 200,
    scatterLease: 0.01,
    onError: (error) => {
      if (!(error instanceof NatschedError && REFUSALS.has(error.name))) problems.push(`reported: ${String((error as Error)?.stack ?? error)}`);
    },
  });
  await worker.start();
  const check = (when: string) => {
    // A closed worker has dropped its data store with everything else.
    const store = worker.core.state === "running" ? worker.store : null;
    for (const problem of workerBookkeepingProblems(worker.core, store)) problems.push(`${when}: ${problem}`);
  };
  try {
    for (const [i, move] of moves.entries()) {
      clock.t += 0.001;
      if (move.kind === "progress") gate.release();
      else {
        const subject = move.kind === "scheduler" || (move.kind === "garbage" && move.to === "scheduler") ? `${sub}.worker.w` : `${sub}.data.w`;
        const body = move.kind === "scheduler" ? { v: 1, from: "scheduler", ops: [resolveSchedulerOp(move.op, worker.core)] } : move.body;
        if (!move.request) adversary.publish(subject, body as Payload);
        else {
          const reply = (await adversary.request(subject, body as Payload, { timeout: 2000 }).catch((e: unknown) => ({ failed: e }))) as Record<string, unknown>;
          const closed = worker.core.state === "closed" || worker.core.state === "closing";
          if ("failed" in reply && !closed) problems.push(`move ${i}: request on ${subject} got no reply: ${String(reply.failed)}`);
          for (const r of (reply.replies as { ok: boolean; error?: { name: string; message: string } }[] | undefined) ?? []) {
            if (!r.ok && r.error?.name === "InternalError") problems.push(`move ${i}: the worker failed on ${JSON.stringify(body)}: ${r.error.message}`);
          }
        }
      }
      await bus.connect("flush").flush();
      await new Promise((r) => setImmediate(r));
      check(`after move ${i} (${JSON.stringify(move).slice(0, 300)})`);
      if (problems.length > 0) return problems;
    }
    gate.release();
    await new Promise((r) => setTimeout(r, 30));
    check("at the end");
  } finally {
    worker.close({ reason: "fuzz over" });
    for (const t of [scheduler, adversary, peer]) await t.close();
  }
  const replayed = await replay(log.records);
  if (!replayed.ok) problems.push(`replay: ${JSON.stringify(Object.values(replayed.actors).map((a) => a.divergence ?? a.threw ?? a.halted).filter(Boolean)).slice(0, 600)} ${JSON.stringify(replayed.problems.slice(0, 2))}`);
  return problems;
}

describe("a worker under hostile traffic on its subjects", () => {
  it("never throws, answers every request, keeps its bookkeeping, replays", async () => {
    await fc.assert(
      fc.asyncProperty(workerMovesArb, fc.boolean(), async (moves, wire) => {
        expect(await run(moves, wire)).toEqual([]);
      }),
      { numRuns: Number(process.env.FUZZ_RUNS ?? 60), seed: Number(process.env.FUZZ_SEED ?? 1), interruptAfterTimeLimit: 60_000 },
    );
  }, 120_000);
});
