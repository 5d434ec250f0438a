/**
 * natsched benchmarks (issue 6): `npm run bench -- [options]`.
 *
 *   --workload W1|W2|W3|W4|W5|W6|W7|W8|R1|SOAK|all
 *                                         comma-separated; default W1-W7 and R1 (the speed
 *                                         workloads); W8 and SOAK run when named (or with all)
 *   --transport memory|nats|both          default memory (embedded LocalCluster); nats: a real
 *                                         nats-server, `natsched scheduler` and one
 *                                         `natsched worker` process per worker (W1-W5, W7)
 *   --log on|off                          W1 runs both, paired, unless this is given;
 *                                         the other workloads run with the log on unless off
 *   --repeat N                            timed repetitions per case (default 3, W1 10k: 11
 *                                         pairs; --quick: 1)
 *   --large-repeat N                      paired repetitions of the W1 100k case (default 3;
 *                                         10-20 s each)
 *   --quick                               small sizes: a smoke check in about a minute
 *   --peer dask                           also run the same shapes on Dask distributed
 *                                         (/usr/bin/python3) and print natsched/Dask ratios
 *   --peer-repeat N                       repetitions of each Dask case (default 1)
 *   --peer-threads                        Dask workers as threads in one process (default:
 *                                         worker processes, as the issue's reference figures)
 *   --profile                             node --cpu-prof for every case; prints top self time
 *   --w6-leaves N                         leaves of every W6 fan-in-2 tree (default: 500,000
 *                                         for memory, 100,000 embedded, 50,000 simulated)
 *   --replay-threads N                    R1: replay on N threads (default: replay()'s own
 *                                         choice, one thread when the cores are busy)
 *   --nats-gomaxprocs N|go-default        GOMAXPROCS of the benchmark's nats-server (default:
 *                                         1 on a machine of 2 cores or fewer, where the server
 *                                         shares them with the scheduler, two or four workers
 *                                         and the client; Go's own default, one per core,
 *                                         otherwise). docs/performance.md has why.
 *   --keep-logs                           keep every case's event logs (one per process on
 *                                         NATS) and print their paths, for `natsched replay`,
 *                                         `story` or `inspect`
 *   --w8-scale X                          W8: each root's output is X x 10 MB (default 1)
 *   --w8-roots N                          W8: root tasks (default 2,000; --quick: 200)
 *   --w8-budget-gb X                      W8: a run stops once the workers hold more than
 *                                         this together (default: 8, or 40% of the free
 *                                         memory at the start if less)
 *   --soak-rounds N                       SOAK: rounds (default 40; --quick: 5 small ones)
 *   --soak-timeout S                      SOAK: seconds a phase of a client's round may take
 *                                         before its unsettled futures count as hung (default 15)
 *   --json                                print only the JSON result on stdout
 *
 * Every case runs in a fresh child process (bench/child.ts, node --expose-gc). Results go
 * to bench/results/<timestamp>.json: min/median/max of the repetitions, machine info
 * (cpus, node, load average at start and end), options, and the Dask rows.
 */
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { availableParallelism, freemem, loadavg } from "node:os";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { machineInfo, meets, type Row, type Stats, type Target } from "./lib.js";
import { formatTop, topSelfTime } from "./profile-top.js";
import { NATS_GOMAXPROCS_ENV, defaultNatsGomaxprocs, natsAvailability, type Saturation, type TransportName } from "./harness.js";
import { saturationRatios } from "./saturation-ratios.js";
import type { Case } from "./workloads.js";

const HERE = dirname(fileURLToPath(import.meta.url));
/**
 * Untimed W1 tasks before the timed repetitions, per log mode (and in the Dask peer): with
 * fewer, the first timed 10,000-task repetition with the log on still ran slower than
 * the next ones while the JIT compiled the capture and the writer thread's code.
 */
const W1_WARMUP = 10_000;
const ROOT = join(HERE, "..");
const RESULT_MARK = "@@natsched-bench-result ";
/** Debian's python3 has python3-distributed; the pyenv python3 on PATH does not. */
const PYTHON = process.env.NATSCHED_BENCH_PYTHON ?? "/usr/bin/python3";
const ALL = ["W1", "W2", "W3", "W4", "W5", "W6", "W7", "W8", "R1", "SOAK"] as const;
/** Without --workload: the speed workloads (W8, gigabytes of memory, and SOAK, minutes, run when named). */
const DEFAULT_WORKLOADS: readonly Workload[] = ["W1", "W2", "W3", "W4", "W5", "W6", "W7", "R1"];
/** W7's task: pure CPU for this long. */
const W7_MS = 20;
/** W7: the shapes of workers x threads (cores x 1, 1 x cores). */
const W7_SHAPES = ["workers", "threads"] as const;
/** W4's shapes: "spec" (one scattered array, the issue's reference figures) and "pinned" (plus 4 tiny arrays). */
const W4_VARIANTS = ["spec", "pinned"] as const;
type Workload = (typeof ALL)[number];
/** W8: a root's output at --w8-scale 1 (issue 26). */
const W8_CHUNK_BYTES = 10e6;
/** W8: the saturations compared (Infinity: queuing off). */
const W8_SATURATIONS: readonly Saturation[] = [1.1, "adaptive", Infinity];

