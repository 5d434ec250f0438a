// W1 on the embedded cluster with the main thread's CPU per task: a tool for comparing builds
// back to back on a noisy machine, where wall-clock rates swing more than CPU does.
//
//   npm run build && node bench/w1-cpu.mjs --dist dist --n 20000 --reps 5 --log on
//   node bench/w1-cpu.mjs --dist /tmp/base/dist ...       # an older build (its node_modules must resolve)
//
// Each repetition starts a fresh LocalCluster (2 workers x 1 thread), maps `noop` over n
// items (pure: false) and gathers; the first repetition is an untimed warm-up. Printed as one
// JSON line: tasks/s per repetition in run order, and per task the main thread's CPU (from
// /proc/self/task/<pid>/stat, map to gather only) and the whole process's (all threads: the
// log writer's included). Linux only. Not part of `npm run bench` (docs/performance.md).
import { readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const arg = (k, d) => {
  const i = process.argv.indexOf(`--${k}`);
  return i < 0 ? d : process.argv[i + 1];
};
const dist = resolve(arg("dist", "dist"));
const n = Number(arg("n", 20000));
const reps = Number(arg("reps", 5));
const log = arg("log", "on") === "on";
const { LocalCluster } = await import(pathToFileURL(join(dist, "index.js")).href);

/** CPU time of this process's main thread, in microseconds (clock ticks of 10 ms). */
function mainThreadMicros() {
  const fields = readFileSync(`/proc/self/task/${process.pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const rates = [];
const mainUs = [];
const processUs = [];
const items = Array.from({ length: n }, (_, i) => i);
for (let r = 0; r <= reps; r++) {
  const path = join(tmpdir(), `natsched-w1-cpu-${process.pid}-${r}.natlog`);
  const cluster = await LocalCluster.start({ workers: 2, threadsPerWorker: 1, functions: { noop: (x) => x }, log: log ? { path } : false });
  const client = cluster.client();
  const cpu0 = process.cpuUsage();
  const main0 = mainThreadMicros();
  const t0 = performance.now();
  const futures = client.map("noop", items, { pure: false });
  const results = await client.gather(futures);
  const wall = performance.now() - t0;
  const main = mainThreadMicros() - main0;
  const cpu = process.cpuUsage(cpu0);
  if (results.length !== n || results[n - 1] !== n - 1) throw new Error("W1: wrong results");
  for (const f of futures) f.release();
  await cluster.close();
  if (log) await import("node:fs/promises").then((fs) => fs.rm(path, { force: true }));
  if (r === 0) continue;
  rates.push(Math.round((n / wall) * 1000));
  mainUs.push(+(main / n).toFixed(1));
  processUs.push(+((cpu.user + cpu.system) / n).toFixed(1));
}
console.log(JSON.stringify({ dist, n, log: log ? "on" : "off", rates, rateMedian: median(rates), mainUsPerTask: mainUs, mainUsMedian: median(mainUs), processUsMedian: median(processUs) }));
