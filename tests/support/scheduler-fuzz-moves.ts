/**
 * Moves of an adversary on the scheduler's subjects, for tests/fuzz-scheduler-host.test.ts:
 * schema-valid but hostile ops (fake workers registering with odd holdings, reports for
 * existing and unknown keys, incarnations and assignment numbers, graphs, releases and scatters
 * over everything), ops on the wrong subject, and garbage. Generated with fast-check, so a
 * failure shrinks to a short sequence; `resolve` turns a move into a message against the
 * scheduler's state at the moment it is sent (current assignment numbers, steal requests in
 * flight), which is what makes a forged report land.
 */
import fc from "fast-check";
import type { SchedulerCore } from "../../machines/scheduler/core.js";
import type { TaskSpec } from "../../machines/protocol.js";

/** Keys the honest client submits (tests/fuzz-scheduler-host.test.ts defines their tasks). */
export const HONEST_KEYS = ["inc-0", "inc-1", "inc-2", "inc-3", "inc-4", "inc-5", "add-0", "add-1", "fail-0"] as const;
/** Keys only the adversary creates. */
const OWN_KEYS = ["z-0", "z-1", "z-2"];
/** Keys no task may have, or that are merely odd. */
const ODD_KEYS = ["", "__proto__", "constructor", "k".repeat(300), "natsched.x.>", "ü-0"];
const KEYS = [...HONEST_KEYS, ...OWN_KEYS, ...ODD_KEYS];
/** Workers the adversary registers (it may also name the honest ones, with an id it made up). */
export const FAKE_WORKERS = ["f1", "f2"];
const NAMES = [...FAKE_WORKERS, "f1", "f1", "f2", "a", "b", "ghost"];
const CLIENTS = ["evil", "evil2"];

/** Placeholders `resolve` replaces with the scheduler's numbers for the op's key. */
const CURRENT = "current-attempt";
const NEXT = "next-attempt";
const IN_FLIGHT = "request-in-flight";
/** An update-graph sent as generated: its deps are not trimmed to keys the scheduler has. */
const AS_IS = "as-is";

export type Move =
  | { kind: "worker"; op: Record<string, unknown>; subject: number; request: boolean }
  | { kind: "client"; op: Record<string, unknown>; subject: number; request: boolean }
  | { kind: "garbage"; body: unknown; subject: number; request: boolean }
  | { kind: "honest-submit"; key: number }
  | { kind: "honest-release"; which: number }
  | { kind: "tick"; seconds: number }
  /** The honest workers' running tasks finish. */
  | { kind: "progress" }
  /** A work-stealing pass (the scheduler's host runs one every workStealingInterval). */
  | { kind: "balance" };

const key = fc.constantFrom(...KEYS);
/** Keys data may be stored under (validate-ops refuses the others), and now and then one it refuses. */
const dataKey = fc.oneof({ weight: 6, arbitrary: fc.constantFrom(...OWN_KEYS, "ü-0") }, { weight: 3, arbitrary: fc.constantFrom(...HONEST_KEYS) }, { weight: 1, arbitrary: key });
/** Keys of the adversary's own tasks mostly; the honest ones (sent with the honest spec), and odd ones. */
const specKey = fc.oneof({ weight: 6, arbitrary: fc.constantFrom(...OWN_KEYS) }, { weight: 2, arbitrary: fc.constantFrom(...HONEST_KEYS) }, { weight: 1, arbitrary: key });
const keys = fc.array(key, { maxLength: 4 });
const nbytes = fc.constantFrom(-1, 0, 8, 8, 1e6, 1e15, 0.5);
const attempt = fc.constantFrom(undefined, 0, 1, CURRENT, CURRENT, CURRENT, NEXT, 2 ** 40);
const name = fc.constantFrom(...NAMES);
const incarnation = fc.constantFrom("A", "A", "A", "A", "B");
const keySizes = fc.array(fc.record({ key, nbytes }), { maxLength: 4 });
const time = fc.constantFrom(0, 1, 1e9, -5);
const error = fc.record({ name: fc.constantFrom("Error", "KilledWorker"), message: fc.constantFrom("forged", ""), code: fc.constantFrom(undefined, "TASK_FAILED") });

const registerOp = fc.record({
  op: fc.constant("register-worker"),
  name: fc.constantFrom(...FAKE_WORKERS),
  id: incarnation,
  nthreads: fc.integer({ min: 1, max: 3 }),
  host: fc.constantFrom("h", "evil-host"),
  resources: fc.constantFrom({}, { GPU: 1 }, { GPU: -1 }, { GPU: 1e300 }, { "": 0 }),
  functions: fc.subarray(["inc", "add", "fail", "nope"]),
  holding: fc.option(keySizes, { nil: undefined }),
});