interface Options {
  workloads: Workload[];
  transports: TransportName[];
  log: "both" | "on" | "off";
  repeat: number;
  largeRepeat: number;
  /** --repeat was given: it then applies to W1 10k too. */
  repeatGiven: boolean;
  quick: boolean;
  peer: boolean;
  peerRepeat: number;
  peerThreads: boolean;
  profile: boolean;
  json: boolean;
  w6Leaves: number | undefined;
  replayThreads: number | undefined;
  /** The nats-server's GOMAXPROCS: a number, or "go-default" (unset). */
  natsGomaxprocs: number | "go-default";
  /** SOAK rounds (undefined: 40, or 5 with --quick) and seconds per phase before a future counts as hung. */
  soakRounds: number | undefined;
  soakTimeout: number;
  w8Scale: number;
  w8Roots: number | undefined;
  w8BudgetGB: number;
}

function usage(message?: string): never {
  const text = readFileSync(fileURLToPath(import.meta.url), "utf8").split("*/")[0]!.replace(/^\/\*\*?\n?/, "").replace(/^ \* ?/gm, "");
  if (message) process.stderr.write(`bench: ${message}\n\n`);
  process.stderr.write(text + "\n");
  process.exit(message ? 2 : 0);
}

function parseArgs(argv: string[]): Options {
  const o: Options = { workloads: [...DEFAULT_WORKLOADS], transports: ["memory"], log: "both", repeat: 3, repeatGiven: false, largeRepeat: 3, quick: false, peer: false, peerRepeat: 1, peerThreads: false, profile: false, json: false, w6Leaves: undefined, replayThreads: undefined, natsGomaxprocs: defaultNatsGomaxprocs(), soakRounds: undefined, soakTimeout: 15, w8Scale: 1, w8Roots: undefined, w8BudgetGB: Math.min(8, Number(((0.4 * freemem()) / 1e9).toFixed(1))) };
  let repeatGiven = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const [flag, inline] = arg.includes("=") ? [arg.slice(0, arg.indexOf("=")), arg.slice(arg.indexOf("=") + 1)] : [arg, undefined];
    const value = (): string => {
      const v = inline ?? argv[++i];
      if (v === undefined) usage(`${flag} needs a value`);
      return v;
    };
    const positive = (v: string, name: string): number => {
      const n = Number(v);
      if (!Number.isFinite(n) || n <= 0) usage(`${name} must be a number > 0, got ${v}`);
      return n;
    };
    const int = (v: string, name: string): number => {
      const n = Number(v);
      if (!Number.isInteger(n) || n < 1) usage(`${name} must be a whole number >= 1, got ${v}`);
      return n;
    };
    switch (flag) {
      case "--workload": {
        const v = value().toUpperCase();
        if (v === "ALL") o.workloads = [...ALL];
        else {
          const list = v.split(",").map((s) => s.trim());
          for (const w of list) if (!(ALL as readonly string[]).includes(w)) usage(`unknown workload ${w} (${ALL.join(", ")}, all)`);
          o.workloads = ALL.filter((w) => list.includes(w));
        }
        break;
      }
      case "--transport": {
        const v = value();
        if (v !== "memory" && v !== "nats" && v !== "both") usage(`--transport is memory, nats or both, got ${v}`);
        o.transports = v === "both" ? ["memory", "nats"] : [v];
        break;
      }
      case "--log": {
        const v = value();
        if (v !== "on" && v !== "off") usage(`--log is on or off, got ${v}`);
        o.log = v;
        break;
      }
      case "--repeat":
        o.repeat = int(value(), "--repeat");
        repeatGiven = true;
        break;
      case "--large-repeat":
        o.largeRepeat = int(value(), "--large-repeat");
        break;
      case "--peer": {
        const v = value();
        if (v !== "dask") usage(`the only peer is dask, got ${v}`);
        o.peer = true;
        break;
      }
      case "--peer-repeat":
        o.peerRepeat = int(value(), "--peer-repeat");
        break;
      case "--peer-threads":
        o.peerThreads = true;
        break;
      case "--quick":
        o.quick = true;
        break;
      case "--profile":
        o.profile = true;
        break;
      case "--json":
        o.json = true;
        break;
      case "--keep-logs":
        // Read by the children (bench/harness.ts), which inherit the environment.
        process.env.NATSCHED_BENCH_KEEP_LOGS = "1";
        break;
      case "--w6-leaves":
        o.w6Leaves = int(value(), "--w6-leaves");
        break;
      case "--replay-threads":
        o.replayThreads = int(value(), "--replay-threads");
        break;
      case "--w8-scale":
        o.w8Scale = positive(value(), "--w8-scale");
        break;
      case "--w8-roots":
        o.w8Roots = int(value(), "--w8-roots");
        break;
      case "--w8-budget-gb":
        o.w8BudgetGB = positive(value(), "--w8-budget-gb");
        break;
      case "--soak-rounds":
        o.soakRounds = int(value(), "--soak-rounds");
        break;
      case "--soak-timeout":
        o.soakTimeout = int(value(), "--soak-timeout");
        break;
      case "--nats-gomaxprocs": {
        const v = value();
        o.natsGomaxprocs = v === "go-default" ? v : int(v, "--nats-gomaxprocs");
        break;
      }
      case "--help":
      case "-h":
        usage();
      // falls through (usage exits)
      default:
        usage(`unknown option ${arg}`);
    }
  }
  if (o.quick && !repeatGiven) o.repeat = 1;
  o.repeatGiven = repeatGiven;
  // Read by the children (bench/harness.ts NatsServer), which inherit the environment.
  if (o.natsGomaxprocs === "go-default") delete process.env[NATS_GOMAXPROCS_ENV];
  else process.env[NATS_GOMAXPROCS_ENV] = String(o.natsGomaxprocs);
  return o;
}

