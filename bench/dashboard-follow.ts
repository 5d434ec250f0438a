/**
 * The live dashboard's own work, apart from the cluster it watches: a W1 log (N no-op
 * tasks, 2 workers x 1 thread) recorded once, then read P times as the embedded dashboard's
 * thread reads its cluster's log file (log-follow.ts, the window, the live model's folds, a
 * page's update), on this thread alone. CPU per task of the whole process (the garbage
 * collector's helper threads included): less at the mercy of a busy machine than
 * bench/dashboard-w1.ts's throughput.
 *
 *   npx tsx bench/dashboard-follow.ts [--n 50000] [--passes 5] [--log <a W1 log to read instead>]
 *
 * With --log, nothing but the reading runs (for a profile: node --cpu-prof --import tsx ...).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PerformanceObserver } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { LocalCluster } from "../index.js";
import { LogFollower } from "../dashboard/server/log-follow.js";
import { DashboardModel, LIVE_RECORDS } from "../dashboard/server/model.js";
import { FUNCTIONS } from "./functions.js";

const { values } = parseArgs({ options: { n: { type: "string", default: "50000" }, passes: { type: "string", default: "5" }, log: { type: "string" } } });
const passes = Number(values.passes);

const dir = await mkdtemp(join(tmpdir(), "natsched-follow-"));
const path = values.log ?? join(dir, "w1.natlog");
if (values.log === undefined) {
  const cluster = await LocalCluster.start({ workers: 2, threadsPerWorker: 1, functions: FUNCTIONS, configFile: false, log: { path } });
  const client = cluster.client();
  await client.gather(client.map("noop", Array.from({ length: Number(values.n) }, (_, i) => i), { pure: false }));
  await client.close();
  await cluster.close();
}

let gc = 0;
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) gc += entry.duration;
}).observe({ entryTypes: ["gc"] });

/** Tasks in the log: its noop executions. */
let n = 0;
const cpus: number[] = [];
const gcs: number[] = [];
let records = 0;
for (let p = 0; p < passes; p++) {
  const follower = (await LogFollower.open(path, LIVE_RECORDS))!;
  const model = new DashboardModel({ kind: "embedded", location: path, cluster: "bench", live: true }, follower.created);
  model.readFrom({ kept: () => follower.window.kept(follower.end()), machines: () => follower.window.machines(follower.end()) });
  const cpu0 = process.cpuUsage();
  const gc0 = gc;
  records = await follower.read((record) => model.add(record));
  // What a page's update asks for.
  JSON.stringify({ summary: model.summary(), stream: model.drainStream() });
  const cpu = process.cpuUsage(cpu0);
  n = model.summary().now.progress.find((row) => row.prefix === "noop")?.total ?? 0;
  cpus.push((cpu.user + cpu.system) / Math.max(n, 1));
  gcs.push(gc - gc0);
  await follower.close();
}
await rm(dir, { recursive: true, force: true });
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(`the live dashboard's work on a W1 log of ${n} tasks (${records} records), ${passes} passes`);
console.log(`  CPU per task: median ${median(cpus).toFixed(1)} us (passes: ${cpus.map((c) => c.toFixed(1)).join(" ")}); garbage collector: median ${median(gcs).toFixed(0)} ms a pass`);