const workerOp = fc.oneof(
  { weight: 3, arbitrary: registerOp },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("unregister-worker"), name, id: incarnation, reason: fc.constantFrom("bye", "") }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("retire-worker"), name, id: fc.option(incarnation, { nil: undefined }), reason: fc.option(fc.constant("retire"), { nil: undefined }) }) },
  { weight: 5, arbitrary: fc.record({ op: fc.constant("task-finished"), worker: name, id: incarnation, key, nbytes, start: time, stop: time, attempt }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant("task-erred"), worker: name, id: incarnation, key, error, attempt }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant("add-keys"), worker: name, id: incarnation, keys: keySizes }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("missing-data"), worker: name, id: incarnation, key, holder: name }) },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant("steal-response"),
      worker: name,
      id: incarnation,
      key,
      requestId: fc.constantFrom(IN_FLIGHT, IN_FLIGHT, "forged-1"),
      outcome: fc.constantFrom("confirm", "reject"),
      state: fc.constantFrom("released", "ready", "waiting", "executing", "memory", "nonsense"),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant("worker-metrics"),
      worker: name,
      id: incarnation,
      executing: fc.array(fc.tuple(key, fc.constantFrom(0, 0.5, 1e9)), { maxLength: 3 }),
      bandwidth: fc.constantFrom(1, 1e8, 1e300),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("heartbeat"), name, id: incarnation }) },
);

const taskSpec = fc.record({
  key: specKey,
  func: fc.constantFrom("inc", "inc", "add", "fail", "nope"),
  deps: fc.subarray(KEYS, { maxLength: 2 }),
  priority: fc.option(fc.integer({ min: -5, max: 5 }), { nil: undefined }),
  retries: fc.option(fc.integer({ min: 0, max: 2 }), { nil: undefined, freq: 3 }),
  workers: fc.option(fc.constantFrom(["f1"], ["a"], ["ghost"], []), { nil: undefined, freq: 2 }),
  resources: fc.option(fc.constantFrom({ GPU: 1 }, { MEM: 1e12 }), { nil: undefined, freq: 3 }),
  allowOtherWorkers: fc.option(fc.boolean(), { nil: undefined }),
});

const clientOp = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant("update-graph"),
      client: fc.constantFrom(...CLIENTS),
      tasks: fc.array(taskSpec, { maxLength: 4 }),
      wants: keys,
      // Mostly a graph the scheduler takes (deps it knows), sometimes one it must refuse.
      [AS_IS]: fc.constantFrom(false, false, false, true),
    }),
  },
  { weight: 3, arbitrary: fc.record({ op: fc.constant("release-keys"), client: fc.constantFrom(...CLIENTS), keys }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("fire-and-forget"), client: fc.constantFrom(...CLIENTS), keys }) },
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant("update-data"),
      client: fc.constantFrom(...CLIENTS),
      data: fc.array(
        fc.record({
          key: dataKey,
          nbytes,
          // Honest workers too: data they were never given (a client that lies, or one whose put-data went to an earlier incarnation).
          workers: fc.oneof(fc.subarray(NAMES, { maxLength: 3 }), fc.constantFrom(["a"], ["b"], ["a", "f1"])),
          existing: fc.option(fc.boolean(), { nil: undefined, freq: 4 }),
        }),
        { minLength: 1, maxLength: 2 },
      ),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("client-join"), client: fc.constantFrom(...CLIENTS) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("client-leave"), client: fc.constantFrom(...CLIENTS), reason: fc.option(fc.constant("gone"), { nil: undefined }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("heartbeat-client"), client: fc.constantFrom(...CLIENTS) }) },
);

/** Mostly the subject of the op's own role; sometimes another one (refused), or the wrong tree. */
const subject = fc.constantFrom(0, 0, 0, 0, 0, 0, 1, 2, 3, 4);

const registerMove = fc.record({ kind: fc.constant("worker" as const), op: registerOp, subject: fc.constant(0), request: fc.boolean() });

