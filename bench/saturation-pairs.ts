/**
 * Embedded W1 and W2 under several saturations in one process, paired: one cluster per
 * saturation, warmed up alike, repetitions alternating (and which goes first alternating);
 * for each repetition the rate and the process's CPU a task (process.cpuUsage: every thread,
 * the log writer's too), the figure that holds on a machine other work loads:
 *   npx tsx bench/saturation-pairs.ts [--workload W1|W2] [--sat 1.1,adaptive] [--log on|off]
 *     [--reps 7] [--n 10000]
 * A saturation may name a cap (`adaptive:16`: adaptiveSaturationCap 16) and turn stealing off
 * (`1.1/nosteal`).
 * W1: n no-op tasks, 2 workers x 1 thread (bench/workloads.ts). W2: a fan-in-2 tree over n
 * leaves (default 4,096). Prints one JSON line: per saturation the rates and CPU us a task
 * in run order, their medians, and the ratio of each repetition to the first saturation's
 * in the same round (rate: sat / first; CPU: sat / first).
 */
import { parseArgs } from "node:util";
import type { Future } from "../index.js";
import { startEmbedded, type Harness, type Saturation } from "./harness.js";

const { values } = parseArgs({ options: { workload: { type: "string" }, sat: { type: "string" }, log: { type: "string" }, reps: { type: "string" }, n: { type: "string" } } });
const workload = values.workload ?? "W1";
const specs = (values.sat ?? "1.1,adaptive").split(",");
const log = (values.log ?? "on") === "on";
const reps = Number(values.reps ?? 7);
const n = Number(values.n ?? (workload === "W2" ? 4096 : 10_000));

const saturationOf = (s: string): Saturation => (s === "inf" ? Infinity : s === "adaptive" ? "adaptive" : Number(s));
const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
const release = (fs: readonly Future[]): void => {
  for (const f of fs) f.release();
};

async function w1(h: Harness, size: number): Promise<number> {
  const futs = h.client.map("noop", Array.from({ length: size }, (_, i) => i), { pure: false });
  const res = await h.client.gather(futs);
  if (res.length !== size || res[size - 1] !== size - 1) throw new Error("W1: wrong results");
  release(futs);
  return size;
}

async function w2(h: Harness, leaves: number): Promise<number> {
  let layer: Future<number>[] = [];
  for (let i = 0; i < leaves; i++) layer.push(h.client.submit<number>("one", [i], { pure: false }));
  let tasks = layer.length;
  const dropped: Future[][] = [];
  while (layer.length > 1) {
    const next: Future<number>[] = [];
    for (let j = 0; j < layer.length; j += 2) next.push(h.client.submit<number>("add", layer.slice(j, j + 2), { pure: false }));
    dropped.push(layer);
    tasks += next.length;
    layer = next;
  }
  await new Promise((r) => setTimeout(r, 0));
  for (const l of dropped) release(l);
  const result = await layer[0]!.result();
  if (result !== leaves) throw new Error(`W2: root is ${result}`);
  release(layer);
  return tasks;
}

const run = workload === "W2" ? w2 : w1;
interface Case {
  spec: string;
  h: Harness;
  rates: number[];
  cpu: number[];
}
const cases: Case[] = [];
for (const spec of specs) {
  const [base, steal] = spec.split("/");
  const [sat, cap] = base!.split(":");
  const h = await startEmbedded({ workers: 2, threadsPerWorker: 1, log, stealing: steal !== "nosteal", saturation: saturationOf(sat!), ...(cap !== undefined ? { adaptiveCap: Number(cap) } : {}) }, "pairs");
  cases.push({ spec, h, rates: [] as number[], cpu: [] as number[] });
}

async function once(c: Case, size: number): Promise<{ rate: number; cpu: number }> {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const tasks = await run(c.h, size);
  const wall = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  if (!(await c.h.waitIdle())) throw new Error("not idle");
  return { rate: tasks / wall, cpu: (cpu.user + cpu.system) / tasks };
}

for (const c of cases) await once(c, n); // warm-up, untimed
for (let r = 0; r < reps; r++) {
  for (const c of r % 2 === 0 ? cases : [...cases].reverse()) {
    const { rate, cpu } = await once(c, n);
    c.rates.push(Math.round(rate));
    c.cpu.push(+cpu.toFixed(1));
  }
}
for (const c of cases) await c.h.close();
const first = cases[0]!;
console.log(
  JSON.stringify({
    workload,
    n,
    log: log ? "on" : "off",
    cases: cases.map((c) => ({
      sat: c.spec,
      rates: c.rates,
      rateMedian: median(c.rates),
      cpuUsPerTask: c.cpu,
      cpuMedian: median(c.cpu),
      ...(c === first
        ? {}
        : {
            rateRatios: c.rates.map((x, i) => +(x / first.rates[i]!).toFixed(3)),
            rateRatioMedian: +median(c.rates.map((x, i) => x / first.rates[i]!)).toFixed(3),
            cpuRatioMedian: +median(c.cpu.map((x, i) => x / first.cpu[i]!)).toFixed(3),
          }),
    })),
  }),
);