// ---- planning -------------------------------------------------------------------------

interface Planned {
  workload: Workload;
  title: string;
  case: Case;
  /** Extra node flags (heap size for the big ones). */
  nodeFlags?: string[];
  /** Milliseconds before the case's process is killed (default 20 minutes). */
  limitMs?: number;
}

interface PeerPlanned {
  workload: Workload;
  title: string;
  args: string[];
}

function plan(o: Options): { cases: Planned[]; peer: PeerPlanned[] } {
  const q = o.quick;
  const reps = o.repeat;
  const logOn = o.log !== "off";
  const cases: Planned[] = [];
  const peer: PeerPlanned[] = [];
  const has = (w: Workload): boolean => o.workloads.includes(w);
  const w1Logs = o.log === "both" ? [true, false] : [o.log === "on"];
  const w1Sizes = q ? [2_000] : [10_000, 100_000];
  const w1PeerN = q ? 2_000 : 10_000;
  const leaves = q ? 512 : 4_096;
  const w3Tasks = q ? 40 : 200;
  const w4Tasks = q ? 40 : 200;
  const w4Elements = q ? 2_500_000 : 25_000_000;
  const w5Shape = q ? { nLong: 10, nShort: 90 } : { nLong: 100, nShort: 900 };
  const w5Modes: ("map" | "submit")[] = q ? ["map"] : ["map", "submit"];
  // 100 tasks a core: 2 s of ideal makespan (1 s with --quick) whatever the core count.
  const w7Tasks = (q ? 50 : 100) * availableParallelism();
  const onOff = (b: boolean): string => (b ? "on" : "off");
  const w8Roots = o.w8Roots ?? (q ? 200 : 2_000);
  const w8Chunk = Math.round(W8_CHUNK_BYTES * o.w8Scale);
  const w8Budget = Math.round(o.w8BudgetGB * 1e9);
  for (const transport of o.transports) {
    const t = transport === "nats" ? " [NATS]" : "";
    const add = (workload: Workload, title: string, c: Case, nodeFlags?: string[], limitMs?: number): void => {
      cases.push({ workload, title: title + t, case: { ...c, transport }, ...(nodeFlags ? { nodeFlags } : {}), ...(limitMs !== undefined ? { limitMs } : {}) });
    };
    if (has("W1")) {
      for (const n of w1Sizes) {
        // Short and noisy (well under a second a repetition, single pairs far apart on a busy
        // machine): the median of 11 pairs unless told otherwise.
        const w1Reps = n > 10_000 ? (q ? 1 : o.largeRepeat) : o.repeatGiven || q ? reps : 11;
        add("W1", `W1 ${n} tasks, log ${w1Logs.map(onOff).join("/")}`, { kind: "W1", n, logs: w1Logs, saturation: 1.1, reps: w1Reps, warmup: W1_WARMUP }, ["--max-old-space-size=8192"]);
      }
      // One case, repetitions alternating: issue 26's adaptive / queuing-off ratio is then paired.
      add("W1", `W1 ${w1PeerN} tasks, queuing off and adaptive saturation`, { kind: "W1", n: w1PeerN, logs: [logOn], saturation: [Infinity, "adaptive"], reps, warmup: W1_WARMUP });
    }
    if (has("W2")) {
      for (const fanin of [2, 8]) add("W2", `W2 fan-in ${fanin}`, { kind: "W2", leaves, fanin, log: logOn, reps, warmupLeaves: q ? 64 : 512 });
      // Its leaves are root-ish: issue 26 wants W2 unchanged or better under adaptive saturation.
      add("W2", "W2 fan-in 2, adaptive saturation", { kind: "W2", leaves, fanin: 2, log: logOn, reps, warmupLeaves: q ? 64 : 512, saturation: "adaptive" });
    }
    if (has("W3")) {
      for (const stealing of [true, false]) add("W3", `W3 stealing ${onOff(stealing)}`, { kind: "W3", nTasks: w3Tasks, stealing, log: logOn, reps });
      add("W3", "W3 stealing on, adaptive saturation", { kind: "W3", nTasks: w3Tasks, stealing: true, log: logOn, reps, saturation: "adaptive" });
    }
    if (has("W4")) {
      for (const variant of W4_VARIANTS) for (const stealing of [true, false]) add("W4", `W4 ${variant} stealing ${onOff(stealing)}`, { kind: "W4", variant, nTasks: w4Tasks, elements: w4Elements, stealing, log: logOn, reps }, ["--max-old-space-size=4096"]);
      // Its consumers of one scattered array are root-ish ("spec"): issue 26 wants W4 unchanged under adaptive saturation.
      add("W4", "W4 spec stealing on, adaptive saturation", { kind: "W4", variant: "spec", nTasks: w4Tasks, elements: w4Elements, stealing: true, log: logOn, reps, saturation: "adaptive" }, ["--max-old-space-size=4096"]);
    }
    if (has("W5")) {
      for (const mode of w5Modes) for (const stealing of [true, false]) add("W5", `W5 ${mode} stealing ${onOff(stealing)}`, { kind: "W5", mode, ...w5Shape, longMs: 100, shortMs: 1, seed: 20240607, stealing, log: logOn, reps });
      for (const mode of w5Modes) add("W5", `W5 ${mode} stealing on, adaptive saturation`, { kind: "W5", mode, ...w5Shape, longMs: 100, shortMs: 1, seed: 20240607, stealing: true, log: logOn, reps, saturation: "adaptive" });
    }
    if (has("W7")) for (const shape of W7_SHAPES) add("W7", `W7 CPU-bound, ${shape === "workers" ? "cores x 1 thread" : "1 worker x cores threads"}`, { kind: "W7", shape, nTasks: w7Tasks, ms: W7_MS, log: logOn, reps });
    if (has("W8")) {
      for (const saturation of W8_SATURATIONS) {
        const tag = saturation === Infinity ? "inf" : String(saturation);
        add("W8", `W8 ${w8Roots} x ${w8Chunk / 1e6} MB pairwise, saturation ${tag}`, { kind: "W8", roots: w8Roots, chunkBytes: w8Chunk, scale: o.w8Scale, saturation, log: logOn, reps, budgetBytes: w8Budget, intervalMs: 50 });
      }
    }
    if (has("SOAK")) {
      const rounds = o.soakRounds ?? (q ? 5 : 40);
      const timeoutMs = o.soakTimeout * 1000;
      // A round that hangs waits out the timeout once or twice: room for that in every round.
      const limitMs = Math.max(20 * 60_000, rounds * (2 * timeoutMs + 60_000));
      add("SOAK", `SOAK ${rounds} rounds${q ? " (small)" : ""}`, { kind: "SOAK", rounds, shape: q ? "small" : "full", timeoutMs, fillTombstones: !q, log: logOn }, undefined, limitMs);
    }
    if (transport !== "memory") continue;
    if (has("W6")) {
      // Default sizes: the scheduler's memory on the full 1M-task tree (500,000 leaves; the
      // graph is only ingested, about a minute); the embedded run on 200k tasks and the
      // simulator on 100k (1M would take several minutes each; see docs/performance.md).
      const memLeaves = o.w6Leaves ?? (q ? 5_000 : 500_000);
      const runLeaves = o.w6Leaves ?? (q ? 5_000 : 100_000);
      const simLeaves = o.w6Leaves ?? (q ? 5_000 : 50_000);
      const big = ["--max-old-space-size=16384"];
      add("W6", `W6 memory, ${memLeaves} leaves`, { kind: "W6-memory", leaves: memLeaves, fanin: 2 }, big);
      add("W6", `W6 embedded, ${runLeaves} leaves`, { kind: "W6-embedded", leaves: runLeaves, fanin: 2, reps: 1 }, big);
      for (const log of ["memory", "dropped"] as const) add("W6", `W6 simulator, ${simLeaves} leaves, log ${log}`, { kind: "W6-sim", leaves: simLeaves, fanin: 2, log }, big);
    }
    if (has("R1")) add("R1", "R1 replay", { kind: "R1", n: q ? 2_000 : 10_000, treeLeaves: q ? 2_000 : 10_000, reps, ...(o.replayThreads !== undefined ? { threads: o.replayThreads } : {}) }, ["--max-old-space-size=8192"]);
  }
  if (has("W1")) {
    peer.push({ workload: "W1", title: `Dask W1 ${w1PeerN}`, args: ["w1", "--n", String(w1PeerN)] });
    peer.push({ workload: "W1", title: `Dask W1 ${w1PeerN} queuing off`, args: ["w1", "--n", String(w1PeerN), "--saturation", "inf"] });
  }
  if (has("W2")) for (const fanin of [2, 8]) peer.push({ workload: "W2", title: `Dask W2 fan-in ${fanin}`, args: ["w2", "--fanin", String(fanin), "--leaves", String(leaves)] });
  if (has("W3")) for (const st of ["on", "off"]) peer.push({ workload: "W3", title: `Dask W3 stealing ${st}`, args: ["w3", "--tasks", String(w3Tasks), "--stealing", st] });
  if (has("W4")) for (const variant of W4_VARIANTS) for (const st of ["on", "off"]) peer.push({ workload: "W4", title: `Dask W4 ${variant} stealing ${st}`, args: ["w4", "--variant", variant, "--tasks", String(w4Tasks), "--elements", String(w4Elements), "--stealing", st] });
  if (has("W5")) {
    for (const mode of w5Modes) for (const st of ["on", "off"]) peer.push({ workload: "W5", title: `Dask W5 ${mode} stealing ${st}`, args: ["w5", "--mode", mode, "--n-long", String(w5Shape.nLong), "--n-short", String(w5Shape.nShort), "--stealing", st] });
  }
  if (has("W8")) {
    for (const sat of ["default", "inf"]) {
      peer.push({ workload: "W8", title: `Dask W8 ${w8Roots} x ${w8Chunk / 1e6} MB, saturation ${sat === "default" ? "1.1" : "inf"}`, args: ["w8", "--roots", String(w8Roots), "--chunk-bytes", String(w8Chunk), "--saturation", sat, "--budget-bytes", String(w8Budget)] });
    }
  }
  if (has("W7")) {
    // Dask's worker processes (the shapes natsched is compared with) and its threads in one
    // process (processes=False: the GIL runs one pure-Python loop at a time).
    for (const shape of W7_SHAPES) for (const pool of ["processes", "threads"]) peer.push({ workload: "W7", title: `Dask W7 ${shape}, ${pool}`, args: ["w7", "--shape", shape, "--tasks", String(w7Tasks), "--ms", String(W7_MS), "--pool", pool] });
  }
  return { cases, peer };
}

