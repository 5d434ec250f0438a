/**
 * A cluster to benchmark on, whatever hosts it: the embedded LocalCluster, or NATS (a real
 * nats-server, the scheduler and each worker as `natsched` processes, the client in the
 * benchmark process). Workloads talk to the Client and ask the harness for what only the
 * host can see (placement, steal counters, bytes moved between workers).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, statSync, unlinkSync } from "node:fs";
import { createConnection, createServer } from "node:net";
import { cpus, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { connectClient, LocalCluster, readLogSync, type Client } from "../index.js";
import { FileLogSink } from "../log/file-log.js";
import type { LogSink } from "../log/types.js";
import { resolveConfig } from "../machines/config.js";
import { FUNCTIONS } from "./functions.js";
import { randomHex, sleep } from "./lib.js";
import { TapSink } from "./tap.js";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");

export type TransportName = "memory" | "nats";

export type Saturation = number | "adaptive";

/** Whether this checkout's scheduler accepts `workerSaturation: value` (a benchmark of another checkout may run). */
export function saturationSupported(value: Saturation): boolean {
  try {
    resolveConfig({ workerSaturation: value });
    return true;
  } catch {
    return false;
  }
}

/** The setting as the environment spells it. */
function saturationEnv(value: Saturation | undefined): string {
  const v = value ?? 1.1;
  return v === Infinity ? "inf" : String(v);
}

export interface HarnessOptions {
  workers: number;
  threadsPerWorker?: number;
  log: boolean;
  stealing?: boolean;
  /** `workerSaturation`: a number (Infinity: queuing off) or "adaptive" where the scheduler has it. */
  saturation?: Saturation;
  /** `adaptiveSaturationCap` (embedded only; the scheduler's default when absent). */
  adaptiveCap?: number;
  /** Watch worker inputs (bytes received from peers, first durations): W3-W5. */
  observe?: boolean;
  /** Only count executions of keys with this prefix (embedded tap). */
  countPrefix?: string;
  /**
   * A module of task functions (a path from the repository root) that workers run on their
   * executor threads, instead of bench/functions.ts on the event loop (W7).
   */
  threadModule?: string;
}

export interface Harness {
  readonly transport: TransportName;
  readonly client: Client;
  /** Worker names, worker-0 first. */
  readonly workerNames: string[];
  /** The processes the workers run in (embedded: this one), for their executor threads' CPU. */
  readonly workerPids: number[];
  /** Resolves once the scheduler holds no task (true), or after the timeout (false). */
  waitIdle(timeoutMs?: number): Promise<boolean>;
  /** Keys with this prefix held per worker (embedded); NATS: all keys each worker holds. */
  keysPerWorker(prefix: string): Promise<number[]>;
  /** Workers holding `key` (embedded only; null elsewhere). */
  replicas(key: string): number | null;
  /** Steal counters from the scheduler (embedded only). */
  steals(): Record<string, unknown> | null;
  /** The scheduler's first duration samples of counted keys (embedded only). */
  firstDurationsMs(): number[] | null;
  /**
   * Bytes each worker holds in memory (its tasks in state memory: the store's sizes), in
   * `workerNames` order. Embedded: read from the worker actors at once; NATS: each worker
   * process's status endpoint (the same sum its `$SRV.STATS` gives).
   */
  storedBytes(): number[] | Promise<number[]>;
  /** Make everything logged so far durable; returns seconds taken (null: not from here). */
  flushLog(): Promise<number | null>;
  /** Close; returns bytes workers received from peers (from the tap or the worker logs, if observed) and the log size. */
  close(): Promise<{ bytesMoved: number | null; transfers: number | null; logBytes: number }>;
}

function logPath(tag: string): string {
  return join(tmpdir(), `natsched-bench-${tag}-${process.pid}-${randomHex(4)}.natlog`);
}

function sizeAndRemove(path: string | undefined): number {
  if (path === undefined || !existsSync(path)) return 0;
  const size = statSync(path).size;
  if (process.env.NATSCHED_BENCH_KEEP_LOGS === "1") {
    console.error(`    kept log: ${path}`);
    return size;
  }
  try {
    unlinkSync(path);
  } catch {
    /* gone */
  }
  return size;
}

