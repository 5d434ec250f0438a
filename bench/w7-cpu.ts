/**
 * Where W7's CPU goes on NATS: a nats-server, a `natsched scheduler` and the worker processes
 * of shape `threads` (1 x 2 threads) or `workers` (2 x 1), N tasks of MS ms of CPU from
 * bench/cpu-tasks.mjs; prints the makespan over the ideal and each process's CPU (ms, from
 * /proc) over the timed run, the worker's, the scheduler's and the client's per thread. Linux only. docs/executors.md, "W7".
 *
 *   node --import tsx bench/w7-cpu.ts [threads|workers] [N=200] [MS=20] [nolog]
 *                     (with the log on, the client writes one too, as in the bench; CLIENT_LOG=0: not)
 *   PROF=dir ...      the scheduler writes a CPU profile there; WPROF=dir the workers too, and
 *                     CPROF=dir this process (the client) over the timed run only; PROF_INTERVAL=us
 *                     the profiles' sampling interval (V8's default 1000)
 *   SUBJECTS=1 ...    also counts the messages of the timed run per subject (a tap on ">")
 *   PERF_RECORD=file  perf record (every process, the client too) over the timed run, for `perf report`;
 *                     PERF_RECORD_ARGS="-F 999 -g": its options (default "-F 4999")
 *   V8FLAGS="..."     V8 flags for the scheduler and workers; V8_OUT=file keeps the scheduler's stdout (--trace-opt), file.w0... the workers'
 *   WARMUP=n, WARM0=n untimed tasks before the run: n of MS ms, then n of no work (JIT warm-up)
 *                     in rounds of WARM0_ROUND (200)
 *   NTHREADS=n        executor threads of the one worker of shape `threads` (default: cores)
 *   DIST=1            the scheduler and workers from the compiled CLI (dist/) instead of the sources through tsx
 *   PERF=1 ...        perf stat (task-clock ms, context switches) of each process over the timed run;
 *                     PERF_EVENTS=list other events (page-faults; this VM has no hardware counters)
 *   KEEP=dir          copies the run's logs there (s.natlog, w0.natlog...) once the daemons have stopped
 *   STRACE=s|w ...    strace -c of the scheduler (s) or the first worker (w) to /tmp/strace.out;
 *                     STRACE_FULL=1: each call with its time and thread instead of the counts
 */
import { spawn, type ChildProcess } from "node:child_process";
import { copyFileSync, createWriteStream, readFileSync, readdirSync, mkdtempSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { connectClient } from "../index.js";


const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const args = process.argv.slice(2);
const shape = args[0] ?? "threads";
const N = Number(args[1] ?? 200);
const MS = Number(args[2] ?? 20);
const logOn = args[3] !== "nolog";
function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Resolves once the child prints a line matching `ready`. */
function whenReady(child: ChildProcess, ready: RegExp): Promise<void> {
  return new Promise((resolve, reject) => {
    let out = "";
    const seen = (d: Buffer) => {
      out += d.toString();
      if (ready.test(out)) resolve();
    };
    child.stdout!.on("data", seen);
    child.stderr!.on("data", seen);
    child.once("exit", (code) => reject(new Error(`exited ${code}: ${out}`)));
  });
}


/** Each thread of `pid`: its id, name and CPU so far (ms, from schedstat: /proc's stat counts 10 ms ticks). */
function threads(pid: number): { t: string; name: string; cpu: number }[] {
  return readdirSync(`/proc/${pid}/task`).map((t) => {
    const line = readFileSync(`/proc/${pid}/task/${t}/stat`, "utf8");
    const ns = Number(readFileSync(`/proc/${pid}/task/${t}/schedstat`, "utf8").split(" ")[0]);
    return { t, name: line.slice(line.indexOf("(") + 1, line.lastIndexOf(")")), cpu: Math.round(ns / 1e5) / 10 };
  });
}

/** CPU a process has used so far (ms): its live threads' schedstat. */
const processCpuMs = (pid: number): number => Math.round(threads(pid).reduce((sum, x) => sum + x.cpu, 0));

/** The inspector's CPU profiler on this process; `stop` writes client.cpuprofile into a directory. */
async function startProfile(): Promise<{ stop(dir: string): Promise<void> }> {
  const { Session } = await import("node:inspector/promises");
  const { writeFileSync, mkdirSync } = await import("node:fs");
  const session = new Session();
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.start");
  return {
    async stop(dir) {
      const { profile } = await session.post("Profiler.stop");
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, "client.cpuprofile"), JSON.stringify(profile));
      session.disconnect();
    },
  };
}

/** Counts messages per subject (the last token made `*` for per-actor subjects) until `stop`. */
async function subjectTap(): Promise<{ stop(): Record<string, number> }> {
  const { connectNats } = await import("../transport/nats-connect.js");
  const nc = await connectNats({ servers: url });
  const counts: Record<string, number> = {};
  nc.subscribe(">", { callback: (_e, m) => { const k = m.subject.replace(/^_INBOX.*/, "_INBOX"); counts[k] = (counts[k] ?? 0) + 1; } });
  await nc.flush();
  return { stop: () => (void nc.close(), counts) };
}