/** The code measured: commit and how many files differ from it (others may be editing). */
function gitState(): { commit: string; changedFiles: number } | null {
  try {
    const commit = execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: ROOT, encoding: "utf8" }).trim();
    const changed = execFileSync("git", ["status", "--porcelain"], { cwd: ROOT, encoding: "utf8" }).split("\n").filter(Boolean).length;
    return { commit, changedFiles: changed };
  } catch {
    return null;
  }
}

// ---- running ---------------------------------------------------------------------------

function log(o: Options, text: string): void {
  if (!o.json) process.stderr.write(text + "\n");
}

interface ChildResult {
  rows: Row[];
  error?: string;
  seconds: number;
  profile?: string;
}

function runChild(o: Options, p: Planned, profDir: string | undefined): Promise<ChildResult> {
  const flags = ["--expose-gc", ...(p.nodeFlags ?? [])];
  // One directory per case: node writes a profile per thread (the tsx loader runs in a
  // worker thread); the main thread's file has thread id 0 in its default name.
  const caseProfDir = profDir !== undefined ? join(profDir, p.title.replace(/[^A-Za-z0-9]+/g, "-")) : undefined;
  if (caseProfDir !== undefined) flags.push("--cpu-prof", `--cpu-prof-dir=${caseProfDir}`);
  const payload = JSON.stringify(p.case, (_k, v: unknown) => (v === Infinity ? "Infinity" : v));
  const started = performance.now();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...flags, "--import", "tsx", join(HERE, "child.ts"), payload], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => {
      err += d.toString();
      if (!o.json) process.stderr.write(d);
    });
    const limit = setTimeout(() => child.kill("SIGKILL"), p.limitMs ?? 20 * 60_000);
    child.on("close", (code, signal) => {
      clearTimeout(limit);
      const seconds = (performance.now() - started) / 1000;
      const line = out.split("\n").find((l) => l.startsWith(RESULT_MARK));
      const profile = caseProfDir !== undefined ? mainThreadProfile(caseProfDir) : undefined;
      if (line === undefined) {
        resolve({ rows: [], error: `child exited ${code ?? signal} without a result: ${err.trim().split("\n").slice(-5).join(" | ")}`, seconds });
        return;
      }
      const parsed = JSON.parse(line.slice(RESULT_MARK.length)) as { rows?: Row[]; error?: string };
      resolve({ rows: parsed.rows ?? [], ...(parsed.error ? { error: parsed.error } : {}), seconds, ...(profile && existsSync(profile) ? { profile } : {}) });
    });
  });
}

