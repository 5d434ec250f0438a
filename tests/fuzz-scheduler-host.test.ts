/**
 * The scheduler survives anything published on its subjects. A real SchedulerActor, honest
 * workers and an honest client on the in-process bus (the same host path as NATS: envelope
 * and op checks, the role checks, the core), and an adversary sending random schema-valid
 * but hostile ops (tests/support/scheduler-fuzz-moves.ts) interleaved with the honest
 * client's submissions and releases. After every message the scheduler's bookkeeping holds
 * (verify/scheduler-bookkeeping.ts) and every request was answered; the scheduler never
 * throws. Then the adversary's workers go (as liveness would remove them) and every future
 * the honest client still holds settles, with the right value or a typed error; and the
 * scheduler's log replays exactly.
 *
 * 50 runs from seed 1 by default (a few seconds); FUZZ_RUNS=<n> FUZZ_SEED=<n> search longer or elsewhere.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Clock } from "../actors/host/clock.js";
import { Client, Future } from "../actors/client.js";
import { LocalCluster } from "../actors/local-cluster.js";
import { NatschedError } from "../machines/errors.js";
import type { TaskSpec } from "../machines/protocol.js";
import { MemoryLogSink } from "../log/memory-log.js";
import { replay } from "../replay/replay.js";
import { checkSchedulerBookkeeping } from "../verify/scheduler-bookkeeping.js";
import { FAKE_WORKERS, HONEST_KEYS, movesArb, resolve, type Move } from "./support/scheduler-fuzz-moves.js";

class ManualClock implements Clock {
  t = 1_000;
  now(): number {
    return this.t;
  }
}

/**
 * The honest workers' functions finish only when the test lets them (a "progress" move, and
 * at the end): tasks stay processing across the adversary's moves, where its reports can
 * meet them, and its own workers get work too.
 */
class Gate {
  private waiting: (() => void)[] = [];
  open = false;
  pass<T>(value: () => T): Promise<T> {
    if (this.open) return Promise.resolve().then(value);
    return new Promise<void>((resolve) => this.waiting.push(resolve)).then(value);
  }
  release(): void {
    for (const resolve of this.waiting.splice(0)) resolve();
  }
}

function gatedFunctions(gate: Gate) {
  return {
    inc: (x: number) => gate.pass(() => x + 1),
    add: (a: number, b: number) => gate.pass(() => a + b),
    fail: () =>
      gate.pass(() => {
        throw new Error("fails on purpose");
      }),
  };
}

/** The honest client's tasks, by key, and the value each must have. */
const HONEST: Record<string, { func: string; args: (number | string)[]; value?: number }> = {
  "inc-0": { func: "inc", args: [0], value: 1 },
  "inc-1": { func: "inc", args: [1], value: 2 },
  "inc-2": { func: "inc", args: [2], value: 3 },
  "inc-3": { func: "inc", args: [3], value: 4 },
  "inc-4": { func: "inc", args: [4], value: 5 },
  "inc-5": { func: "inc", args: [5], value: 6 },
  "add-0": { func: "add", args: ["inc-0", "inc-1"], value: 3 },
  "add-1": { func: "add", args: ["inc-2", "inc-3"], value: 7 },
  "fail-0": { func: "fail", args: ["inc-2"] },
};

function honestSpec(key: string): TaskSpec {
  const { func, args } = HONEST[key]!;
  const deps = args.filter((a): a is string => typeof a === "string");
  return { key, func, args: args.map((a) => (typeof a === "string" ? { $key: a } : a)), deps };
}

/** Errors a scheduler reports about what it was sent: a refusal, never a fault of its own. */
const REFUSALS = new Set(["ProtocolError", "ForbiddenError", "KeyExistsError"]);

const TIMED_OUT = Symbol("timed out");

interface Outcome {
  problems: string[];
}

