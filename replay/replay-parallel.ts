/**
 * Replaying a log file on several threads: each actor's replay depends on its own records
 * only, so the actors are split into parts (the scheduler in part 0, on the calling
 * thread; the other actors spread over the other parts, each on a replay thread) and
 * every part reads the file itself, taking only its actors' lines (see ScanShare in
 * replay-scan.ts: each line is checked by exactly one part, so every problem is reported
 * once, with its line). The parts' outcomes are plain data, merged by replay.ts into the
 * same result a single pass gives: problems in line order, actors in the order they
 * first appear.
 *
 * Threads are started on first use and kept (unreferenced, so they never hold the process
 * open) for later replays. A part whose thread cannot start or dies is replayed on the
 * calling thread instead; a log the split cannot place (ScanShare.misplaced) is replayed
 * in one pass.
 */
import { readFileSync } from "node:fs";
import { availableParallelism, loadavg } from "node:os";
import { Worker } from "node:worker_threads";
import type { ActorRun } from "./replay-actor.js";
import { ReplayEngine } from "./replay-engine.js";
import { scanLogFile, type ScanShare } from "./replay-scan.js";
import type { ActorReplay, ReplayProblem } from "./replay-types.js";
import { schedulerStateView, workerCoreView, type SchedulerStateView, type WorkerCoreView } from "./state-view.js";
import { threadSource } from "../log/thread-source.js";

/** Below this size a log is replayed in one pass: a thread's start costs more than it saves. */
export const PARALLEL_MIN_BYTES = 8 * 1024 * 1024;

/** What replay.ts needs of one replayed actor. */
export interface RunOutcome {
  name: string;
  /** Where the actor first appears: the order of actors in the merged result. */
  firstLine: number;
  summary: ActorReplay;
  /** The view of its core (none if it never started). */
  view: { scheduler: SchedulerStateView } | { worker: string; view: WorkerCoreView } | null;
  /** The log ends in the middle of one of its inputs. */
  truncated?: ReplayProblem;
}

export interface PartOutcome {
  /** Problems found while reading, each with its line, in line order. */
  problems: ReplayProblem[];
  records: number;
  lastT: number | null;
  runs: RunOutcome[];
  /** Its actors whose latest start record has no stop record after it, with that start's seq. */
  open: [string, number][];
  /** The part cannot be replayed apart from the others (see ScanShare.misplaced). */
  misplaced?: string;
  /** Replayed on a replay thread (not on the caller's). */
  onThread?: boolean;
}

/** The part that replays `actor`'s records, of `parts`. */
export function partOf(actor: string, parts: number): number {
  if (parts <= 1 || actor === "scheduler") return 0;
  if (parts === 2) return 1;
  let hash = 0x811c9dc5;
  for (let i = 0; i < actor.length; i++) hash = Math.imul(hash ^ actor.charCodeAt(i), 0x01000193);
  return 1 + ((hash >>> 0) % (parts - 1));
}

/**
 * Parts to split a log of `bytes` into when the caller does not say: 1 for small logs, on a
 * single core, or when the cores are busy (other work within half a core of their number:
 * a second thread then finds no free core and only adds its ~10% of extra reading).
 */
export function defaultParts(bytes: number): number {
  if (bytes < PARALLEL_MIN_BYTES) return 1;
  const cores = availableParallelism();
  if (cores < 2 || busyCores() > cores - 0.5) return 1;
  return Math.min(cores, 4);
}

/**
 * How many cores other work keeps busy now: the threads the kernel counts as runnable
 * (/proc/loadavg's fourth field, this one included, so one less), the median of five
 * samples a millisecond apart. The 1-minute load average lags: for a minute after a burst
 * it reads busy on idle cores (a benchmark's replay right after heavy cases would take an
 * idle machine for a busy one and replay on one thread). Without /proc, the load average.
 */
export function busyCores(): number {
  try {
    const nap = new Int32Array(new SharedArrayBuffer(4));
    const samples: number[] = [];
    for (let i = 0; i < 5; i++) {
      if (i > 0) Atomics.wait(nap, 0, 0, 1);
      const running = Number(readFileSync("/proc/loadavg", "latin1").split(" ")[3]?.split("/")[0]);
      if (!Number.isInteger(running) || running < 1) return loadavg()[0]!;
      samples.push(running - 1);
    }
    samples.sort((a, b) => a - b);
    return samples[2]!;
  } catch {
    return loadavg()[0]!;
  }
}