/** The main thread's profile in a --cpu-prof directory: CPU.<date>.<time>.<pid>.<tid>.<seq>.cpuprofile, tid 0. */
function mainThreadProfile(dir: string): string | undefined {
  if (!existsSync(dir)) return undefined;
  const files = readdirSync(dir).filter((f) => f.endsWith(".cpuprofile"));
  const main = files.find((f) => f.split(".")[4] === "0") ?? files[0];
  return main !== undefined ? join(dir, main) : undefined;
}

interface PeerRow {
  shape: string;
  label: string;
  unit: string;
  value: Stats;
  extra?: Record<string, unknown>;
}

const DASK_INSTALL = "apt-get update && apt-get install -y python3-distributed python3-dask python3-numpy";

function daskAvailable(): { ok: boolean; why: string } {
  if (!existsSync(PYTHON)) return { ok: false, why: `${PYTHON} not found; the Dask peer is skipped (${DASK_INSTALL})` };
  try {
    execFileSync(PYTHON, ["-c", "import dask, distributed, numpy"], { stdio: ["ignore", "ignore", "pipe"] });
  } catch (error) {
    const missing = /No module named '?([\w.]+)/.exec(String((error as { stderr?: Buffer }).stderr ?? ""))?.[1] ?? "dask/distributed/numpy";
    return { ok: false, why: `${PYTHON} cannot import ${missing}; the Dask peer is skipped. Install: ${DASK_INSTALL}` };
  }
  return { ok: true, why: "" };
}