// ---- embedded ----------------------------------------------------------------------------------

export async function startEmbedded(o: HarnessOptions, tag: string): Promise<Harness> {
  const path = o.log ? logPath(tag) : undefined;
  let tap: TapSink | null = null;
  let log: LogSink | { path: string } | false = path !== undefined ? { path } : false;
  if (o.observe) {
    const inner = path !== undefined ? await FileLogSink.open(path, { meta: { bench: tag } }) : null;
    tap = new TapSink(inner, (k) => o.countPrefix === undefined || k.startsWith(o.countPrefix));
    log = tap;
  }
  const cluster = await LocalCluster.start({
    workers: o.workers,
    threadsPerWorker: o.threadsPerWorker ?? 1,
    functions: o.threadModule !== undefined ? join(ROOT, o.threadModule) : FUNCTIONS,
    log,
    configFile: false,
    config: { workStealing: o.stealing ?? true, workerSaturation: o.saturation ?? 1.1, ...(o.adaptiveCap !== undefined ? { adaptiveSaturationCap: o.adaptiveCap } : {}) },
  });
  const client = cluster.client();
  return {
    transport: "memory",
    client,
    workerNames: [...cluster.workers.keys()],
    workerPids: [process.pid],
    async waitIdle(timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs;
      while (Date.now() < deadline) {
        await cluster.flush();
        if (cluster.scheduler.core.tasks.size === 0) return true;
        await sleep(5);
      }
      return false;
    },
    async keysPerWorker(prefix) {
      return [...cluster.workers.values()].map((w) => {
        let n = 0;
        for (const k of w.store.keys()) if (k.startsWith(prefix)) n++;
        return n;
      });
    },
    replicas: (key) => [...cluster.workers.values()].filter((w) => w.store.has(key)).length,
    steals() {
      const m = cluster.scheduler.core.stealing?.metrics;
      if (!m) return null;
      const sum = (xs: number[]): number => xs.reduce((a, b) => a + b, 0);
      return { requests: sum(m.requests), confirmed: sum(m.confirmed), rejected: sum(m.rejected), stale: m.stale };
    },
    firstDurationsMs: () => tap?.firstDurationsMs ?? null,
    storedBytes: () => [...cluster.workers.values()].map((w) => heldBytes(w.core.tasks.values())),
    async flushLog() {
      if (cluster.log === null) return null;
      const t0 = performance.now();
      await cluster.log.flush();
      return (performance.now() - t0) / 1000;
    },
    async close() {
      await cluster.close();
      return { bytesMoved: tap ? tap.bytesMoved : null, transfers: tap ? tap.transfers : null, logBytes: sizeAndRemove(path) };
    },
  };
}

/** The bytes of a worker's tasks in memory: what `natsched worker`'s status reports as nbytes. */
export function heldBytes(tasks: Iterable<{ state: string; nbytes: number }>): number {
  let n = 0;
  for (const ts of tasks) if (ts.state === "memory" && ts.nbytes > 0) n += ts.nbytes;
  return n;
}

// ---- NATS --------------------------------------------------------------------------------------

function natsServerBinary(): string | null {
  for (const dir of (process.env.PATH ?? "").split(":").concat(["/usr/sbin", "/usr/local/bin", "/usr/bin"])) {
    const p = join(dir, "nats-server");
    if (dir && existsSync(p)) return p;
  }
  return null;
}

/** Whether NATS runs can happen here: the transport, the CLI commands and a nats-server binary. */
export function natsAvailability(): { ok: boolean; why: string } {
  if (!existsSync(join(ROOT, "transport/nats.ts"))) return { ok: false, why: "transport/nats.ts not available yet" };
  if (!existsSync(join(ROOT, "cli/scheduler.ts")) || !existsSync(join(ROOT, "cli/worker.ts"))) return { ok: false, why: "the `natsched scheduler` / `natsched worker` commands are not available yet" };
  if (natsServerBinary() === null) return { ok: false, why: "no nats-server binary on PATH (apt-get install -y nats-server)" };
  return { ok: true, why: "" };
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createConnection({ port, host: "127.0.0.1" });
    s.once("connect", () => {
      s.destroy();
      resolve(true);
    });
    s.once("error", () => resolve(false));
  });
}

