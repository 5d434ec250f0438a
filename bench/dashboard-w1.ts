/**
 * What the live dashboard costs the embedded cluster (issue 25: at most 10% of W1's
 * throughput): W1 (N no-op tasks, 2 workers x 1 thread, log on) on a cluster with
 * `dashboard: true` and a page's event stream open, against the same cluster without it.
 * Repetitions are paired and alternate which goes first, as bench/run.ts's log on/off pairs.
 * Also how long after each repetition's last result the dashboard showed every task done:
 * its thread runs at a lower CPU priority (thread-priority.ts) and may fall behind a busy
 * cluster, to catch up when the cluster leaves it time.
 *
 *   npx tsx bench/dashboard-w1.ts [--n 10000] [--repeat 5] [--warmup 10000]
 */
import { readdirSync, readFileSync } from "node:fs";
import { get } from "node:http";
import { parseArgs } from "node:util";
import { LocalCluster } from "../index.js";
import { FUNCTIONS } from "./functions.js";
import { DASHBOARD_NICE } from "../dashboard/server/thread-priority.js";

const { values } = parseArgs({ options: { n: { type: "string", default: "10000" }, repeat: { type: "string", default: "5" }, warmup: { type: "string", default: "10000" } } });
const n = Number(values.n);
const reps = Number(values.repeat);
const warmup = Number(values.warmup);
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

interface Mode {
  dashboard: boolean;
  cluster: LocalCluster;
  walls: number[];
  /** CPU seconds of the process (every thread) per repetition: less at the mercy of a busy machine than the wall time. */
  cpus: number[];
  /** CPU seconds of the dashboard's thread per repetition (Linux: the threads at its nice value). */
  dashCpus: number[];
  received: { bytes: number };
  /** Dashboard on: ms from the repetition's last result until the dashboard showed all its tasks done. */
  behind: number[];
  /** Tasks submitted so far. */
  submitted: number;
}

async function start(dashboard: boolean): Promise<Mode> {
  const cluster = await LocalCluster.start({ workers: 2, threadsPerWorker: 1, functions: FUNCTIONS, configFile: false, dashboard });
  const received = { bytes: 0 };
  if (dashboard) {
    // An open page: its event stream gets every update the server sends.
    await new Promise<void>((resolve, reject) => {
      get(new URL("api/events", cluster.dashboardUrl!), (res) => {
        res.on("data", (chunk: Buffer) => (received.bytes += chunk.length));
        resolve();
      }).on("error", reject);
    });
  }
  return { dashboard, cluster, walls: [], cpus: [], dashCpus: [], received, behind: [], submitted: 0 };
}

type Row = { memory: number; released: number };

/** Resolves with the ms from now until the dashboard's noop progress row is `done`. */
async function caughtUp(url: string, done: (row: Row) => boolean): Promise<number> {
  const t0 = performance.now();
  for (;;) {
    const summary = (await (await fetch(new URL("api/summary", url))).json()) as { now: { progress: ({ prefix: string } & Row)[] } };
    const row = summary.now.progress.find((p) => p.prefix === "noop");
    if (row !== undefined && done(row)) return performance.now() - t0;
    if (performance.now() - t0 > 60_000) throw new Error("the dashboard did not catch up in 60 s");
    // Not too often: each answer folds the summary on the dashboard's thread.
    await sleep(50);
  }
}

/** CPU seconds so far of this process's threads at the dashboard thread's nice value (Linux; 0 elsewhere). */
function dashboardThreadCpu(): number {
  if (process.platform !== "linux") return 0;
  let ticks = 0;
  for (const tid of readdirSync("/proc/self/task")) {
    try {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      // utime, stime, nice: fields 14, 15 and 19 of proc(5)
      if (Number(fields[16]) === DASHBOARD_NICE) ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // a thread gone meanwhile
    }
  }
  return ticks / 100;
}

async function once(m: Mode, count: number): Promise<number> {
  const cluster = m.cluster;
  const client = cluster.client();
  const items = Array.from({ length: count }, (_, i) => i);
  const t0 = performance.now();
  const futures = client.map("noop", items, { pure: false });
  const results = await client.gather(futures);
  const wall = (performance.now() - t0) / 1000;
  if (results.length !== count) throw new Error("W1: wrong results");
  m.submitted += count;
  const submitted = m.submitted;
  const behind = m.dashboard ? caughtUp(cluster.dashboardUrl!, (row) => row.memory + row.released >= submitted) : undefined;
  await client.close();
  for (let i = 0; i < 12_000 && cluster.scheduler.core.tasks.size > 0; i++) {
    await cluster.flush();
    await sleep(5);
  }
  if (behind !== undefined) {
    m.behind.push(await behind);
    // Every task forgotten, as the dashboard shows it: none of this repetition's work is left for the next.
    await caughtUp(cluster.dashboardUrl!, (row) => row.memory === 0 && row.released >= submitted);
  }
  return wall;
}

const modes = [await start(true), await start(false)];
for (const m of modes) await once(m, warmup);
for (const m of modes) m.behind = [];
for (let r = 0; r < reps; r++) {
  for (const m of r % 2 === 0 ? modes : [...modes].reverse()) {
    const cpu0 = process.cpuUsage();
    const dash0 = dashboardThreadCpu();
    m.walls.push(await once(m, n));
    const cpu = process.cpuUsage(cpu0);
    m.cpus.push((cpu.user + cpu.system) / 1e6);
    if (m.dashboard) m.dashCpus.push(dashboardThreadCpu() - dash0);
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const [on, off] = modes as [Mode, Mode];
const ratios = on.walls.map((w, i) => off.walls[i]! / w);
console.log(`W1 ${n} no-op tasks, 2x1, log on, ${reps} paired repetitions after ${warmup} warm-up tasks`);
console.log(`  dashboard off: ${Math.round(n / median(off.walls))} tasks/s (median)`);
console.log(`  dashboard on:  ${Math.round(n / median(on.walls))} tasks/s (median; the page's event stream received ${(on.received.bytes / 1024).toFixed(0)} KiB)`);
const cpuRatios = on.cpus.map((c, i) => off.cpus[i]! / c);
console.log(`  CPU per task: off ${((median(off.cpus) / n) * 1e6).toFixed(1)} us, on ${((median(on.cpus) / n) * 1e6).toFixed(1)} us; off / on: median ${median(cpuRatios).toFixed(3)}`);
if (process.platform === "linux") console.log(`  the dashboard's thread: ${((median(on.dashCpus) / n) * 1e6).toFixed(1)} us of CPU per task (median; ${on.dashCpus.map((c) => ((c / n) * 1e6).toFixed(1)).join(" ")})`);
console.log(`  the dashboard showed each repetition's tasks done ${median(on.behind).toFixed(0)} ms after its last result (median; ${on.behind.map((x) => x.toFixed(0)).join(" ")})`);
console.log(`  throughput on / off: median ${median(ratios).toFixed(3)} (pairs: ${ratios.map((x) => x.toFixed(3)).join(" ")}; target >= 0.90)`);
for (const m of modes) await m.cluster.close();