function runPeer(o: Options, p: PeerPlanned): Promise<{ rows: PeerRow[]; env?: Record<string, unknown>; error?: string; seconds: number }> {
  const args = [join(HERE, "peer/dask_peer.py"), ...p.args, "--reps", String(o.peerRepeat), ...(o.peerThreads ? ["--threads"] : [])];
  const started = performance.now();
  return new Promise((resolve) => {
    const child = spawn(PYTHON, args, { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    const limit = setTimeout(() => child.kill("SIGKILL"), 15 * 60_000);
    child.on("close", (code, signal) => {
      clearTimeout(limit);
      const seconds = (performance.now() - started) / 1000;
      const line = out.split("\n").reverse().find((l) => l.startsWith("{"));
      if (code !== 0 || line === undefined) {
        const tail = err.trim().split("\n").slice(-3).join(" | ");
        const missing = /No module named '?(distributed|dask|numpy)/.exec(err);
        resolve({ rows: [], error: missing ? `python3 module ${missing[1]} missing: ${DASK_INSTALL}` : `exit ${code ?? signal}: ${tail}`, seconds });
        return;
      }
      const parsed = JSON.parse(line) as { rows: PeerRow[]; env: Record<string, unknown> };
      resolve({ rows: parsed.rows, env: parsed.env, seconds });
    });
  });
}

// ---- targets ---------------------------------------------------------------------------

interface Verdict {
  target?: Target;
  /** natsched value / Dask value (same unit), when a Dask row of the same shape ran. */
  daskRatio?: number;
  daskShape?: string;
  daskTarget?: Target;
  met?: boolean;
}

/** The issue's targets, by row. Returns the target on the row's own value and on the Dask ratio. */
function targetsFor(row: Row): { target?: Target; daskTarget?: Target } {
  const nats = row.id.endsWith(".nats");
  const id = nats ? row.id.slice(0, -".nats".length) : row.id;
  if (/^W1\.n\d+\.log-on$/.test(id)) {
    return nats
      ? { target: { op: ">=", value: 5_000, text: ">= 5,000 tasks/s" }, daskTarget: { op: ">=", value: 10, text: ">= 10x Dask" } }
      : { target: { op: ">=", value: 20_000, text: ">= 20,000 tasks/s" }, daskTarget: { op: ">=", value: 50, text: ">= 50x Dask" } };
  }
  if (/^W1\.n\d+\.log-overhead$/.test(id)) return { target: { op: "<=", value: 1.15, text: "log on costs <= 15%" } };
  if (/^W2\.fanin\d+\.log-(on|off)$/.test(id)) return nats ? { target: { op: ">=", value: 3_000, text: ">= 3,000 tasks/s" } } : { target: { op: ">=", value: 10_000, text: ">= 10,000 tasks/s" } };
  if (id === "W3.pinned.stealing-on") return { target: { op: "<=", value: 1.1, text: "<= 1.10x ideal" } };
  if (id === "W4.spec.stealing-on.moved" || id === "W4.pinned.stealing-on.moved") return { target: { op: "<=", value: 200, text: "<= one copy (200 MB), every rep", worst: true } };
  // The issue's W4 is the spec shape (its Dask figures: 600 MB moved, 1.8-2.0 s); in the
  // pinned shape Dask moves nothing either, and both run 200 tasks of 1 ms on one thread.
  if (id === "W4.spec.stealing-on.makespan") return { daskTarget: { op: "<=", value: 0.5, text: "<= 0.5x Dask" } };
  if (/^W5\.(map|submit)\.stealing-on$/.test(id)) return { target: { op: "<=", value: 1.15, text: "<= 1.15x bound" } };
  if (/^W6\.memory/.test(id)) return { target: { op: "<=", value: 1.5, text: "<= 1.5 KB/task" } };
  if (/^W6\.sim/.test(id)) return { target: { op: "<=", value: 60, text: "1M tasks < 60 s" } };
  if (/^W7\.(workers|threads)$/.test(id)) return { target: { op: "<=", value: 1.1, text: "<= 1.10x ideal" }, daskTarget: { op: "<=", value: 1, text: "<= Dask" } };
  if (/^W7\.(workers|threads)\.work$/.test(id)) return { target: { op: "<=", value: 1.1, text: "<= 1.10x work" }, daskTarget: { op: "<=", value: 1, text: "<= Dask" } };
  if (/^R1/.test(id)) return { target: { op: ">=", value: 200_000, text: ">= 200,000 transitions/s" } };
  // SOAK's rows carry their own (records back to baseline, no hang, heap growth within its
  // tolerance), as do issue 26's ratios (bench/saturation-ratios.ts).
  if (row.target) return { target: row.target };
  return {};
}

function judge(row: Row, dask: Map<string, PeerRow>): Verdict {
  const { target, daskTarget } = row.status === "skipped" ? {} : targetsFor(row);
  const v: Verdict = {};
  if (target) v.target = target;
  if (daskTarget) v.daskTarget = daskTarget;
  let peerRow = row.shape !== undefined ? dask.get(row.shape) : undefined;
  // W1 at 100k has no Dask run (it would take minutes): compare with Dask at the peer size.
  if (peerRow === undefined && row.shape?.startsWith("W1.n")) {
    const alt = [...dask.keys()].find((k) => k.startsWith("W1.n") && k.endsWith(row.shape!.slice(row.shape!.lastIndexOf("."))));
    if (alt !== undefined) peerRow = dask.get(alt);
  }
  if (row.value && peerRow && peerRow.unit === row.unit && peerRow.value.median !== 0) {
    v.daskRatio = row.value.median / peerRow.value.median;
    v.daskShape = peerRow.shape;
  }
  if (row.value) {
    const checks: boolean[] = [];
    if (target) checks.push(meets(target.worst ? (row.higherIsBetter ? row.value.min : row.value.max) : row.value.median, target));
    if (daskTarget && v.daskRatio !== undefined) checks.push(meets(v.daskRatio, daskTarget));
    if (checks.length > 0) v.met = checks.every(Boolean);
  }
  return v;
}

// ---- output ----------------------------------------------------------------------------

function fmt(x: number): string {
  const a = Math.abs(x);
  if (a >= 10_000) return Math.round(x).toLocaleString("en-US");
  if (a >= 100) return x.toFixed(0);
  if (a >= 10) return x.toFixed(1);
  if (a >= 1) return x.toFixed(2);
  return x.toPrecision(3);
}

function table(rows: { row: Row; verdict: Verdict; dask?: PeerRow }[]): string {
  const header = ["workload", "natsched median (min-max)", "unit", "target", "ok", "Dask median", "natsched/Dask"];
  const body = rows.map(({ row, verdict, dask }) => {
    const value = row.value ? `${fmt(row.value.median)} (${fmt(row.value.min)}-${fmt(row.value.max)})` : row.status === "error" ? "ERROR" : "n/a";
    const targets = [verdict.target?.text, verdict.daskTarget?.text].filter(Boolean).join("; ");
    const ok = verdict.met === undefined ? (row.value ? "" : "-") : verdict.met ? "yes" : "MISS";
    return [row.label, value, row.unit, targets, ok, dask ? fmt(dask.value.median) : "", verdict.daskRatio !== undefined ? `${fmt(verdict.daskRatio)}x` : ""];
  });
  const widths = header.map((h, i) => Math.min(i === 0 ? 90 : 40, Math.max(h.length, ...body.map((r) => r[i]!.length))));
  const line = (cells: string[]): string => cells.map((c, i) => (i === 1 || i >= 5 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join("  ");
  const out = [line(header), widths.map((w) => "-".repeat(w)).join("  "), ...body.map(line)];
  const notes = rows.filter(({ row }) => row.note).map(({ row }) => `  ${row.id}: ${row.note}`);
  if (notes.length) out.push("", "notes:", ...notes);
  return out.join("\n");
}

// ---- main ------------------------------------------------------------------------------

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  const machine = machineInfo();
  const started = new Date();
  const stamp = started.toISOString().replace(/[:.]/g, "-");
  const resultsDir = join(HERE, "results");
  mkdirSync(resultsDir, { recursive: true });
  const profDir = o.profile ? join(resultsDir, `prof-${stamp}`) : undefined;
  if (profDir) mkdirSync(profDir, { recursive: true });
  log(o, `natsched bench: ${o.workloads.join(",")} transport=${o.transports.join("+")} log=${o.log} repeat=${o.repeat}${o.quick ? " quick" : ""}${o.peer ? ` peer=dask(x${o.peerRepeat}${o.peerThreads ? ", threads" : ""})` : ""}`);
  log(o, `machine: ${machine.cpus} cpus (${machine.cpuModel}), node ${machine.node}, load ${machine.loadavgAtStart.join(" ")}`);
  if (o.workloads.includes("W8")) log(o, `W8: scale ${o.w8Scale} (${(W8_CHUNK_BYTES * o.w8Scale) / 1e6} MB a root), budget ${o.w8BudgetGB} GB held by the workers together, free memory ${(freemem() / 1e9).toFixed(1)} GB`);
  if (o.transports.includes("nats")) log(o, `nats-server: GOMAXPROCS ${o.natsGomaxprocs === "go-default" ? "Go's default (one per core)" : o.natsGomaxprocs} (--nats-gomaxprocs)`);

  const rows: Row[] = [];
  const daskRows = new Map<string, PeerRow>();
  const daskRuns: { title: string; seconds: number; error?: string }[] = [];
  let daskEnv: Record<string, unknown> | undefined;
  const runs: { title: string; seconds: number; error?: string; profile?: string }[] = [];
  const { cases, peer } = plan(o);

  const unavailable = new Set<string>();
  if (o.transports.includes("nats")) {
    const nats = natsAvailability();
    if (!nats.ok) {
      for (const w of o.workloads.filter((x) => x !== "W6" && x !== "R1")) {
        rows.push({ id: `${w}.nats`, workload: w, label: `${w} over NATS (nats-server, scheduler and workers as processes)`, unit: "", higherIsBetter: true, value: null, status: "not-available", note: `not available yet: ${nats.why}` });
      }
      unavailable.add("nats");
      log(o, `NATS: not available yet: ${nats.why}`);
    }
    if (!o.transports.includes("memory") && o.workloads.some((w) => w === "W6" || w === "R1")) {
      for (const w of o.workloads.filter((x) => x === "W6" || x === "R1")) rows.push({ id: `${w}.nats`, workload: w, label: `${w} over NATS`, unit: "", higherIsBetter: true, value: null, status: "skipped", note: "W6 and R1 run on the embedded cluster only (--transport memory or both)" });
    }
  }
  const todo = cases.filter((c) => !unavailable.has(c.case.transport ?? "memory"));
  const peerCheck = o.peer ? daskAvailable() : { ok: false, why: "" };
  if (o.peer && !peerCheck.ok) {
    log(o, `Dask peer: ${peerCheck.why}`);
    daskRuns.push({ title: "Dask peer", seconds: 0, error: peerCheck.why });
  }
  let i = 0;
  for (const w of o.workloads) {
    for (const p of todo.filter((c) => c.workload === w)) {
      i++;
      log(o, `[${i}/${todo.length}] ${p.title} ...`);
      const r = await runChild(o, p, profDir);
      runs.push({ title: p.title, seconds: Number(r.seconds.toFixed(1)), ...(r.error ? { error: r.error } : {}), ...(r.profile ? { profile: relative(ROOT, r.profile) } : {}) });
      if (r.error) {
        log(o, `    error: ${r.error.split("\n")[0]}`);
        rows.push({ id: `${p.title}.error`, workload: w, label: p.title, unit: "", higherIsBetter: true, value: null, status: "error", note: r.error.split("\n")[0]! });
      }
      rows.push(...r.rows);
      log(o, `    ${r.seconds.toFixed(1)} s: ${r.rows.map((x) => `${x.id}=${x.value ? fmt(x.value.median) : x.status}`).join(", ")}`);
    }
    if (o.peer && peerCheck.ok) {
      for (const p of peer.filter((x) => x.workload === w)) {
        log(o, `    ${p.title} ...`);
        const r = await runPeer(o, p);
        daskRuns.push({ title: p.title, seconds: Number(r.seconds.toFixed(1)), ...(r.error ? { error: r.error } : {}) });
        if (r.error) log(o, `    Dask error: ${r.error}`);
        daskEnv ??= r.env;
        for (const pr of r.rows) daskRows.set(pr.shape, pr);
        log(o, `    ${r.seconds.toFixed(1)} s: ${r.rows.map((x) => `${x.shape}=${fmt(x.value.median)}`).join(", ")}`);
      }
    }
  }

  // W6 simulator: report seconds per 1M tasks (linear extrapolation when run smaller).
  for (const row of rows) {
    if (row.id.startsWith("W6.sim.") && row.value) {
      const n = Number(row.extra?.n_tasks);
      if (n > 0 && Math.abs(n - 1_000_000) > 10_000) {
        const f = 1e6 / n;
        row.value = { min: row.value.min * f, median: row.value.median * f, max: row.value.max * f, runs: row.value.runs.map((x) => x * f) };
        row.unit = "s per 1M";
        row.label += ` [${n} tasks, scaled to 1M]`;
      }
    }
  }

  rows.push(...saturationRatios(rows));
  const judged = rows.map((row) => {
    const verdict = judge(row, daskRows);
    return { row, verdict, ...(verdict.daskShape ? { dask: daskRows.get(verdict.daskShape)! } : {}) };
  });
  const finished = new Date();
  const result = {
    command: `npm run bench -- ${process.argv.slice(2).join(" ")}`.trim(),
    options: o,
    machine: { ...machine, loadavgAtEnd: loadavg().map((x) => Number(x.toFixed(2))) },
    code: gitState(),
    startedAt: started.toISOString(),
    seconds: Math.round((finished.getTime() - started.getTime()) / 1000),
    rows: judged.map(({ row, verdict }) => ({ ...row, verdict })),
    dask: o.peer ? { env: daskEnv ?? null, rows: [...daskRows.values()], runs: daskRuns } : null,
    runs,
  };
  const file = join(resultsDir, `${stamp}.json`);
  writeFileSync(file, JSON.stringify(result, null, 2) + "\n");

  if (o.json) {
    process.stdout.write(JSON.stringify(result) + "\n");
    return;
  }
  console.log("");
  console.log(table(judged));
  const shown = new Set(judged.map((j) => j.verdict.daskShape));
  const daskOnly = [...daskRows.values()].filter((r) => !shown.has(r.shape));
  if (daskOnly.length > 0) {
    console.log("");
    console.log("Dask rows no natsched row is compared with:");
    for (const r of daskOnly) console.log(`  ${r.label}: ${fmt(r.value.median)} (${fmt(r.value.min)}-${fmt(r.value.max)}) ${r.unit}`);
  }
  const missed = judged.filter((j) => j.verdict.met === false).map((j) => j.row.id);
  console.log("");
  console.log(`targets missed: ${missed.length ? missed.join(", ") : "none"}`);
  if (o.quick) console.log("(--quick: small shapes for a smoke check; the targets are set for the full shapes)");
  const peerSkipped = daskRuns.find((r) => r.title === "Dask peer");
  if (peerSkipped) console.log(`Dask peer: ${peerSkipped.error}`);
  if (profDir) {
    console.log("");
    for (const r of runs) {
      if (r.profile === undefined) continue;
      console.log(`${r.title}: ${formatTop(r.profile, topSelfTime(join(ROOT, r.profile), 10))}`);
      console.log("");
    }
  }
  console.log(`results: ${relative(process.cwd(), file)} (${result.seconds} s, load ${machine.loadavgAtStart.join(" ")} -> ${result.machine.loadavgAtEnd.join(" ")})`);
}

await main();
