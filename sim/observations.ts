import type { SimTransfer } from "./scenario.js";

interface Runs {
  executions: number;
  worker: string;
  start: number;
  end: number;
}

/** What the simulated hosts saw happen: executions per task and data transfers. */
export class SimObservations {
  readonly transfers: SimTransfer[] = [];
  makespan = 0;
  private readonly runs = new Map<string, Runs>();

  executionStarted(key: string): void {
    const runs = this.runs.get(key);
    if (runs === undefined) this.runs.set(key, { executions: 1, worker: "", start: -1, end: -1 });
    else runs.executions += 1;
  }

  executionEnded(key: string, worker: string, start: number, end: number): void {
    const runs = this.runs.get(key)!;
    runs.worker = worker;
    runs.start = start;
    runs.end = end;
    if (end > this.makespan) this.makespan = end;
  }

  transferred(transfer: SimTransfer): void {
    this.transfers.push(transfer);
  }

  runsOf(key: string): Runs {
    return this.runs.get(key) ?? { executions: 0, worker: "", start: -1, end: -1 };
  }
}