const anyMove: fc.Arbitrary<Move> = fc.oneof(
  { weight: 12, arbitrary: fc.record({ kind: fc.constant("worker" as const), op: workerOp, subject, request: fc.boolean() }) },
  { weight: 8, arbitrary: fc.record({ kind: fc.constant("client" as const), op: clientOp, subject, request: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("garbage" as const), body: fc.jsonValue({ maxDepth: 3 }), subject, request: fc.boolean() }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("garbage" as const),
      body: fc.record({ v: fc.constant(1), from: fc.constant("x"), ops: fc.array(fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.record({ op: fc.constantFrom("task-finished", "update-graph", "worker-lost", "scheduler-close", "balance") }))) }),
      subject,
      request: fc.boolean(),
    }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("honest-submit" as const), key: fc.nat({ max: HONEST_KEYS.length - 1 }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("honest-release" as const), which: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("tick" as const), seconds: fc.constantFrom(0.001, 0.05, 1) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("progress" as const) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("balance" as const) }) },
);

/** A run of moves: the adversary's workers register first (most of its ops need one), then anything. */
export const movesArb: fc.Arbitrary<Move[]> = fc
  .tuple(fc.array(registerMove, { minLength: 1, maxLength: 2 }), fc.array(anyMove, { minLength: 10, maxLength: 60 }))
  .map(([first, rest]) => [...first, ...rest]);

/** A message to send: on `subject`, as a request or not. */
export interface Message {
  subject: string;
  body: unknown;
  request: boolean;
}

/**
 * The message a move stands for now. Worker ids become `<name>-<incarnation>`; assignment
 * numbers and steal request ids the scheduler's current ones for the op's key. Specs of the
 * honest client's keys in a graph are the honest specs (`honestSpec`), and only over keys the
 * scheduler has: a client that defines a task first decides what it computes, restrictions
 * nobody meets included (clients share the key namespace, docs/nats.md "The trust model"),
 * which is not what this test is about.
 */
export function resolve(move: Extract<Move, { kind: "worker" | "client" | "garbage" }>, cluster: string, core: SchedulerCore, honestSpec: (key: string) => TaskSpec): Message {
  const base = `natsched.${cluster}.scheduler`;
  if (move.kind === "garbage") return { subject: otherSubject(base, move.subject), body: move.body, request: move.request };
  const op: Record<string, unknown> = { ...move.op };
  if (move.kind === "worker") {
    const worker = String(op.op === "register-worker" || op.op === "unregister-worker" || op.op === "retire-worker" || op.op === "heartbeat" ? op.name : op.worker);
    if (op.id !== undefined) op.id = `${worker}-${String(op.id)}`;
    const ts = typeof op.key === "string" ? core.tasks.get(op.key) : undefined;
    if (op.attempt === CURRENT) op.attempt = ts?.attempt ?? 0;
    else if (op.attempt === NEXT) op.attempt = (ts?.attempt ?? 0) + 1;
    if (op.requestId === IN_FLIGHT) op.requestId = (ts !== undefined ? core.stealing?.inFlight.get(ts)?.requestId : undefined) ?? "none";
    const own = `${base}.worker.${worker}`;
    return { subject: move.subject === 0 ? own : otherSubject(base, move.subject), body: envelope(worker, op), request: move.request };
  }
  if (op.op === "update-graph") {
    const specs: TaskSpec[] = [];
    const asIs = op[AS_IS] === true;
    delete op[AS_IS];
    for (const spec of op.tasks as TaskSpec[]) {
      if ((HONEST_KEYS as readonly string[]).includes(spec.key)) {
        if (core.tasks.has(spec.key)) specs.push(honestSpec(spec.key));
        continue;
      }
      const deps = asIs ? spec.deps : spec.deps.filter((d) => d !== spec.key && (core.tasks.has(d) || specs.some((s) => s.key === d)));
      specs.push(dropUndefined({ ...spec, deps, args: deps.map((d) => ({ $key: d })) }));
    }
    op.tasks = specs;
    // Its own tasks wanted, mostly (an unwanted task is forgotten at once).
    if (!asIs) op.wants = [...new Set([...(op.wants as string[]), ...specs.map((spec) => spec.key)])];
  }
  // update-data may create an honest key: data the scheduler cannot confirm on the workers named
  // is lost at once (DATA_LOST), and a client that submits that key later shares the failure.
  if (op.op === "update-data") op.data = (op.data as Record<string, unknown>[]).map(dropUndefined);
  const client = String(op.client);
  const own = move.subject % 2 === 0 ? `${base}.client.${client}` : base;
  return { subject: move.subject <= 1 ? own : otherSubject(base, move.subject), body: envelope(client, dropUndefined(op)), request: move.request };
}

function otherSubject(base: string, choice: number): string {
  return [base, base, `${base}.client.evil`, `${base}.worker.f1`, `${base}.admin.x`][choice] ?? base;
}

function envelope(from: string, op: Record<string, unknown>): unknown {
  return { v: 1, from, ops: [dropUndefined(op)] };
}

function dropUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