const cores = 2;
const port = await freePort();
const dir = mkdtempSync(join(tmpdir(), "w7cpu-"));
/** Every process this run starts: killed however it ends (a run that throws would leave them running). */
const children: ChildProcess[] = [];
process.on("exit", () => children.forEach((c) => c.exitCode === null && c.kill("SIGKILL")));
const server = spawn("nats-server", ["-a", "127.0.0.1", "-p", String(port), "-js", "-sd", dir], { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, GOMAXPROCS: "1" } });
children.push(server);
await whenReady(server, /Server is ready/);
const url = `nats://127.0.0.1:${port}`;
const cluster = "w7cpu";
const common = ["--nats", url, "--cluster", cluster];

/** A natsched process through tsx, as the bench harness starts them; `nodeFlags` before the script. */
function natsched(args: string[], nodeFlags: string[] = []): ChildProcess {
  const v8 = process.env.V8FLAGS ? process.env.V8FLAGS.split(" ") : [];
  // DIST=1: the compiled CLI (dist/, `npm run build` first), as an installed package runs it.
  // `--no-memory-reducer` as bench/harness.ts: tsx's loader thread starts before the daemon sets it.
  const program = process.env.DIST ? [join(ROOT, "dist/cli/main.js")] : ["--no-memory-reducer", "--import", "tsx", join(ROOT, "cli/main.ts")];
  const [head, rest] = process.env.DIST ? [[], program] : [program.slice(0, 3), program.slice(3)];
  const child = spawn(process.execPath, [...head, ...v8, ...nodeFlags, ...rest, ...args], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"], env: process.env });
  children.push(child);
  return child;
}

const interval = process.env.PROF_INTERVAL ? ["--cpu-prof-interval", process.env.PROF_INTERVAL] : [];
const profile = process.env.PROF ? ["--cpu-prof", "--cpu-prof-dir", process.env.PROF, ...interval] : [];
const scheduler = natsched(["scheduler", ...common, ...(logOn ? ["--log", join(dir, "s.natlog")] : ["--no-log"])], profile);
await whenReady(scheduler, /natsched scheduler: cluster/);
/** V8_OUT=file: a process's stdout from here on, to `file` + `suffix` (with V8FLAGS="--trace-opt --trace-deopt", what V8 optimizes when). */
function keepStdout(child: ChildProcess, suffix: string): void {
  if (!process.env.V8_OUT) return;
  const sink = createWriteStream(process.env.V8_OUT + suffix);
  child.stdout!.on("data", (d: Buffer) => sink.write(d));
}
keepStdout(scheduler, "");
const [nWorkers, nThreads] = shape === "threads" ? [1, Number(process.env.NTHREADS ?? cores)] : [cores, 1];
const workers: ChildProcess[] = [];
for (let i = 0; i < nWorkers; i++) {
  const log = logOn ? ["--log", join(dir, `w${i}.natlog`)] : [];
  const wprof = process.env.WPROF ? ["--cpu-prof", "--cpu-prof-dir", process.env.WPROF, ...interval] : [];
  const worker = natsched(["worker", ...common, "--functions", join(ROOT, "bench/cpu-tasks.mjs"), "--name", `w${i}`, "--nthreads", String(nThreads), ...log], wprof);
  await whenReady(worker, /registered with cluster/);
  keepStdout(worker, `.w${i}`);
  workers.push(worker);
}
// As the bench: with the log on, the client writes its own too.
const client = await connectClient({ servers: url, cluster, log: logOn && process.env.CLIENT_LOG !== "0" ? join(dir, "client.natlog") : false });
const tasks = (await import(join(ROOT, "bench/cpu-tasks.mjs"))) as { iterationsFor(ms: number): number };
const iterations = tasks.iterationsFor(MS);

async function run(n: number, iters = iterations, prefix?: string): Promise<number> {
  const t0 = performance.now();
  const futures = Array.from({ length: n }, (_, i) => client.submit("spin", [iters, i], prefix === undefined ? { pure: false } : { pure: false, key: `${prefix}-${i}` }));
  await client.gather(futures);
  for (const f of futures) f.release();
  return (performance.now() - t0) / 1000;
}

await run(Number(process.env.WARMUP ?? 8));
// WARM0=n: n more tasks of no work through the same path, rounds of 200, to warm the JIT of every process.
// Under a prefix of their own, as bench/workloads.ts's W7 warm-up: `spin` keeps its learned duration.
const warmRound = Number(process.env.WARM0_ROUND ?? 200);
for (let left = Number(process.env.WARM0 ?? 0), round = 0; left > 0; left -= warmRound, round++) await run(Math.min(warmRound, left), 0, `w7warm-${round}`);
await new Promise((r) => setTimeout(r, 500));
const pids: Record<string, number> = { scheduler: scheduler.pid!, server: server.pid! };
workers.forEach((w, i) => (pids[`w${i}`] = w.pid!));
const before = new Map(Object.entries(pids).map(([name, pid]) => [name, processCpuMs(pid)]));
const threadsBefore = workers.map((w) => threads(w.pid!));
const schedulerThreadsBefore = new Map(threads(scheduler.pid!).map((x) => [x.t, x.cpu]));
const tracer = process.env.STRACE ? spawn("strace", [...(process.env.STRACE_FULL ? ["-tt", "-e", "trace=epoll_pwait,write,read,futex"] : ["-c"]), "-f", "-p", String(process.env.STRACE === "w" ? workers[0]!.pid : scheduler.pid), "-o", "/tmp/strace.out"], { stdio: "ignore" }) : null;
if (tracer) await new Promise((r) => setTimeout(r, 1000));
const perfs = process.env.PERF ? Object.entries(pids).map(([name, pid]) => ({ name, file: join(dir, `perf-${name}.txt`), p: spawn("perf", ["stat", "-x", ",", "-e", process.env.PERF_EVENTS ?? "task-clock,context-switches", "-p", String(pid), "-o", join(dir, `perf-${name}.txt`)], { stdio: "ignore" }) })) : [];
const recorder = process.env.PERF_RECORD ? spawn("perf", ["record", ...(process.env.PERF_RECORD_ARGS ?? "-F 4999").split(" "), "-o", process.env.PERF_RECORD, "-p", [...Object.values(pids), process.pid].join(",")], { stdio: "ignore" }) : null;
if (perfs.length > 0 || recorder) await new Promise((r) => setTimeout(r, 300));
const tap = process.env.SUBJECTS ? await subjectTap() : null;
const session = process.env.CPROF ? await startProfile() : null;
const clientThreadsBefore = new Map(threads(process.pid).map((x) => [x.t, x.cpu]));
const cpu0 = process.cpuUsage();
// The timed run on the monotonic clock V8's profiles are stamped with (microseconds), to cut them to it.
const mono0 = Number(process.hrtime.bigint() / 1000n);
const wall = await run(N);
const mono1 = Number(process.hrtime.bigint() / 1000n);
const cpu = process.cpuUsage(cpu0);
if (session) await session.stop(process.env.CPROF!);
for (const { p } of perfs) p.kill("SIGINT");
if (recorder) {
  recorder.kill("SIGINT");
  await new Promise((r) => (recorder.exitCode !== null ? r(null) : recorder.once("exit", r)));
}
await Promise.all(perfs.map(({ p }) => new Promise((r) => (p.exitCode !== null ? r(null) : p.once("exit", r)))));
if (tracer) {
  tracer.kill("SIGINT");
  await new Promise((r) => tracer.once("exit", r));
}
const ideal = (N * MS) / 1000 / cores;
const out: Record<string, unknown> = { shape, N, MS, wall, ideal, ratio: wall / ideal, client_ms: (cpu.user + cpu.system) / 1000 };
out.window_us = [mono0, mono1];
if (tap) out.messages = tap.stop();
for (const { name, file } of perfs) {
  const lines = readFileSync(file, "utf8").split("\n").filter((l) => /task-clock|context-switches|instructions|cycles|faults/.test(l)).map((l) => l.split(","));
  out[`${name}_perf`] = lines.map((f) => `${f[2]}=${Number(f[0]).toFixed(0)}`).join(" ");
}
for (const [name, pid] of Object.entries(pids)) out[`${name}_ms`] = processCpuMs(pid) - before.get(name)!;
out.client_threads_ms = threads(process.pid)
  .map((x) => ({ name: x.name, ms: x.cpu - (clientThreadsBefore.get(x.t) ?? 0) }))
  .filter((x) => x.ms > 0)
  .map((x) => `${x.name}:${x.ms}`)
  .join(" ");
out.scheduler_threads_ms = threads(scheduler.pid!)
  .map((x) => ({ name: x.name, ms: x.cpu - (schedulerThreadsBefore.get(x.t) ?? 0) }))
  .filter((x) => x.ms > 0)
  .map((x) => `${x.name}:${x.ms}`)
  .join(" ");
workers.forEach((w, i) => {
  const was = new Map(threadsBefore[i]!.map((x) => [x.t, x.cpu]));
  const used = threads(w.pid!).map((x) => ({ name: x.name, ms: x.cpu - (was.get(x.t) ?? 0) }));
  out[`w${i}_threads_ms`] = used.filter((x) => x.ms > 0).map((x) => `${x.name}:${x.ms}`).join(" ");
});
console.log(JSON.stringify(out));
await client.close();
// Workers first: a worker leaving asks the scheduler to retire it, and writes its profile (WPROF) once it has.
for (const w of workers) w.kill("SIGTERM");
await Promise.race([Promise.all(workers.map((w) => new Promise((r) => (w.exitCode !== null ? r(null) : w.once("exit", r))))), new Promise((r) => setTimeout(r, 3000))]);
scheduler.kill("SIGTERM");
await new Promise((r) => setTimeout(r, 1500));
if (process.env.KEEP) for (const f of readdirSync(dir).filter((f) => f.endsWith(".natlog"))) copyFileSync(join(dir, f), join(process.env.KEEP, f));
server.kill("SIGTERM");
process.exit(0);