/** Replays part `part` of `parts` of the log at `path` on this thread. */
export async function replayPart(path: string, part: number, parts: number): Promise<PartOutcome> {
  const engine = new ReplayEngine({});
  const share: ScanShare = { part, takes: (actor) => partOf(actor, parts) === part, firstLines: new Map() };
  await scanLogFile(path, engine, share);
  if (share.misplaced !== undefined) return { problems: [], records: 0, lastT: null, runs: [], open: [], misplaced: share.misplaced };
  const problems = engine.problems.slice();
  engine.finish(false, true);
  const truncated = new Map<string, ReplayProblem>();
  for (const problem of engine.problems.slice(problems.length)) truncated.set(problem.actor!, problem);
  const runs: RunOutcome[] = [];
  for (const run of engine.runs.values()) {
    const outcome: RunOutcome = {
      name: run.name,
      firstLine: share.firstLines.get(run.name) ?? Number.MAX_SAFE_INTEGER,
      summary: { ...run.summary, sent: run.sentCounts() },
      view: runView(run),
    };
    const cut = truncated.get(run.name);
    if (cut !== undefined) outcome.truncated = cut;
    runs.push(outcome);
  }
  return { problems, records: engine.records, lastT: engine.lastT, runs, open: [...engine.open] };
}

/** The state view of a replayed actor's core, as replay.ts shows it. */
export function runView(run: ActorRun): RunOutcome["view"] {
  const host = run.host;
  if (host === null) return null;
  const diverged = run.summary.divergence !== undefined;
  if (host.role === "scheduler") return { scheduler: schedulerStateView(run.name, host.core, diverged) };
  if (host.role === "client") return null;
  return { worker: host.core.init.name, view: workerCoreView(run.name, host.core, run.summary.stopped, diverged) };
}

/**
 * Replays the log at `path` in `parts` parts, part 0 here and the others on replay threads.
 * Undefined if it must be replayed in one pass instead (ScanShare.misplaced).
 */
export async function replayInParts(path: string, parts: number): Promise<PartOutcome[] | undefined> {
  const pool = ReplayThreads.shared();
  const others: Promise<PartOutcome | undefined>[] = [];
  for (let part = 1; part < parts; part++) others.push(pool.run(part - 1, { path, part, parts }));
  const outcomes: PartOutcome[] = [await replayPart(path, 0, parts)];
  for (let part = 1; part < parts; part++) {
    // A part whose thread failed is replayed here.
    const outcome = await others[part - 1]!;
    if (outcome !== undefined) outcome.onThread = true;
    outcomes.push(outcome ?? (await replayPart(path, part, parts)));
  }
  return outcomes.some((o) => o.misplaced !== undefined) ? undefined : outcomes;
}

// ---- the replay threads ---------------------------------------------------------------------

interface Job {
  path: string;
  part: number;
  parts: number;
}

type Reply = { id: number; outcome: PartOutcome } | { id: number; error: string };


class ReplayThread {
  private readonly worker: Worker;
  private readonly pending = new Map<number, (outcome: PartOutcome | undefined) => void>();
  private nextId = 1;
  dead = false;

  constructor(source: string) {
    this.worker = new Worker(source, { eval: true, name: "natsched replay" });
    this.worker.unref();
    this.worker.on("message", (reply: Reply) => {
      const done = this.pending.get(reply.id);
      if (done === undefined) return;
      this.pending.delete(reply.id);
      if (this.pending.size === 0) this.worker.unref();
      done("outcome" in reply ? reply.outcome : undefined);
    });
    this.worker.on("error", () => this.die());
    this.worker.on("exit", () => this.die());
  }

  run(job: Job): Promise<PartOutcome | undefined> {
    if (this.dead) return Promise.resolve(undefined);
    const id = this.nextId++;
    return new Promise((resolve) => {
      this.pending.set(id, resolve);
      this.worker.ref();
      this.worker.postMessage({ id, ...job });
    });
  }

  private die(): void {
    this.dead = true;
    for (const done of this.pending.values()) done(undefined);
    this.pending.clear();
  }
}

/** The process's replay threads, started on first use. */
class ReplayThreads {
  private static current: ReplayThreads | undefined;

  static shared(): ReplayThreads {
    return (ReplayThreads.current ??= new ReplayThreads());
  }

  private readonly threads: ReplayThread[] = [];
  /** Threads failed to start here (e.g. no loader for TypeScript sources): parts run on the caller's thread. */
  private broken = false;

  async run(index: number, job: Job): Promise<PartOutcome | undefined> {
    if (this.broken) return undefined;
    let thread = this.threads[index];
    if (thread === undefined || thread.dead) {
      try {
        this.threads[index] = thread = new ReplayThread(threadSource(import.meta.url, "replay-thread"));
      } catch {
        this.broken = true;
        return undefined;
      }
    }
    const outcome = await thread.run(job);
    if (outcome === undefined && thread.dead) this.broken = true;
    return outcome;
  }
}
