// Where W1's garbage comes from: V8's sampling heap profiler over one embedded W1 run, counting
// the objects collected since (which `node --heap-prof` leaves out), summed per function and
// divided by the task count. Allocations made inside a builtin (Map#set, new Set, ...) are
// charged to the nearest JS function that called it ("set <- assign ...").
//
//   npm run build && node bench/alloc-profile.mjs --n 20000 --log off [--top 40] [--dist dist]
//
// One untimed warm-up run first. Not part of `npm run bench` (docs/performance.md).
import { Session } from "node:inspector/promises";
import { rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const arg = (k, d) => {
  const i = process.argv.indexOf(`--${k}`);
  return i < 0 ? d : process.argv[i + 1];
};
const dist = resolve(arg("dist", "dist"));
const n = Number(arg("n", 20000));
const log = arg("log", "off") === "on";
const top = Number(arg("top", 40));
const { LocalCluster } = await import(pathToFileURL(join(dist, "index.js")).href);
const logPath = join(tmpdir(), `natsched-alloc-${process.pid}.natlog`);

async function run() {
  const cluster = await LocalCluster.start({ workers: 2, threadsPerWorker: 1, functions: { noop: (x) => x }, log: log ? { path: logPath } : false });
  const client = cluster.client();
  const futures = client.map("noop", Array.from({ length: n }, (_, i) => i), { pure: false });
  await client.gather(futures);
  for (const f of futures) f.release();
  await cluster.close();
  rmSync(logPath, { force: true });
}

await run();
const session = new Session();
session.connect();
await session.post("HeapProfiler.startSampling", { samplingInterval: 4096, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
await run();
const { profile } = await session.post("HeapProfiler.stopSampling");
session.disconnect();

const label = (cf) => `${cf.functionName || "(anonymous)"} ${cf.url.replace(/.*\/(dist|node_modules)\//, "$1/")}:${cf.lineNumber + 1}`;
const bytes = new Map();
const walk = (node, caller) => {
  const cf = node.callFrame;
  const key = cf.url === "" && caller !== "" ? `${label(cf)} <- ${caller}` : label(cf);
  bytes.set(key, (bytes.get(key) ?? 0) + node.selfSize);
  for (const child of node.children) walk(child, cf.url === "" ? caller : label(cf));
};
walk(profile.head, "");
const total = [...bytes.values()].reduce((a, b) => a + b, 0);
console.log(`W1 ${n} tasks, log ${log ? "on" : "off"}: ${(total / 1e6).toFixed(1)} MB allocated, ${Math.round(total / n)} bytes per task`);
for (const [key, b] of [...bytes].sort((a, b) => b[1] - a[1]).slice(0, top)) {
  console.log(`${String(Math.round(b / n)).padStart(7)} B/task ${((100 * b) / total).toFixed(1).padStart(5)}%  ${key}`);
}
