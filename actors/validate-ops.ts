/**
 * Shape checks for ops arriving from the wire, before a core sees them. A core trusts its
 * inputs; a foreign or corrupted message must be turned away here, and host-only stimuli
 * (worker-lost, scheduler-close, execute-done, ...) are never accepted from outside.
 * docs/schemas/ says the same in JSON Schema; tests/wire-schemas.test.ts keeps them in step.
 */
import { isReservedKey } from "../machines/graph/reserved-keys.js";
import { FIRE_AND_FORGET, PROTOCOL_VERSION } from "../machines/protocol.js";

type Check = (value: unknown) => boolean;
type OpShape = Readonly<Record<string, Check>>;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const str: Check = (v) => typeof v === "string";
const num: Check = (v) => typeof v === "number" && Number.isFinite(v);
const list: Check = (v) => Array.isArray(v);
const strings: Check = (v) => Array.isArray(v) && v.every((x) => typeof x === "string");
const name: Check = (v) => typeof v === "string" && /^[A-Za-z0-9_-]+$/.test(v);
const positiveInt: Check = (v) => Number.isSafeInteger(v) && (v as number) > 0;
/** An assignment number (docs/protocol.md, "Assignment numbers"). */
const attempt: Check = (v) => Number.isSafeInteger(v) && (v as number) >= 0;
const numberRecord: Check = (v) => isObject(v) && Object.values(v).every(num);
const oneOf =
  (...values: string[]): Check =>
  (v) =>
    typeof v === "string" && values.includes(v);
const optional =
  (check: Check): Check =>
  (v) =>
    v === undefined || check(v);
const arrayOf =
  (check: Check): Check =>
  (v) =>
    Array.isArray(v) && v.every(check);
/** An op's fields with their checks, listed once (checking allocates nothing: it runs for every op). */
type Fields = readonly (readonly [string, Check])[];
const shape = (fields: OpShape): Check => {
  const entries: Fields = Object.entries(fields);
  return (v) => {
    if (!isObject(v)) return false;
    for (let i = 0; i < entries.length; i++) if (!entries[i]![1](v[entries[i]![0]])) return false;
    return true;
  };
};
const compile = (ops: Readonly<Record<string, OpShape>>): ReadonlyMap<string, Fields> => new Map(Object.entries(ops).map(([op, fields]) => [op, Object.entries(fields)]));

const keySize = shape({ key: str, nbytes: num });
/** A key data can be stored under: not a property name of every object (machines/graph/reserved-keys.ts). */
const dataKey: Check = (v) => typeof v === "string" && v.length > 0 && !isReservedKey(v);

/** A client's id: any string but the name the scheduler wants fire-and-forget keys under. */
const client: Check = (v) => typeof v === "string" && v !== FIRE_AND_FORGET;

const SCHEDULER_OPS: Readonly<Record<string, OpShape>> = {
  "update-graph": { client, tasks: list, wants: strings },
  "release-keys": { client, keys: strings },
  "cancel-keys": { client, keys: strings },
  "fire-and-forget": { client, keys: strings },
  "update-data": { client, data: arrayOf(shape({ key: dataKey, nbytes: num, workers: strings, existing: optional((v) => typeof v === "boolean") })) },
  "client-join": { client },
  "client-leave": { client, reason: optional(str) },
  "heartbeat-client": { client },
  "register-worker": {
    name,
    id: str,
    nthreads: positiveInt,
    host: str,
    resources: numberRecord,
    functions: strings,
    holding: optional(arrayOf(keySize)),
    started: optional(num),
    roundTrips: optional((v) => v === false),
    reportHold: optional((v) => num(v) && (v as number) > 0 && Number.isFinite(v)),
  },
  "unregister-worker": { name: str, id: str, reason: str },
  "task-finished": { worker: str, id: str, key: str, nbytes: num, start: num, stop: num, attempt: optional(attempt), run: optional(num), roundTrip: optional((v) => num(v) && (v as number) >= 0), held: optional((v) => num(v) && (v as number) >= 0) },
  "task-erred": { worker: str, id: str, key: str, error: shape({ name: str, message: str, code: optional(str), stack: optional(str) }), attempt: optional(attempt), run: optional(num) },
  "steal-response": { worker: str, id: str, key: str, requestId: str, outcome: oneOf("confirm", "reject"), state: str },
  "add-keys": { worker: str, id: str, keys: arrayOf(keySize) },
  "missing-data": { worker: str, id: str, key: str, holder: str },
  "retire-worker": { name: str, id: optional(str), reason: optional(str) },
  "worker-metrics": {
    worker: str,
    id: str,
    executing: (v) => Array.isArray(v) && v.every((e: unknown) => Array.isArray(e) && e.length === 2 && str(e[0]) && num(e[1]) && (e[1] as number) >= 0),
    bandwidth: (v) => num(v) && (v as number) > 0,
  },
  heartbeat: { name: str, id: str, host: optional(shape({ rss: num, heapUsed: num, loopP99: num, loopMax: num })) },
};