export function stopProcess(child: ChildProcess, signal: NodeJS.Signals = "SIGTERM", graceMs = 10_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
    child.once("exit", () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill(signal);
  });
}

/** The benchmark's nats-server runs with this GOMAXPROCS when the variable is set (bench/run.ts --nats-gomaxprocs). */
export const NATS_GOMAXPROCS_ENV = "NATSCHED_BENCH_NATS_GOMAXPROCS";

/**
 * The benchmark's nats-server GOMAXPROCS unless told otherwise: one P on a machine of 2 cores
 * or fewer, else Go's default. There the server shares the cores with the scheduler, the
 * workers and the client, and Go's idle Ps spin looking for work each time a message wakes
 * one, CPU the daemons need (bench/nats-compare.mjs shows the server's CPU a task either way;
 * docs/performance.md, Method).
 */
export function defaultNatsGomaxprocs(): number | "go-default" {
  return cpus().length <= 2 ? 1 : "go-default";
}

/** A nats-server on a free local port, for the life of one benchmark case. */
export class NatsServer {
  private constructor(
    readonly url: string,
    private readonly child: ChildProcess,
  ) {}

  static async start(): Promise<NatsServer> {
    const bin = natsServerBinary();
    if (bin === null) throw new Error("no nats-server binary");
    const port = await freePort();
    const gomaxprocs = process.env[NATS_GOMAXPROCS_ENV];
    const env = gomaxprocs === undefined ? process.env : { ...process.env, GOMAXPROCS: gomaxprocs };
    const child = spawn(bin, ["-a", "127.0.0.1", "-p", String(port)], { stdio: ["ignore", "ignore", "pipe"], env });
    let err = "";
    child.stderr!.on("data", (d: Buffer) => (err += d.toString()));
    const deadline = Date.now() + 15_000;
    while (!(await canConnect(port))) {
      if (child.exitCode !== null || Date.now() > deadline) throw new Error(`nats-server did not start: ${err.slice(-300)}`);
      await sleep(50);
    }
    return new NatsServer(`nats://127.0.0.1:${port}`, child);
  }

  /** The server's process id (for its CPU in /proc). */
  get pid(): number {
    return this.child.pid!;
  }

  stop(): Promise<void> {
    return stopProcess(this.child);
  }
}

/** Start `natsched <args>` and resolve once a line of its stdout matches `ready`. */
function startNatsched(args: string[], env: NodeJS.ProcessEnv, ready: RegExp, what: string): Promise<ChildProcess> {
  // `--no-memory-reducer`: what the daemons set for themselves (cli/daemon-heap.ts), here for
  // tsx's loader thread too, which `--import tsx` starts before their code runs.
  const child = spawn(process.execPath, ["--no-memory-reducer", "--import", "tsx", join(ROOT, "cli/main.ts"), ...args], { cwd: ROOT, env, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  let err = "";
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${what} not ready after 60 s: ${(out + err).slice(-400)}`));
    }, 60_000);
    child.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      if (ready.test(out)) {
        clearTimeout(timer);
        resolve(child);
      }
    });
    child.stderr!.on("data", (d: Buffer) => {
      err += d.toString();
      if (err.length > 20_000) err = err.slice(-10_000);
    });
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited ${code ?? signal}: ${(out + err).slice(-400)}`));
    });
  });
}

