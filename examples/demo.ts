/**
 * natsched demo: a small ETL-style graph on an embedded cluster (scheduler + 4 workers in
 * this process, no server), with progress, a summary, and what the event log recorded.
 *
 *   npm run demo
 *   npm run demo -- --dashboard     (or NATSCHED_DASHBOARD=1) the run in the browser too: the
 *                                   dashboard's URL is printed, and it stays up after the run
 *                                   until Ctrl-C
 */
import { LocalCluster, readLogSync, type Future } from "../index.js";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const functions = {
  // Pretend to read a partition: slow-ish I/O, returns an array of numbers.
  load: async (part: number) => {
    await sleep(10 + (part % 5) * 4);
    return Array.from({ length: 1000 }, (_, i) => (part * 1000 + i) % 97);
  },
  clean: (values: number[]) => values.filter((v) => v % 2 === 0),
  total: (values: number[]) => values.reduce((a, b) => a + b, 0),
  add: (...xs: number[]) => xs.reduce((a, b) => a + b, 0),
};

const PARTS = 64;
const dashboard = process.argv.includes("--dashboard") || process.env.NATSCHED_DASHBOARD === "1";
const started = performance.now();
const cluster = await LocalCluster.start({
  workers: [
    { name: "alpha", nthreads: 2 },
    { name: "beta", nthreads: 2 },
    { name: "gamma", nthreads: 1 },
    { name: "delta", nthreads: 1 },
  ],
  functions,
  log: { keep: true }, // a temp file, kept after close() for the tools below
  dashboard,
});
const client = cluster.client();
console.log(`cluster ${cluster.name}: ${cluster.workers.size} workers, event log at ${cluster.logPath}`);
if (cluster.dashboardUrl) console.log(`dashboard: ${cluster.dashboardUrl}`);

// load -> clean -> total per partition, then a tree reduction of the totals (fan-in 4).
const all: Future[] = [];
let level: Future<number>[] = [];
for (let part = 0; part < PARTS; part++) {
  const raw = client.submit("load", [part]);
  const cleaned = client.submit("clean", [raw]);
  level.push(client.submit<number>("total", [cleaned]));
  all.push(raw, cleaned);
}
all.push(...level);
while (level.length > 1) {
  const next: Future<number>[] = [];
  for (let i = 0; i < level.length; i += 4) next.push(client.submit<number>("add", level.slice(i, i + 4)));
  all.push(...next);
  level = next;
}
const result = level[0]!;

// A bar per task prefix (load, clean, total, add) until every one is done: redrawn in place
// on a terminal, a line per change (at most one a second) when stdout is a file or a pipe.
await client.progress(all, { stream: process.stdout });
const value = await result.result();
const makespan = (performance.now() - started) / 1000;

let expected = 0;
for (let part = 0; part < PARTS; part++) {
  for (let i = 0; i < 1000; i++) {
    const v = (part * 1000 + i) % 97;
    if (v % 2 === 0) expected += v;
  }
}
console.log(`result: ${value} (expected ${expected}) ${value === expected ? "OK" : "MISMATCH"}`);

const logPath = cluster.logPath!;
if (cluster.dashboardUrl) {
  console.log(`the run is on the dashboard at ${cluster.dashboardUrl} (Ctrl-C closes the cluster and prints the summary)`);
  // The dashboard does not hold the process open by itself: wait here for Ctrl-C.
  const open = setInterval(() => undefined, 60_000);
  await new Promise((resolve) => process.once("SIGINT", resolve));
  clearInterval(open);
}
await cluster.close();

const { records, problems } = readLogSync(logPath);
const perWorker = new Map<string, number>();
let transitions = 0;
for (const r of records) {
  if (r.kind === "transition") transitions++;
  if (r.kind === "transition" && r.machine === "wtask" && r.event === "DONE") perWorker.set(r.actor, (perWorker.get(r.actor) ?? 0) + 1);
}
console.log("summary:");
console.log(`  tasks submitted: ${all.length}`);
console.log(`  makespan: ${makespan.toFixed(3)} s (including cluster start)`);
for (const [actor, n] of [...perWorker].sort()) console.log(`  ${actor.padEnd(14)} ran ${n} tasks`);
console.log(`  event log: ${logPath}: ${records.length} records, ${transitions} transitions, ${problems.length} problems`);
console.log(`  try: npx natsched story ${logPath} ${result.key}`);
if (value !== expected || problems.length > 0) process.exitCode = 1;