const WORKER_OPS: Readonly<Record<string, OpShape>> = {
  "compute-task": {
    key: str,
    func: str,
    args: list,
    deps: arrayOf(shape({ key: str, nbytes: num, holders: strings })),
    priority: (v) => Array.isArray(v) && v.length === 3 && v.every(num),
    duration: num,
    run: optional(num),
    attempt: optional(attempt),
    answers: optional(num),
    prompt: optional((v) => v === true),
  },
  "free-keys": { keys: strings, run: optional(num), attempt: optional(attempt) },
  "steal-request": { key: str, requestId: str, run: optional(num), attempt: optional(attempt) },
  "acquire-replicas": { keys: arrayOf(shape({ key: str, nbytes: num, holders: strings })), run: optional(num) },
  "close-worker": { reason: str },
  "void-assignments": { run: num, attempt: attempt },
};

/** The scheduler's reports to a client (natsched.<cluster>.client.<id>). */
const REPORT_OPS: Readonly<Record<string, OpShape>> = {
  "key-in-memory": { key: str, nbytes: num, workers: strings },
  "key-erred": { key: str, failedKey: str, error: shape({ name: str, message: str, code: optional(str) }) },
  "key-cancelled": { key: str, reason: str },
};

/**
 * Checks across an op's fields, once each field has its shape: what no scheduler sends and a
 * core is not built to take. A compute-task's inputs are distinct keys other than its own (the
 * scheduler's graph has no cycles, and it lists each input once): a task waiting on itself, or
 * counting one input twice, would wait for ever.
 */
const WORKER_OP_CHECKS: ReadonlyMap<string, (op: Record<string, unknown>) => string | undefined> = new Map([
  [
    "compute-task",
    (op: Record<string, unknown>) => {
      const deps = op.deps as { key: string }[];
      const seen = new Set<string>();
      for (const { key } of deps) {
        if (key === op.key) return `compute-task: ${JSON.stringify(key)} names itself as an input`;
        if (seen.has(key)) return `compute-task: input ${JSON.stringify(key)} is named twice`;
        seen.add(key);
      }
      return undefined;
    },
  ],
]);

const SCHEDULER_FIELDS = compile(SCHEDULER_OPS);
const WORKER_FIELDS = compile(WORKER_OPS);
const REPORT_FIELDS = compile(REPORT_OPS);

/** Why `value` is not a version-1 envelope (docs/schemas/envelope.schema.json); undefined if it is. */
export function envelopeProblem(value: unknown): string | undefined {
  if (!isObject(value)) return `an envelope must be an object, got ${describe(value)}`;
  if (value.v !== PROTOCOL_VERSION) return `unsupported protocol version ${JSON.stringify(value.v)} (this is version ${PROTOCOL_VERSION})`;
  if (typeof value.from !== "string") return "an envelope needs a `from` string";
  if (!Array.isArray(value.ops)) return "an envelope needs an `ops` array";
  return undefined;
}

/** Why `op` is not something a client or worker may send the scheduler; undefined if it is. */
export function schedulerOpProblem(op: unknown): string | undefined {
  return problem(op, SCHEDULER_FIELDS, "scheduler");
}

/** Why `op` is not something the scheduler may send a worker; undefined if it is. */
export function workerOpProblem(op: unknown): string | undefined {
  return problem(op, WORKER_FIELDS, "worker") ?? WORKER_OP_CHECKS.get((op as { op: string }).op)?.(op as Record<string, unknown>);
}

/** Why `op` is not a report the scheduler may send a client; undefined if it is. */
export function clientReportProblem(op: unknown): string | undefined {
  return problem(op, REPORT_FIELDS, "client");
}

function problem(op: unknown, shapes: ReadonlyMap<string, Fields>, to: string): string | undefined {
  if (!isObject(op)) return `an op must be an object, got ${describe(op)}`;
  if (typeof op.op !== "string") return "an op needs an `op` name";
  const fields = shapes.get(op.op);
  if (fields === undefined) return `unknown op ${JSON.stringify(op.op)} for the ${to}`;
  let bad: string[] | undefined;
  for (let i = 0; i < fields.length; i++) {
    const [field, check] = fields[i]!;
    if (!check(op[field])) (bad ??= []).push(field);
  }
  if (op.cause !== undefined && !isCause(op.cause)) (bad ??= []).push("cause");
  return bad === undefined ? undefined : `${op.op}: bad or missing ${bad.join(", ")}`;
}

/** The seq of the sender's input that caused the op (docs/protocol.md, "Causes"): any op may carry one. */
function isCause(v: unknown): boolean {
  return Number.isSafeInteger(v) && (v as number) >= 0;
}

function describe(value: unknown): string {
  return value === null ? "null" : Array.isArray(value) ? "an array" : typeof value;
}
