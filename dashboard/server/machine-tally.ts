/**
 * Transition records counted per machine: where each instance (an actor's task, worker,
 * future...) last went, and how often each (from, event, to) was taken.
 */
import type { TransitionRecord } from "../../log/types.js";

export interface MachineTallyOf {
  /** Instance (actor and id) -> its state after its last transition. */
  readonly at: Map<string, string>;
  /** "from\tevent\tto" -> times taken. */
  readonly taken: Map<string, number>;
}

export const edgeKey = (from: string, event: string, to: string): string => `${from}\t${event}\t${to}`;

export class MachineTally {
  private readonly machines = new Map<string, MachineTallyOf>();

  add(record: TransitionRecord): void {
    let tally = this.machines.get(record.machine);
    if (tally === undefined) this.machines.set(record.machine, (tally = { at: new Map(), taken: new Map() }));
    tally.at.set(`${record.actor}\t${record.id}`, record.to);
    const edge = edgeKey(record.from, record.event, record.to);
    tally.taken.set(edge, (tally.taken.get(edge) ?? 0) + 1);
  }

  of(machine: string): MachineTallyOf {
    return this.machines.get(machine) ?? { at: new Map(), taken: new Map() };
  }

  /** Instances of `machine` in each state. */
  counts(machine: string): Map<string, number> {
    const counts = new Map<string, number>();
    for (const state of this.of(machine).at.values()) counts.set(state, (counts.get(state) ?? 0) + 1);
    return counts;
  }
}
