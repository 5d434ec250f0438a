/**
 * One valid example of every op a scheduler or worker accepts from the wire, each with all
 * its optional fields, and the ways to break one: every field removed or replaced by values
 * of other types. tests/wire-schemas.test.ts runs both through the JSON schemas and through
 * actors/validate-ops.ts and expects the same verdicts.
 */

export const SCHEDULER_OPS: Record<string, Record<string, unknown>> = {
  "update-graph": {
    op: "update-graph",
    client: "c1",
    tasks: [
      { key: "x", func: "inc", args: [1], deps: [] },
      {
        key: "y",
        func: "add",
        args: [{ $key: "x" }, 10],
        deps: ["x"],
        priority: 2,
        retries: 2,
        workers: ["w1"],
        hosts: ["h1"],
        resources: { GPU: 1 },
        allowOtherWorkers: true,
      },
    ],
    wants: ["y"],
  },
  "release-keys": { op: "release-keys", client: "c1", keys: ["y"] },
  "cancel-keys": { op: "cancel-keys", client: "c1", keys: ["y"] },
  "fire-and-forget": { op: "fire-and-forget", client: "c1", keys: ["y"] },
  "update-data": { op: "update-data", client: "c1", data: [{ key: "d", nbytes: 8, workers: ["w1"], existing: true }] },
  "client-join": { op: "client-join", client: "c1" },
  "client-leave": { op: "client-leave", client: "c1", reason: "done" },
  "heartbeat-client": { op: "heartbeat-client", client: "c1" },
  "register-worker": {
    op: "register-worker",
    name: "w1",
    id: "w1-abc",
    nthreads: 2,
    host: "h1",
    resources: { GPU: 1 },
    functions: ["inc", "add"],
    holding: [{ key: "d", nbytes: 8 }],
  },
  "unregister-worker": { op: "unregister-worker", name: "w1", id: "w1-abc", reason: "shutdown" },
  "task-finished": { op: "task-finished", worker: "w1", id: "w1-abc", key: "x", nbytes: 8, start: 1.5, stop: 1.75, attempt: 3 },
  "task-erred": { op: "task-erred", worker: "w1", id: "w1-abc", key: "x", error: { name: "Error", message: "boom", code: "TASK_FAILED" }, attempt: 3 },
  "steal-response": { op: "steal-response", worker: "w1", id: "w1-abc", key: "x", requestId: "r1", outcome: "confirm", state: "ready" },
  "add-keys": { op: "add-keys", worker: "w1", id: "w1-abc", keys: [{ key: "x", nbytes: 8 }] },
  "missing-data": { op: "missing-data", worker: "w1", id: "w1-abc", key: "x", holder: "w2" },
  "retire-worker": { op: "retire-worker", name: "w1", id: "w1-abc", reason: "SIGTERM" },
  "worker-metrics": { op: "worker-metrics", worker: "w1", id: "w1-abc", executing: [["inc-1", 0.25]], bandwidth: 1.2e8 },
  heartbeat: { op: "heartbeat", name: "w1", id: "w1-abc" },
};

export const WORKER_OPS: Record<string, Record<string, unknown>> = {
  "compute-task": {
    op: "compute-task",
    key: "y",
    func: "add",
    args: [{ $key: "x" }, 10],
    deps: [{ key: "x", nbytes: 8, holders: ["w2"] }],
    priority: [0, 1, 2],
    duration: 0.5,
    run: 1732312312.5,
    attempt: 7,
  },
  "free-keys": { op: "free-keys", keys: ["x"], run: 1732312312.5, attempt: 9 },
  "steal-request": { op: "steal-request", key: "x", requestId: "r1", run: 1732312312.5, attempt: 7 },
  "acquire-replicas": { op: "acquire-replicas", keys: [{ key: "x", nbytes: 8, holders: ["w2"] }] },
  "close-worker": { op: "close-worker", reason: "retired" },
  "void-assignments": { op: "void-assignments", run: 1732312312.5, attempt: 7 },
};

/** Values that stand in for a field, of every JSON type and some edge cases. */
const REPLACEMENTS: unknown[] = [null, 0, -1, 1.5, "", "s", "bad name!", true, [], ["s"], [7], {}, { a: 1 }, { a: "x" }];

export interface Mutant {
  /** What was done, e.g. "tasks/0/key := 7" or "holder removed". */
  change: string;
  value: unknown;
}

/** Every way to break `example` one field at a time, down to `depth` levels of nesting. */
export function mutants(example: unknown, depth = 3): Mutant[] {
  const out: Mutant[] = [];
  for (const path of paths(example, depth)) {
    out.push({ change: `${path.join("/")} removed`, value: edit(example, path, undefined) });
    for (const replacement of REPLACEMENTS) out.push({ change: `${path.join("/")} := ${JSON.stringify(replacement)}`, value: edit(example, path, replacement) });
  }
  return out;
}

function paths(value: unknown, depth: number, prefix: (string | number)[] = []): (string | number)[][] {
  if (depth === 0 || typeof value !== "object" || value === null) return [];
  const entries: [string | number, unknown][] = Array.isArray(value) ? value.map((v, i) => [i, v]) : Object.entries(value);
  return entries.flatMap(([k, v]) => [[...prefix, k], ...paths(v, depth - 1, [...prefix, k])]);
}

/** A deep copy of `value` with the field at `path` replaced, or removed when `replacement` is undefined. */
function edit(value: unknown, path: (string | number)[], replacement: unknown): unknown {
  const copy = structuredClone(value) as Record<string | number, unknown>;
  let parent = copy;
  for (const step of path.slice(0, -1)) parent = parent[step] as Record<string | number, unknown>;
  const last = path[path.length - 1]!;
  if (replacement !== undefined) parent[last] = replacement;
  else if (Array.isArray(parent)) parent.splice(last as number, 1);
  else delete parent[last];
  return copy;
}
