import { Worker, type ResourceLimits } from "node:worker_threads";
import { ClosedError } from "../../machines/errors.js";
import { ExecutorLost } from "./executor-lost.js";
import { threadHooks } from "./thread-hooks.js";
import { THREAD_SOURCE } from "./thread-source.js";

export interface ThreadPoolOptions {
  /** Threads, started at once and kept warm: the worker's nthreads. */
  size: number;
  /** Module URLs every thread imports once. */
  modules: readonly string[];
  /** Per-thread limits (heap sizes), Node's own. */
  resourceLimits?: ResourceLimits;
}

interface Job {
  key: string;
  module: string;
  func: string;
  args: unknown[];
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

interface Slot {
  thread: Worker;
  job: Job | null;
  /** Terminated or crashed: takes no job, and is replaced once its thread exited. */
  dead: boolean;
}

/**
 * Executor threads for module functions (node:worker_threads; no pool package: natsched's
 * dependencies stay xstate, @nats-io/*, immer). One job per thread at a time; jobs beyond the
 * free threads wait in order. Arguments are copied in (structured clone: the worker's store
 * keeps its own), results move back by transfer. A thread that dies fails its job with
 * ExecutorLost and is replaced.
 */
export class ThreadPool {
  private readonly slots: Slot[] = [];
  private readonly waiting: Job[] = [];
  private nextId = 0;
  private readonly running = new Map<number, Slot>();
  private closed = false;
  private readonly hooks = threadHooks();

  constructor(private readonly opts: ThreadPoolOptions) {
    for (let i = 0; i < opts.size; i++) this.slots.push(this.spawn());
  }

  /** Jobs running now. */
  get busy(): number {
    return this.running.size;
  }

  /** Runs `module`'s export `func` on a thread; settles with its result or its error. */
  run(key: string, module: string, func: string, args: unknown[]): Promise<unknown> {
    if (this.closed) return Promise.reject(new ClosedError("executor pool"));
    return new Promise((resolve, reject) => {
      this.waiting.push({ key, module, func, args, resolve, reject });
      this.dispatch();
    });
  }

  /**
   * Stops the job of task `key`: a waiting one is dropped, a running one's thread is
   * terminated and replaced. Its promise rejects with `reason`. False if no job has that key.
   */
  stop(key: string, reason: unknown): boolean {
    const queued = this.waiting.findIndex((job) => job.key === key);
    if (queued >= 0) {
      this.waiting.splice(queued, 1)[0]!.reject(reason);
      return true;
    }
    const slot = this.slots.find((s) => s.job?.key === key);
    if (slot === undefined) return false;
    slot.dead = true;
    this.fail(slot, reason);
    void slot.thread.terminate();
    return true;
  }

  /** Terminates every thread; jobs not finished reject with ClosedError. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const error = new ClosedError("executor pool");
    for (const job of this.waiting.splice(0)) job.reject(error);
    for (const slot of this.slots) if (slot.job !== null) this.fail(slot, error);
    await Promise.all(this.slots.map((slot) => slot.thread.terminate()));
  }

  private spawn(): Slot {
    const thread = new Worker(THREAD_SOURCE, {
      eval: true,
      workerData: { modules: this.opts.modules, hooks: this.hooks },
      ...(this.opts.resourceLimits !== undefined ? { resourceLimits: this.opts.resourceLimits } : {}),
    });
    // The threads never keep a process alive: the worker's connection does, or nothing should.
    thread.unref();
    const slot: Slot = { thread, job: null, dead: false };
    thread.on("message", (message: { id: number; ok: boolean; value?: unknown; error?: ThreadError }) => {
      const owner = this.running.get(message.id);
      if (owner !== slot || slot.job === null) return;
      const job = slot.job;
      this.running.delete(message.id);
      slot.job = null;
      if (message.ok) job.resolve(message.value);
      else job.reject(rebuildError(message.error!));
      this.dispatch();
    });
    thread.on("error", (error) => {
      slot.dead = true;
      this.fail(slot, new ExecutorLost(`executor thread died: ${error.message}`));
    });
    thread.on("exit", (code) => {
      slot.dead = true;
      this.fail(slot, new ExecutorLost(`executor thread exited (code ${code})`));
      this.replace(slot);
    });
    return slot;
  }

  /** A dead slot's thread is replaced by a new one, if the pool is still open. */
  private replace(slot: Slot): void {
    const index = this.slots.indexOf(slot);
    if (index < 0 || this.closed) return;
    this.slots[index] = this.spawn();
    this.dispatch();
  }

  private fail(slot: Slot, error: unknown): void {
    const job = slot.job;
    if (job === null) return;
    slot.job = null;
    for (const [id, owner] of this.running) if (owner === slot) this.running.delete(id);
    job.reject(error);
  }

  private dispatch(): void {
    while (this.waiting.length > 0) {
      const slot = this.slots.find((s) => s.job === null && !s.dead);
      if (slot === undefined) return;
      const job = this.waiting.shift()!;
      const id = this.nextId++;
      try {
        slot.thread.postMessage({ id, module: job.module, func: job.func, args: job.args });
      } catch (error) {
        job.reject(error);
        continue;
      }
      slot.job = job;
      this.running.set(id, slot);
    }
  }
}

interface ThreadError {
  name: string;
  message: string;
  code?: string;
  stack?: string;
}

/** The thread's error as an Error of this thread, with the thread's stack (where the function raised). */
function rebuildError(info: ThreadError): Error {
  const error = new Error(info.message) as Error & { code?: string };
  error.name = info.name;
  if (info.code !== undefined) error.code = info.code;
  if (info.stack !== undefined) error.stack = info.stack;
  return error;
}