export async function startNats(server: NatsServer, o: HarnessOptions, tag: string): Promise<Harness> {
  const cluster = `bench-${tag}-${randomHex(4)}`;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    NATSCHED_SCHEDULER__WORK_STEALING: String(o.stealing ?? true),
    NATSCHED_SCHEDULER__WORKER_SATURATION: saturationEnv(o.saturation),
  };
  const schedLog = o.log ? logPath(`${tag}-scheduler`) : undefined;
  const workerLogs = new Map<string, string>();
  const names = Array.from({ length: o.workers }, (_, i) => `worker-${i}`);
  const common = ["--nats", server.url, "--cluster", cluster];
  const scheduler = await startNatsched(["scheduler", ...common, ...(schedLog ? ["--log", schedLog] : ["--no-log"])], env, /natsched scheduler: cluster/, "natsched scheduler");
  const workers: ChildProcess[] = [];
  try {
    const started = await Promise.allSettled(
      names.map((name) => {
        // Each worker process writes its own log when the log is on (as in a real deployment),
        // and when its transfers are to be counted.
        const wlog = o.log || o.observe ? logPath(`${tag}-${name}`) : undefined;
        if (wlog) workerLogs.set(name, wlog);
        // The bench's functions are no-ops, sleeps and small arithmetic: on the loop, as the
        // embedded cluster runs them (an object of functions). A thread hop per no-op task
        // halves W1 on NATS (docs/executors.md, "Which tasks gain from a thread"). W7's
        // CPU-bound module runs on the worker's threads.
        const functions = o.threadModule !== undefined ? [join(ROOT, o.threadModule)] : [join(ROOT, "bench/functions.ts"), "--executor", "loop"];
        return startNatsched(
          ["worker", ...common, "--functions", ...functions, "--name", name, "--nthreads", String(o.threadsPerWorker ?? 1), ...(wlog ? ["--log", wlog] : [])],
          env,
          /registered with cluster/,
          `natsched worker ${name}`,
        );
      }),
    );
    for (const s of started) if (s.status === "fulfilled") workers.push(s.value);
    const failed = started.find((s) => s.status === "rejected");
    if (failed) throw (failed as PromiseRejectedResult).reason;
  } catch (error) {
    await Promise.all([...workers, scheduler].map((c) => stopProcess(c)));
    throw error;
  }
  // With the log on, the client writes its own too (actor client.<id>), as every process does.
  const clientLog = o.log ? logPath(`${tag}-client`) : undefined;
  const client = await connectClient({ servers: server.url, cluster, log: clientLog ?? false });
  // Status requests go on a connection of their own, beside the client's.
  let statusConn: Promise<NatsConnection> | null = null;
  const status = async (name: string): Promise<{ nbytes: number }> => {
    statusConn ??= connect({ servers: server.url });
    const msg = await (await statusConn).request(`natsched.${cluster}.status.worker.${name}`, "", { timeout: 5_000 });
    return msg.json<{ nbytes: number }>();
  };
  const byName = async (): Promise<Map<string, { processing: number; keys: number }>> => new Map((await client.workers()).map((w) => [w.name, w]));
  return {
    transport: "nats",
    client,
    workerNames: names,
    workerPids: workers.map((w) => w.pid!),
    async waitIdle(timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs;
      while (Date.now() < deadline) {
        const ws = [...(await byName()).values()];
        if (ws.every((w) => w.processing === 0 && w.keys === 0)) return true;
        await sleep(20);
      }
      return false;
    },
    async keysPerWorker() {
      const ws = await byName();
      return names.map((n) => ws.get(n)?.keys ?? 0);
    },
    replicas: () => null,
    steals: () => null,
    firstDurationsMs: () => null,
    storedBytes: () => Promise.all(names.map(async (n) => (await status(n)).nbytes)),
    flushLog: async () => null,
    async close() {
      if (statusConn !== null) await (await statusConn).close().catch(() => undefined);
      await client.close().catch(() => undefined);
      await Promise.all(workers.map((w) => stopProcess(w)));
      await stopProcess(scheduler);
      let bytesMoved: number | null = null;
      let transfers: number | null = null;
      if (o.observe) {
        bytesMoved = 0;
        transfers = 0;
        for (const path of workerLogs.values()) {
          if (!existsSync(path)) continue;
          for (const r of readLogSync(path).records) {
            const ev = r.kind === "input" ? (r.event as { op: string; received?: { nbytes: number }[] }) : null;
            if (ev?.op === "gather-done" && ev.received) {
              transfers += ev.received.length;
              for (const x of ev.received) bytesMoved += x.nbytes;
            }
          }
        }
      }
      let logBytes = sizeAndRemove(schedLog) + sizeAndRemove(clientLog);
      for (const p of workerLogs.values()) logBytes += o.log ? sizeAndRemove(p) : (sizeAndRemove(p), 0);
      return { bytesMoved, transfers, logBytes };
    },
  };
}
