// The event log's capture alone, for comparing builds of log/log-capture.ts back to back:
// records one W1 run's appendInput/appendTransition/append calls (a sink that keeps the
// arguments), then times feeding them into each build's LogCapture as FileLogSink does
// (a batch that is full is started again; a record that does not fit an empty one grows it),
// builds alternating, and prints per build the capture's cost a task (min, p25, median).
//
//   npm run build && node --expose-gc bench/capture-replay.mjs --n 100000 --reps 10 --variants base=/tmp/base/dist,new=dist
//   node --expose-gc bench/capture-replay.mjs --n 10000 --reps 30 --split     # per kind of record, this build
//
// A build is a dist/ directory whose imports resolve (a copy with a node_modules symlink next
// to it works). The run is recorded with the first build. --split times every call (the timer
// adds about 0.1 µs a call) and prints the cost a task per kind: transitions, each input op.
// Not part of `npm run bench` (docs/performance.md).
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";

const arg = (k, d) => {
  const i = process.argv.indexOf(`--${k}`);
  return i < 0 ? d : process.argv[i + 1];
};
const n = Number(arg("n", 10000));
const reps = Number(arg("reps", 10));
const split = process.argv.includes("--split");
const variants = arg("variants", "this=dist")
  .split(",")
  .map((s) => [s.slice(0, s.indexOf("=")), resolve(s.slice(s.indexOf("=") + 1))]);
const STANDARD_NUMS = 32 * 1024;
const STANDARD_CHARS = 128 * 1024;

const { LocalCluster } = await import(pathToFileURL(`${variants[0][1]}/index.js`).href);
const calls = [];
const sink = {
  location: "recorded calls",
  append: (record) => calls.push([0, record]),
  appendTransition: (...args) => calls.push([1, ...args]),
  appendInput: (actor, seq, event) => calls.push([2, actor, seq, event]),
  flush: () => Promise.resolve(),
  close: () => Promise.resolve(),
};
const cluster = await LocalCluster.start({ workers: 2, threadsPerWorker: 1, functions: { noop: (x) => x }, log: sink });
const client = cluster.client();
const futures = client.map("noop", Array.from({ length: n }, (_, i) => i), { pure: false });
await client.gather(futures);
for (const f of futures) f.release();
await cluster.close();

/** A build's LogCapture module: log/ today, replay/ in builds from before the log had a folder of its own. */
const captureModule = (dist) => (existsSync(`${dist}/log/log-capture.js`) ? `${dist}/log/log-capture.js` : `${dist}/replay/log-capture.js`);
const builds = [];
for (const [name, dist] of variants) builds.push([name, (await import(pathToFileURL(captureModule(dist)).href)).LogCapture]);

const take = (capture, c) => (c[0] === 1 ? capture.transition(c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8], c[9]) : c[0] === 2 ? capture.input(c[1], c[2], c[3]) : capture.record(c[1]));
const kindOf = (c) => (c[0] === 1 ? "transition" : c[0] === 2 ? `input ${c[3].op}` : `record ${c[1].kind}`);

/** Feeds every call into a fresh capture; returns µs a task, in all or per kind. */
function run(LogCapture, perKind) {
  let capture = new LogCapture(new Float64Array(STANDARD_NUMS), new Uint16Array(STANDARD_CHARS));
  globalThis.gc?.();
  const t0 = performance.now();
  for (const c of calls) {
    const c0 = perKind ? performance.now() : 0;
    if (!take(capture, c)) {
      if (!capture.empty) capture.reset();
      while (!take(capture, c)) capture.grow(8);
      if (capture.nums.length > STANDARD_NUMS) capture.replace(new Float64Array(STANDARD_NUMS), new Uint16Array(STANDARD_CHARS));
    }
    if (perKind) {
      const k = kindOf(c);
      perKind.set(k, (perKind.get(k) ?? 0) + performance.now() - c0);
    }
  }
  return ((performance.now() - t0) * 1000) / n;
}

const quantiles = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return { min: +s[0].toFixed(2), p25: +s[s.length >> 2].toFixed(2), median: +s[s.length >> 1].toFixed(2) };
};
const result = { n, calls: calls.length, reps, builds: {} };
if (split) {
  const [name, LogCapture] = builds[0];
  const perKind = new Map();
  const samples = new Map();
  for (let r = 0; r < reps; r++) {
    perKind.clear();
    run(LogCapture, perKind);
    for (const [k, ms] of perKind) (samples.get(k) ?? samples.set(k, []).get(k)).push((ms * 1000) / n);
  }
  result.builds[name] = Object.fromEntries([...samples].filter(([, v]) => Math.max(...v) >= 0.01).map(([k, v]) => [k, quantiles(v)]));
} else {
  const samples = Object.fromEntries(builds.map(([name]) => [name, []]));
  for (let r = 0; r < reps; r++) for (const [name, LogCapture] of builds) samples[name].push(run(LogCapture));
  for (const [name, v] of Object.entries(samples)) result.builds[name] = { usPerTask: quantiles(v), runs: v.map((x) => +x.toFixed(2)) };
}
// One line per build (or per kind of record): JSON, compact enough to read.
console.log(`{"n":${n},"calls":${calls.length},"reps":${reps},"builds":{`);
const entries = Object.entries(result.builds);
entries.forEach(([name, v], i) => {
  const inner = Object.entries(v).map(([k, x]) => `  ${JSON.stringify(k)}: ${JSON.stringify(x)}`);
  console.log(` ${JSON.stringify(name)}: {\n${inner.join(",\n")}\n }${i < entries.length - 1 ? "," : ""}`);
});
console.log("}}");
