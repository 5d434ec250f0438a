// The log capture's floor on one W1 task: the 12 records the embedded cluster logs per task
// (3 inputs, 9 transitions) and an update-graph input of one task (more than a task's share
// of W1's one big update-graph; the keys it lists in release-keys and free-keys are left
// out, which about evens it), built once with W1's shapes and captured over and over into the standard
// batch, keys rotating through a pool as a running W1 rotates them. Caches stay warm and
// nothing else runs, so this is what the capture costs at best; inside W1 it costs more
// (bench/capture-replay.mjs, bench/w1-cpu.mjs). Prints one JSON object: µs
// per task in each of W1's phases, and in all (best of the rounds).
//
//   npm run build && node bench/capture-floor.mjs [--dist dist] [--keys 4096] [--rounds 7]
//
// Not part of `npm run bench` (docs/performance.md: open problems, tools).
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const arg = (k, d) => {
  const i = process.argv.indexOf(`--${k}`);
  return i < 0 ? d : process.argv[i + 1];
};
const dist = resolve(arg("dist", "dist"));
const poolSize = Number(arg("keys", 4096));
const rounds = Number(arg("rounds", 7));
const { LogCapture } = await import(pathToFileURL(join(dist, "log/log-capture.js")).href);

const STANDARD_NUMS = 32 * 1024;
const STANDARD_CHARS = 128 * 1024;
const capture = new LogCapture(new Float64Array(STANDARD_NUMS), new Uint16Array(STANDARD_CHARS));
/** Feeds a record as FileLogSink does: a full batch is started again. */
const take = (capture1) => {
  if (capture1()) return;
  capture.reset();
  if (!capture1()) throw new Error("a record bigger than a batch");
};

const hex = (i) => ((i * 2654435761) >>> 0).toString(16).padStart(8, "0").repeat(4);
// Flat strings, as keys parsed from JSON are; the embedded cluster's are concatenations.
const keys = Array.from({ length: poolSize }, (_, i) => JSON.parse(JSON.stringify(`noop-${hex(i)}`)));
const run = 1795669085.0884025;
let seq = 0;
let t = run;
const kinds = {
  "update-graph item": (key, i) => () => capture.input("scheduler", seq++, { op: "update-graph", client: "client-00522ab90cd65d2a", tasks: [{ key, func: "noop", args: [i], deps: [] }], wants: [key], t }),
  "QUEUE": (key) => () => capture.transition("scheduler", seq++, t, "task", key, "QUEUE", "released", "queued", undefined),
  "ASSIGN with why": (key) => () =>
    capture.transition("scheduler", seq++, t, "task", key, "ASSIGN", "queued", "processing.assigned", { worker: "worker-0", rule: "rootish-queuing", candidates: [["worker-0", 0], ["worker-1", 0]] }),
  "compute-task": (key, i) => () =>
    capture.input("worker.worker-0", seq++, { op: "compute-task", key, func: "noop", args: [i], deps: [], priority: [0, 1, i], duration: 0.00005, run, attempt: i + 1, t }),
  "READY": (key) => () => capture.transition("worker.worker-0", seq++, t, "wtask", key, "READY", "released", "ready", undefined),
  "EXECUTE": (key) => () => capture.transition("worker.worker-0", seq++, t, "wtask", key, "EXECUTE", "ready", "executing", undefined),
  "execute-done": (key) => () => capture.input("worker.worker-0", seq++, { op: "execute-done", key, nbytes: 8, start: t, stop: t + 1e-5, t: t + 1e-5 }),
  "DONE": (key) => () => capture.transition("worker.worker-0", seq++, t, "wtask", key, "DONE", "executing", "memory", undefined),
  "task-finished": (key, i) => () =>
    capture.input("scheduler", seq++, { op: "task-finished", worker: "worker-0", id: "worker-0-a3d63e39", key, nbytes: 8, start: t, stop: t + 1e-5, attempt: i + 1, t: t + 2e-5 }),
  "FINISH": (key) => () => capture.transition("scheduler", seq++, t, "task", key, "FINISH", "processing.assigned", "memory", undefined),
  "RELEASE": (key) => () => capture.transition("scheduler", seq++, t, "task", key, "RELEASE", "memory", "released", undefined),
  "FORGET": (key) => () => capture.transition("scheduler", seq++, t, "task", key, "FORGET", "released", "forgotten", undefined),
  "FREE": (key) => () => capture.transition("worker.worker-0", seq++, t, "wtask", key, "FREE", "memory", "released", undefined),
};
// W1's phases: every task submitted and queued; then each task run (its records one after
// another, as one task's messages follow each other through the cluster); then all released
// (the client's release-keys) and freed (the workers' free-keys).
const phases = {
  submit: ["update-graph item", "QUEUE"],
  run: ["ASSIGN with why", "compute-task", "READY", "EXECUTE", "execute-done", "DONE", "task-finished", "FINISH"],
  release: ["RELEASE", "FORGET"],
  free: ["FREE"],
};
// One closure per (kind, key), made before timing: the loop times the capture, not the records' making.
const made = Object.fromEntries(Object.keys(kinds).map((name) => [name, keys.map((key, i) => kinds[name](key, i))]));
const tasksPerRound = Math.max(poolSize, 100_000);
const best = Object.fromEntries(Object.keys(phases).map((p) => [p, Infinity]));
let bestTask = Infinity;
for (let r = 0; r < rounds; r++) {
  let total = 0;
  for (const [phase, kindsOf] of Object.entries(phases)) {
    const calls = kindsOf.map((k) => made[k]);
    const t0 = performance.now();
    for (let i = 0; i < tasksPerRound; i++) {
      const at = i % poolSize;
      for (let k = 0; k < calls.length; k++) take(calls[k][at]);
    }
    const us = ((performance.now() - t0) * 1000) / tasksPerRound;
    total += us;
    best[phase] = Math.min(best[phase], us);
    t += 0.001;
  }
  bestTask = Math.min(bestTask, total);
}
const round = (x) => Math.round(x * 1000) / 1000;
console.log(JSON.stringify({ dist, keys: poolSize, rounds, records: Object.values(phases).flat().length, usPerTaskByPhase: Object.fromEntries(Object.entries(best).map(([p, us]) => [p, round(us)])), usPerTask: round(bestTask) }));
