/**
 * A worker's reports of finished tasks held back to travel together (config reportHold).
 *
 * On a wire, every report costs a message through the server, a wake-up of the scheduler,
 * and the scheduler's answer and client update: per task, when tasks are short and a worker
 * finishes them one at a time. A worker that still has tasks queued for its threads needs
 * nothing from the scheduler yet, so the report of a task nobody else waits on may wait for
 * the next one (the core says which: WorkerCore.reportMayWait), if the task ran for less than
 * the hold (a longer one's successor would not come in time). What is held goes, in order,
 * ahead of anything else the worker sends the scheduler, when the worker starts its last
 * queued task, or when the oldest has waited `seconds`. Each report says how long it
 * waited (`held`), so the round trip adaptive saturation measures leaves the hold out.
 */
import type { TaskFinishedOp, WorkerToScheduler } from "../../machines/protocol.js";
import type { HostTimers } from "./host-timers.js";

/** What the hold asks of the worker core (WorkerCore). */
export interface ReportingCore {
  readonly readyCount: number;
  reportMayWait(key: string): boolean;
}

/** Seconds: a shorter hold is left unstamped, well inside a round trip's noise. */
const MIN_STAMPED = 0.001;

export class ReportHold {
  private held: TaskFinishedOp[] = [];
  /** When each held report was held (the timers' clock, seconds), in the same order. */
  private since: number[] = [];
  /**
   * What cancels the timer, while one is set. Only drop() cancels it: a cleared Node timer
   * still wakes the event loop when it would have fired, and a worker releases far more often
   * than the hold runs out. When it fires it releases what has waited the hold, or is set
   * again for the oldest.
   */
  private cancelTimer: (() => void) | null = null;
  private readonly onTimer = (): void => {
    this.cancelTimer = null;
    if (this.since.length === 0) return;
    if (this.timers.now() >= this.since[0]! + this.seconds) this.release();
    else this.setTimer(this.since[0]! + this.seconds);
  };

  constructor(
    readonly seconds: number,
    private readonly timers: HostTimers,
    private readonly send: (op: WorkerToScheduler) => void,
  ) {}

  /**
   * The host's way to the scheduler for what its core says (every worker host: WorkerActor,
   * the simulator's SimWorker): a report that may wait is held; anything else goes after what
   * is held, so the scheduler sees the worker's ops in the order the core made them.
   */
  offer(op: WorkerToScheduler, core: ReportingCore): void {
    if (op.op === "task-finished" && op.stop - op.start < this.seconds && core.reportMayWait(op.key)) {
      this.hold(op);
      return;
    }
    this.release();
    this.send(op);
  }

  /** After each input the core handled: once it has started its last queued task, what is held goes. */
  afterInput(core: ReportingCore): void {
    if (this.held.length > 0 && core.readyCount === 0) this.release();
  }

  get size(): number {
    return this.held.length;
  }

  hold(op: TaskFinishedOp): void {
    const now = this.timers.now();
    this.held.push(op);
    this.since.push(now);
    // A timer set earlier fires no later than this one would (it was set for an older report).
    if (this.cancelTimer === null) this.setTimer(now + this.seconds);
  }

  /** Forgets what is held (a worker that stops without a word), and its timer. */
  drop(): void {
    this.cancelTimer?.();
    this.cancelTimer = null;
    this.held = [];
    this.since = [];
  }

  /** Sends what is held, oldest first, each stamped with how long it waited. */
  release(): void {
    if (this.held.length === 0) return;
    const held = this.held;
    const since = this.since;
    this.held = [];
    this.since = [];
    const now = this.timers.now();
    for (let i = 0; i < held.length; i++) {
      const waited = now - since[i]!;
      // Released within the turn that held it (its last queued task just started): no stamp.
      this.send(waited >= MIN_STAMPED ? { ...held[i]!, held: waited } : held[i]!);
    }
  }

  private setTimer(t: number): void {
    this.cancelTimer = this.timers.at(t, this.onTimer);
  }
}
