/**
 * W7's floor on NATS: the same processes, messages and threads as natsched's W7 on NATS, with
 * nothing of natsched in them. A "scheduler" process hands tasks out from a queue, a few per
 * worker (natsched's adaptive count in W7's steady state: ceil(1.1 x threads) + 1), and on each
 * report sends the next task and tells the client; "worker" processes run the calibrated `spin`
 * of bench/cpu-tasks.mjs on worker_threads; this process is the client. JSON bodies of the sizes
 * natsched's messages have; three messages a task, as natsched sends (its client then fetches
 * the results, one request more a run; this one does not). No log, no checks, no
 * cores: what is left is what the transport, the processes' wake-ups and the executor hop cost
 * on this machine, the part of W7's makespan natsched cannot take away with its own code.
 * docs/executors.md, "W7". Linux only (CPU from /proc).
 *
 *   node --import tsx bench/w7-floor.ts [threads|workers|both] [--n 200] [--ms 20] [--repeat 5] [--json]
 */
import { spawn, type ChildProcess } from "node:child_process";
import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";
import { Worker } from "node:worker_threads";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { defaultNatsGomaxprocs, NATS_GOMAXPROCS_ENV, NatsServer } from "./harness.js";
import { namedThreadsCpuMs, processCpuMs, stats, type Stats } from "./lib.js";

/** Bytes of JSON natsched's W7 messages carry (task-finished, compute-task, the client's update), from strace. */
const SIZES = { finished: 330, compute: 320, update: 200 };
/** W7's untimed rounds of one no-op task per thread (bench/workloads.ts W7_WARM_ROUNDS). */
const WARM_ROUNDS = 1500;
const SELF = fileURLToPath(import.meta.url);

const encode = (o: object): Uint8Array => Buffer.from(JSON.stringify(o));
const decode = (b: Uint8Array): Record<string, unknown> => JSON.parse(Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString()) as Record<string, unknown>;
const pad = (n: number): string => "x".repeat(n);

type Task = { key: string; iterations: number };

/** The scheduler: a queue, a slot count per worker, a report in -> the next task out and the client told. */
async function schedulerRole(nc: NatsConnection): Promise<void> {
  const queue: Task[] = [];
  const workers = new Map<string, { held: number; slots: number }>();
  const refill = () => {
    while (queue.length > 0) {
      // The worker with the most free slots.
      let best: [string, { held: number; slots: number }] | null = null;
      for (const entry of workers) if (entry[1].slots - entry[1].held > (best === null ? 0 : best[1].slots - best[1].held)) best = entry;
      if (best === null) return;
      best[1].held++;
      nc.publish(`floor.worker.${best[0]}`, encode({ op: "compute-task", ...queue.shift()!, pad: pad(SIZES.compute) }));
    }
  };
  nc.subscribe("floor.scheduler", {
    callback: (_e, m) => {
      const msg = decode(m.data);
      if (msg.op === "hello") workers.set(String(msg.name), { held: 0, slots: Math.ceil(1.1 * Number(msg.threads)) + 1 });
      else if (msg.op === "graph") {
        for (const key of msg.keys as string[]) queue.push({ key, iterations: Number(msg.iterations) });
        refill();
      } else if (msg.op === "finished") {
        workers.get(String(msg.worker))!.held--;
        nc.publish("floor.client", encode({ op: "key-in-memory", key: msg.key, pad: pad(SIZES.update) }));
        refill();
      }
    },
  });
}

/** What the floor's executor threads call themselves (their CPU is the tasks' work). */
const FLOOR_THREAD = "floor-exec";
const THREAD = `
const { parentPort, workerData } = require("node:worker_threads");
try { require("node:fs").writeFileSync("/proc/thread-self/comm", "${FLOOR_THREAD}"); } catch {}
import(workerData).then(({ spin }) => parentPort.on("message", (t) => parentPort.postMessage(spin(t.iterations, 0) === 0 ? t.key : null)));`;

