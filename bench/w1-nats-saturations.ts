/**
 * W1 on NATS (no-op tasks, 2 workers x 1 thread, log on) under several saturations at once,
 * paired: one cluster each on one nats-server, warmed up alike, repetitions alternating
 * between them; for each, tasks/s and the CPU a task of every process (from /proc, so the
 * figure holds on a loaded machine where the rate does not):
 *   npx tsx bench/w1-nats-saturations.ts [--sat inf,adaptive,adaptive:16,1.1] [--reps 5] [--n 10000]
 * `adaptive:<c>` runs adaptive saturation with adaptiveSaturationCap c. With
 * NATSCHED_BENCH_KEEP_LOGS=1 the logs stay for bench/saturation-trace.ts.
 */
import { readdirSync, readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { NatsServer, startNats, type Harness, type Saturation } from "./harness.js";

const { values } = parseArgs({ options: { sat: { type: "string" }, reps: { type: "string" }, n: { type: "string" } } });
const specs = (values.sat ?? "inf,adaptive,1.1").split(",");
const reps = Number(values.reps ?? 5);
const n = Number(values.n ?? 10_000);
const WARMUP_RUNS = 3;
const TICKS_PER_S = 100;

/** This process's children: pid -> a name (nats, scheduler, worker-<i>). */
function children(): Map<number, string> {
  const out = new Map<number, string>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      if (Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) !== process.pid) continue;
      const argv = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0");
      const name = argv.indexOf("--name");
      out.set(Number(entry), argv[0]!.includes("nats-server") ? "nats" : name > 0 ? argv[name + 1]! : (argv[4] ?? "?"));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** User + system CPU seconds of a process. */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_S;
}

function saturationOf(spec: string): { saturation: Saturation; cap?: string } {
  const [value, cap] = spec.split(":");
  const saturation = value === "inf" ? Infinity : value === "adaptive" ? "adaptive" : Number(value);
  return cap === undefined ? { saturation } : { saturation, cap };
}

interface Case {
  spec: string;
  h: Harness;
  pids: [number, string][];
  rates: number[];
  cpu: number[];
}

const server = await NatsServer.start();
const items = Array.from({ length: n }, (_, i) => i);
const cases: Case[] = [];
try {
  for (const spec of specs) {
    const { saturation, cap } = saturationOf(spec);
    // The scheduler process reads its config from the environment it starts with.
    if (cap !== undefined) process.env.NATSCHED_SCHEDULER__ADAPTIVE_SATURATION_CAP = cap;
    else delete process.env.NATSCHED_SCHEDULER__ADAPTIVE_SATURATION_CAP;
    const before = new Set(children().keys());
    const h = await startNats(server, { workers: 2, threadsPerWorker: 1, log: true, saturation }, `w1sat-${spec.replace(/[^A-Za-z0-9]/g, "_")}`);
    // The nats-server is shared: its CPU counts for whichever case runs.
    const pids = [...children().entries()].filter(([pid, name]) => !before.has(pid) || name === "nats");
    cases.push({ spec, h, pids, rates: [], cpu: [] });
  }
  const once = async (h: Harness): Promise<number> => {
    const t0 = performance.now();
    const futures = h.client.map("noop", items, { pure: false });
    const results = await h.client.gather(futures);
    const wall = (performance.now() - t0) / 1000;
    if (results.length !== n) throw new Error("W1: wrong results");
    for (const f of futures) f.release();
    if (!(await h.waitIdle())) throw new Error("W1: scheduler did not go idle");
    return wall;
  };
  for (let w = 0; w < WARMUP_RUNS; w++) for (const c of cases) await once(c.h);
  for (let r = 0; r < reps; r++) {
    for (const c of r % 2 === 0 ? cases : [...cases].reverse()) {
      const before = c.pids.map(([pid]) => cpuSeconds(pid));
      const client0 = process.cpuUsage();
      const wall = await once(c.h);
      const client = process.cpuUsage(client0);
      const per = c.pids.map(([pid, name], i) => [name, cpuSeconds(pid) - before[i]!] as const);
      const clientS = (client.user + client.system) / 1e6;
      const total = per.reduce((sum, [, s]) => sum + s, clientS);
      c.rates.push(n / wall);
      c.cpu.push((total / n) * 1e6);
      const parts = [...per, ["client", clientS] as const].map(([name, s]) => `${name} ${((s / n) * 1e6).toFixed(0)}`).join(", ");
      console.log(`${c.spec.padEnd(14)} ${String(Math.round(n / wall)).padStart(6)} tasks/s, CPU us a task ${((total / n) * 1e6).toFixed(0)} (${parts})`);
    }
  }
} finally {
  for (const c of cases) await c.h.close();
  await server.stop();
}
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
for (const c of cases) {
  console.log(`${c.spec.padEnd(14)} median ${Math.round(median(c.rates))} tasks/s (${c.rates.map(Math.round).join(", ")}), CPU median ${median(c.cpu).toFixed(0)} us a task`);
}
