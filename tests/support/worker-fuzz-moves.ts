/**
 * Moves of an adversary on a worker's subjects, for tests/fuzz-worker.test.ts: scheduler ops
 * on `natsched.<c>.worker.<name>` for odd keys, inputs, holders, runs and assignment numbers
 * (the current one, the next, stale ones), and data-plane requests on `natsched.<c>.data.<name>`
 * (get-data, get-chunk, put-data with odd keys, values, encodings, inline blobs and transfer
 * manifests), and garbage on both. `resolve` reads the worker's numbers at the moment a move
 * is sent, so a compute-task for "the next assignment" is one the worker takes.
 */
import fc from "fast-check";
import { serialize } from "node:v8";
import type { WorkerCore } from "../../machines/worker/core.js";

/** Keys peer `p` serves (tests/fuzz-worker.test.ts). */
export const PEER_KEYS = ["p-0", "p-1"];
const KEYS = ["x-0", "x-1", "x-2", "y-0", ...PEER_KEYS, "", "__proto__", "constructor", "toString", "k".repeat(200)];
/** The worker under test, a peer that serves data, a peer nobody serves, and a name nobody has. */
const HOLDERS = ["w", "p", "q", "ghost"];
/** Where the adversary offers the chunks of a put-data's transfer. */
export const ADVERSARY_SOURCE = "natsched.wf.client.evil.data.1";

const HELD = "held-attempt";
const NEXT = "next-attempt";

export type WorkerMove =
  | { kind: "scheduler"; op: Record<string, unknown>; request: boolean }
  | { kind: "data"; body: unknown; request: boolean }
  | { kind: "garbage"; to: "scheduler" | "data"; body: unknown; request: boolean }
  | { kind: "progress" };

const key = fc.constantFrom(...KEYS);
const keys = fc.array(key, { maxLength: 4 });
const run = fc.constantFrom(undefined, 1, 1, 1, 1, 2);
const attempt = fc.constantFrom(undefined, 0, 1, HELD, NEXT, NEXT, NEXT, 2 ** 40);
const dep = fc.record({ key, nbytes: fc.constantFrom(-1, 0, 8, 1e6), holders: fc.subarray(HOLDERS) });
const arg = fc.oneof({ weight: 3, arbitrary: fc.jsonValue({ maxDepth: 2 }) }, { weight: 2, arbitrary: key.map(($key) => ({ $key })) }, { weight: 1, arbitrary: fc.constant({ $lit: null }) });

const schedulerOp = fc.oneof(
  {
    weight: 30,
    arbitrary: fc.record({
      op: fc.constant("compute-task"),
      key,
      func: fc.constantFrom("inc", "inc", "fail", "slow", "slow", "nope", "constructor", "toString", "natsched.identity"),
      args: fc.array(arg, { maxLength: 3 }),
      deps: fc.array(dep, { maxLength: 3 }),
      priority: fc.tuple(fc.integer({ min: -3, max: 3 }), fc.nat({ max: 3 }), fc.nat({ max: 3 })),
      duration: fc.constantFrom(0, 0.5, 1e9),
      run,
      attempt,
    }),
  },
  { weight: 15, arbitrary: fc.record({ op: fc.constant("free-keys"), keys, run, attempt }) },
  { weight: 10, arbitrary: fc.record({ op: fc.constant("steal-request"), key, requestId: fc.constantFrom("r-1", "r-2"), run, attempt }) },
  { weight: 10, arbitrary: fc.record({ op: fc.constant("acquire-replicas"), keys: fc.array(dep, { maxLength: 3 }) }) },
  // Rare: the worker leaves, and the rest of the run checks it stays down quietly.
  { weight: 1, arbitrary: fc.record({ op: fc.constant("close-worker"), reason: fc.constant("fuzz") }) },
);

const value = fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.constant("v".repeat(20_000)));
const dataDict = fc.dictionary(key, value, { maxKeys: 3 });

const dataRequest = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant("get-data"),
      keys: fc.array(fc.oneof({ weight: 4, arbitrary: key }, { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 1 }) }), { maxLength: 4 }),
      who: fc.constantFrom("evil", ""),
      encoding: fc.constantFrom(undefined, "v8", "json", "bogus"),
      layout: fc.constantFrom(undefined, "list", "object", "bogus"),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("get-chunk"), id: fc.constantFrom("nope", "latest"), index: fc.constantFrom(0, 1, -1, 1.5, 1e9) }) },
  { weight: 4, arbitrary: fc.record({ op: fc.constant("put-data"), who: fc.constant("evil"), data: dataDict }) },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant("put-data"),
      who: fc.constant("evil"),
      encoding: fc.constantFrom(undefined, "v8", "json"),
      inline: fc.oneof(dataDict.map((data) => serialize({ data }).toString("base64")), fc.constantFrom("", "!!!not base64", Buffer.from("{]").toString("base64"))),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant("put-data"),
      who: fc.constant("evil"),
      transfer: fc.record({
        id: fc.constant("t-1"),
        size: fc.constantFrom(0, 10, 5000, 3e9),
        chunkBytes: fc.constantFrom(1, 4096, 1e6),
        encoding: fc.constantFrom("v8", "json"),
      }).map((m) => ({ ...m, chunks: Math.ceil(m.size / m.chunkBytes) })),
      source: fc.constantFrom(ADVERSARY_SOURCE, ADVERSARY_SOURCE, "natsched.wf.nowhere"),
    }),
  },
);

export const workerMovesArb: fc.Arbitrary<WorkerMove[]> = fc.array(
  fc.oneof(
    { weight: 8, arbitrary: fc.record({ kind: fc.constant("scheduler" as const), op: schedulerOp, request: fc.boolean() }) },
    { weight: 6, arbitrary: fc.record({ kind: fc.constant("data" as const), body: dataRequest, request: fc.constantFrom(true, true, true, false) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant("garbage" as const), to: fc.constantFrom("scheduler" as const, "data" as const), body: fc.jsonValue({ maxDepth: 3 }), request: fc.boolean() }) },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant("progress" as const) }) },
  ),
  { minLength: 5, maxLength: 50 },
);

/** The scheduler op a move stands for now: assignment numbers from the worker's (held, or one past anything it knows of the key). */
export function resolveSchedulerOp(op: Record<string, unknown>, core: WorkerCore): Record<string, unknown> {
  const out = Object.fromEntries(Object.entries(op).filter(([, v]) => v !== undefined));
  const ts = typeof out.key === "string" ? core.tasks.get(out.key) : undefined;
  const voided = typeof out.key === "string" ? core.voided.get(out.key) ?? 0 : 0;
  if (out.attempt === HELD) out.attempt = ts?.attempt ?? 0;
  else if (out.attempt === NEXT) out.attempt = Math.max(ts?.attempt ?? 0, voided) + 1;
  return out;
}