/** A worker: its threads run what it holds, a finished task's report goes out after the next one is handed over. */
async function workerRole(nc: NatsConnection, name: string, threads: number): Promise<void> {
  const module = new URL("./cpu-tasks.mjs", import.meta.url).href;
  const free: Worker[] = [];
  const ready: Task[] = [];
  const run = () => {
    while (free.length > 0 && ready.length > 0) free.pop()!.postMessage(ready.shift());
  };
  for (let i = 0; i < threads; i++) {
    const thread = new Worker(THREAD, { eval: true, workerData: module });
    thread.on("message", (key: string) => {
      free.push(thread);
      run();
      nc.publish("floor.scheduler", encode({ op: "finished", worker: name, key, pad: pad(SIZES.finished) }));
    });
    free.push(thread);
  }
  nc.subscribe(`floor.worker.${name}`, {
    callback: (_e, m) => {
      const msg = decode(m.data);
      ready.push({ key: String(msg.key), iterations: Number(msg.iterations) });
      run();
    },
  });
  await nc.flush();
  nc.publish("floor.scheduler", encode({ op: "hello", name, threads }));
}

/** The ideal makespan (s): N tasks of `ms` on every core. */
const ideal = (n: number, ms: number, cores: number): number => (n * ms) / 1000 / cores;

function startRole(url: string, args: string[], roles: ChildProcess[]): Promise<ChildProcess> {
  const child = spawn(process.execPath, ["--no-memory-reducer", "--import", "tsx", SELF, "--role", url, ...args], { stdio: ["ignore", "pipe", "inherit"] });
  roles.push(child);
  return new Promise((resolve, reject) => {
    child.stdout!.on("data", (d: Buffer) => d.toString().includes("ready") && resolve(child));
    child.once("exit", (code) => reject(new Error(`w7-floor role ${args.join(" ")} exited ${code}`)));
  });
}

/** What one shape's floor measured: makespan over the ideal per repetition, and each process's CPU over it. */
export interface FloorResult {
  shape: "threads" | "workers";
  n: number;
  ms: number;
  cores: number;
  ideal: number;
  median: number;
  min: number;
  max: number;
  /** Makespan over the threads' CPU per core (bench/workloads.ts's W7 `.work` rows), where /proc tells. */
  work: Stats | null;
  reps: { ratio: number; work_ratio: number | null; scheduler_ms: number; server_ms: number; workers_ms: number[]; executors_ms: number | null; client_ms: number }[];
}