async function run(moves: Move[]): Promise<Outcome> {
  const problems: string[] = [];
  const clock = new ManualClock();
  const log = new MemoryLogSink();
  const gate = new Gate();
  const cluster = await LocalCluster.start({
    name: "fz",
    workers: [{ name: "a", nthreads: 2 }, { name: "b" }],
    functions: gatedFunctions(gate),
    log,
    clock,
    configFile: false,
    // Nothing on the wall clock (stealing passes, heartbeats and their metrics): every input
    // comes from a move, so a seed replays the same run.
    config: { workStealingInterval: 3600, heartbeatInterval: 600, clientReleaseGrace: 3600, workerTtl: 3600, allowedFailures: 1 },
    onError: (error) => {
      if (!(error instanceof NatschedError && REFUSALS.has(error.name))) problems.push(`reported: ${String((error as Error)?.stack ?? error)}`);
    },
  });
  const adversary = cluster.bus.connect("adversary");
  const client: Client = cluster.client();
  const futures: Future[] = [];
  const released = new Set<Future>();
  const holding = () => futures.filter((f) => !released.has(f));
  const submit = (key: string): Future => {
    const { func, args } = HONEST[key]!;
    const live = (dep: string) => holding().find((f) => f.key === dep) ?? submit(dep);
    const future = client.submit(func, args.map((a) => (typeof a === "string" ? live(a) : a)), { key });
    futures.push(future);
    return future;
  };
  const check = (when: string) => {
    checkSchedulerBookkeeping(cluster.scheduler.core, (invariant, message) => problems.push(`${when}: ${invariant}: ${message}`));
  };
  try {
    for (const key of HONEST_KEYS) submit(key);
    await cluster.flush();
    for (const [i, move] of moves.entries()) {
      clock.t += 0.001;
      if (move.kind === "tick") clock.t += move.seconds;
      else if (move.kind === "progress") gate.release();
      else if (move.kind === "balance") cluster.scheduler.feed({ op: "balance", t: clock.t });
      else if (move.kind === "honest-submit") submit(HONEST_KEYS[move.key]!);
      else if (move.kind === "honest-release") {
        const live = holding();
        if (live.length > 0) {
          const future = live[move.which % live.length]!;
          future.release();
          released.add(future);
        }
      } else {
        const message = resolve(move, "fz", cluster.scheduler.core, honestSpec);
        if (!message.request) adversary.publish(message.subject, message.body as never);
        else {
          const reply = (await adversary.request(message.subject, message.body as never, { timeout: 2000 }).catch((e: unknown) => ({ failed: String(e) }))) as Record<string, unknown>;
          if ("failed" in reply) problems.push(`move ${i}: request on ${message.subject} got no reply: ${String(reply.failed)}`);
          for (const r of (reply.replies as { ok: boolean; error?: { name: string; message: string } }[] | undefined) ?? []) {
            if (!r.ok && r.error?.name === "InternalError") problems.push(`move ${i}: the scheduler failed on ${JSON.stringify(message.body)}: ${r.error.message}`);
          }
        }
      }
      await cluster.flush();
      check(`after move ${i} (${JSON.stringify(move)})`);
      if (problems.length > 0) return { problems };
    }
    // The adversary's workers go, as liveness removes a silent worker; the honest ones work.
    gate.open = true;
    gate.release();
    for (const name of FAKE_WORKERS) {
      const ws = cluster.scheduler.core.workers.get(name);
      if (ws !== undefined) cluster.scheduler.feed({ op: "worker-lost", name, id: ws.id, reason: "fuzz over", t: clock.t });
    }
    await cluster.flush();
    check("after the adversary's workers left");
    const live = holding();
    const settled = await Promise.race([Promise.all(live.map((f) => f.wait())), new Promise<null>((r) => setTimeout(() => r(null), 2000))]);
    if (settled === null) {
      const core = cluster.scheduler.core;
      const stuck = live.filter((f) => f.status === "pending").map((f) => `${f.key} (${core.tasks.get(f.key)?.state ?? "forgotten"} on the scheduler)`);
      problems.push(`futures never settled: ${stuck.join(", ")}`);
      return { problems };
    }
    // Nothing holds a slot for good: with every input of a processing task in memory, the
    // honest workers finish it or report why they cannot.
    const core = cluster.scheduler.core;
    const processing = () => [...core.tasks.values()].filter((ts) => ts.processingOn !== null);
    for (let i = 0; i < 50 && processing().length > 0; i++) await new Promise((r) => setTimeout(r, 10));
    for (const ts of processing()) {
      const held = cluster.workers.get(ts.processingOn!.name)?.core.tasks.get(ts.key);
      problems.push(`${ts.key} is still ${ts.state} on ${ts.processingOn!.name}, which has it ${held?.state ?? "not at all"}`);
    }
    for (const future of live) {
      const { key } = future;
      const value = await Promise.race([future.result(), new Promise((r) => setTimeout(() => r(TIMED_OUT), 1000))]).catch((e: unknown) => e);
      if (value === TIMED_OUT) problems.push(`${key} is ${future.status}, but its result never came`);
      else if (value instanceof Error) {
        if (!(value instanceof NatschedError)) problems.push(`${key} failed with an untyped ${String(value)}`);
      } else if (value !== HONEST[key]!.value) problems.push(`${key} gathered ${String(value)}, expected ${HONEST[key]!.value}`);
    }
  } finally {
    await client.close().catch(() => undefined);
    await adversary.close();
    await cluster.close();
  }
  const replayed = await replay(log.records);
  if (!replayed.ok) problems.push(`replay: ${JSON.stringify(Object.entries(replayed.actors).filter(([, a]) => a.divergence ?? a.threw ?? a.halted).slice(0, 2))} ${JSON.stringify(replayed.problems.slice(0, 2))}`);
  return { problems };
}

describe("the scheduler host under hostile traffic", () => {
  it("never throws, keeps its bookkeeping, answers every request, settles every honest future, replays", async () => {
    await fc.assert(
      fc.asyncProperty(movesArb, async (moves) => {
        const { problems } = await run(moves);
        expect(problems).toEqual([]);
      }),
      { numRuns: Number(process.env.FUZZ_RUNS ?? 50), seed: Number(process.env.FUZZ_SEED ?? 1), interruptAfterTimeLimit: 60_000 },
    );
  }, 120_000);
});
