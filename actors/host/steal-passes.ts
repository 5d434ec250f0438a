import type { SchedulerCore } from "../../machines/scheduler/core.js";
import type { SchedulerInput } from "../../machines/scheduler/inputs.js";
import type { HostTimers } from "./host-timers.js";
import { PeriodicTicks } from "./periodic-ticks.js";

/** Seconds between two on-demand stealing passes. */
export const ON_DEMAND_GAP = 0.02;

/** The scheduler host, as the stealing passes need it. */
export interface StealPassHost {
  /** The core now (the simulator replaces it on a restart). */
  readonly core: SchedulerCore;
  /** Record and feed an input (the pass is a `balance` input like any other). */
  feed(input: SchedulerInput): unknown;
  /** A periodic pass was fed: send what it produced (a message's pass goes with the message's replies). */
  passed?(): void;
}

/**
 * When the scheduler's host runs a work-stealing pass: every workStealingInterval (a timer
 * that ticks only while some task is processing: with none, no pass could move anything),
 * and on demand as soon as some workers sit idle while others have a backlog (Dask's seed:
 * "during any stage when we submit tasks to workers"), at most once per ON_DEMAND_GAP.
 */
export class StealPasses {
  private lastPass = -Infinity;
  private readonly ticks: PeriodicTicks;

  constructor(
    private readonly host: StealPassHost,
    private readonly timers: HostTimers,
    interval: number,
  ) {
    this.ticks = new PeriodicTicks(timers, interval, () => {
      this.pass(true);
      this.afterInput();
    });
  }

  /** The host handled a message (one envelope of ops): a pass if one is wanted and the gap allows. */
  afterMessage(): void {
    this.pass(false);
  }

  /** The core took an input: the periodic timer runs while some task is processing. */
  afterInput(): void {
    if (this.ticks.armed || this.host.core.stealing === null || !anyProcessing(this.host.core)) return;
    this.ticks.arm();
  }

  stop(): void {
    this.ticks.stop();
  }

  /** Periodic passes skip the on-demand gap; on-demand ones respect it. */
  private pass(periodic: boolean): void {
    const now = this.timers.now();
    if (!periodic && now - this.lastPass < ON_DEMAND_GAP) return;
    if (!this.host.core.wantsBalance()) return;
    this.lastPass = now;
    this.host.feed({ op: "balance", t: now });
    if (periodic) this.host.passed?.();
  }
}

function anyProcessing(core: SchedulerCore): boolean {
  for (const ws of core.running) if (ws.processing.size > 0) return true;
  return false;
}