/** One shape's floor, `repeat` timed runs after W7's warm-up (bench/workloads.ts runs it beside W7 on NATS). */
export async function floorShape(kind: "threads" | "workers", n: number, ms: number, repeat: number): Promise<FloorResult> {
  const cores = availableParallelism();
  // As `npm run bench` starts its nats-server (--nats-gomaxprocs).
  const gomaxprocs = defaultNatsGomaxprocs();
  if (process.env[NATS_GOMAXPROCS_ENV] === undefined && gomaxprocs !== "go-default") process.env[NATS_GOMAXPROCS_ENV] = String(gomaxprocs);
  const server = await NatsServer.start();
  const roles: ChildProcess[] = [];
  // However this ends (a role that dies, an error, the process exiting), nothing is left running.
  const killRoles = () => roles.forEach((c) => c.exitCode === null && c.kill("SIGKILL"));
  process.once("exit", killRoles);
  let nc: NatsConnection | null = null;
  const reps: FloorResult["reps"] = [];
  try {
    nc = await connect({ servers: server.url });
    const scheduler = await startRole(server.url, ["scheduler"], roles);
    const [nWorkers, nThreads] = kind === "threads" ? [1, cores] : [cores, 1];
    const workers: ChildProcess[] = [];
    for (let i = 0; i < nWorkers; i++) workers.push(await startRole(server.url, ["worker", `w${i}`, String(nThreads)], roles));
    // A role that exits mid-run fails the run instead of leaving it waiting for updates.
    const died = new Promise<never>((_, reject) => roles.forEach((c) => c.once("exit", (code, signal) => reject(new Error(`w7-floor: a role process exited (${code ?? signal})`)))));
    died.catch(() => undefined);
    await new Promise((r) => setTimeout(r, 200));
    const { iterationsFor } = (await import(new URL("./cpu-tasks.mjs", import.meta.url).href)) as { iterationsFor(ms: number): number };
    const iterations = iterationsFor(ms);
    const client = nc;
    let round = 0;
    const run = (count: number, its: number) =>
      Promise.race([
        died,
        new Promise<void>((resolve) => {
          let left = count;
          const sub = client.subscribe("floor.client", {
            callback: (_e, m) => {
              decode(m.data);
              if (--left === 0) {
                sub.unsubscribe();
                resolve();
              }
            },
          });
          const tag = `r${round++}`;
          void client.flush().then(() => client.publish("floor.scheduler", encode({ op: "graph", keys: Array.from({ length: count }, (_, i) => `${tag}-${i}`), iterations: its })));
        }),
      ]);
    await run(2 * cores, iterations);
    for (let i = 0; i < WARM_ROUNDS; i++) await run(cores, 0);
    for (let r = 0; r < repeat; r++) {
      const pids = { scheduler: scheduler.pid!, server: server.pid, workers: workers.map((w) => w.pid!) };
      const before = { s: processCpuMs(pids.scheduler), v: processCpuMs(pids.server), w: pids.workers.map(processCpuMs) };
      const e0 = namedThreadsCpuMs(pids.workers, FLOOR_THREAD);
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      await run(n, iterations);
      const wall = (performance.now() - t0) / 1000;
      const c = process.cpuUsage(c0);
      const e1 = namedThreadsCpuMs(pids.workers, FLOOR_THREAD);
      const executors = e0 !== null && e1 !== null ? e1 - e0 : null;
      reps.push({
        ratio: wall / ideal(n, ms, cores),
        work_ratio: executors !== null && executors > 0 ? wall / (executors / 1000 / cores) : null,
        executors_ms: executors === null ? null : Math.round(executors),
        scheduler_ms: processCpuMs(pids.scheduler) - before.s,
        server_ms: processCpuMs(pids.server) - before.v,
        workers_ms: pids.workers.map((p, i) => processCpuMs(p) - before.w[i]!),
        client_ms: Math.round((c.user + c.system) / 1000),
      });
    }
  } finally {
    process.removeListener("exit", killRoles);
    await nc?.close();
    roles.forEach((c) => c.removeAllListeners("exit"));
    killRoles();
    await server.stop();
  }
  const ratios = reps.map((r) => r.ratio).sort((a, b) => a - b);
  const workRatios = reps.map((r) => r.work_ratio);
  const work = workRatios.every((x) => x !== null) ? stats(workRatios as number[]) : null;
  return { shape: kind, n, ms, cores, ideal: ideal(n, ms, cores), median: ratios[ratios.length >> 1]!, min: ratios[0]!, max: ratios.at(-1)!, work, reps };
}

async function main(argv: string[]): Promise<void> {
  if (argv[0] === "--role") {
    const nc = await connect({ servers: argv[1]! });
    if (argv[2] === "scheduler") await schedulerRole(nc);
    else await workerRole(nc, argv[3]!, Number(argv[4]));
    await nc.flush();
    console.log("ready");
    return;
  }
  const opt = (name: string, fallback: number) => {
    const at = argv.indexOf(name);
    return at < 0 ? fallback : Number(argv[at + 1]);
  };
  const which = argv[0] === "threads" || argv[0] === "workers" ? [argv[0]] : (["workers", "threads"] as const);
  const results = [];
  for (const kind of which) results.push(await floorShape(kind as "threads" | "workers", opt("--n", 100 * availableParallelism()), opt("--ms", 20), opt("--repeat", 5)));
  if (argv.includes("--json")) console.log(JSON.stringify(results));
  else
    for (const r of results) {
      const [nw, nt] = r.shape === "threads" ? [1, r.cores] : [r.cores, 1];
      const work = r.work ? `, over the threads' CPU ${r.work.median.toFixed(2)} (${r.work.min.toFixed(2)}-${r.work.max.toFixed(2)})` : "";
      console.log(`W7 floor ${r.n}x${r.ms}ms, ${nw}x${nt} [NATS, no natsched]: makespan / ideal ${r.median.toFixed(2)} (${r.min.toFixed(2)}-${r.max.toFixed(2)})${work}, ${r.reps.length} runs`);
      for (const x of r.reps) console.log(`  ${x.ratio.toFixed(3)} / work ${x.work_ratio?.toFixed(3) ?? "-"}  CPU ms: executors ${x.executors_ms ?? "-"}, scheduler ${x.scheduler_ms}, workers ${x.workers_ms.join("/")}, client ${x.client_ms}, nats-server ${x.server_ms}`);
    }
  process.exit(0);
}

if (process.argv[1] === SELF) await main(process.argv.slice(2));
