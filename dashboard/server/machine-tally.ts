/**
 * Transition records counted per machine: where each instance (an actor's task, worker,
 * future...) last went, and how often each (from, event, to) was taken. A long log has
 * millions of transitions, so nothing here joins strings per record: instances are kept
 * per actor, and edges are counted in nested maps.
 */
import type { TransitionRecord } from "../../log/types.js";

export interface MachineTallyOf {
  /** Actor -> instance id -> its state after its last transition. */
  readonly at: Map<string, Map<string, string>>;
  /** from -> event -> to -> times taken. */
  readonly taken: Map<string, Map<string, Map<string, number>>>;
}

const EMPTY: MachineTallyOf = { at: new Map(), taken: new Map() };

function child<K, V>(map: Map<K, V>, key: K, make: () => V): V {
  let value = map.get(key);
  if (value === undefined) map.set(key, (value = make()));
  return value;
}

export class MachineTally {
  private readonly machines = new Map<string, MachineTallyOf>();

  add(record: TransitionRecord): void {
    const tally = child(this.machines, record.machine as string, () => ({ at: new Map(), taken: new Map() }));
    child(tally.at, record.actor, () => new Map<string, string>()).set(record.id, record.to);
    const byTo = child(child(tally.taken, record.from, () => new Map<string, Map<string, number>>()), record.event, () => new Map<string, number>());
    byTo.set(record.to, (byTo.get(record.to) ?? 0) + 1);
  }

  /** Times `from -event-> to` of `machine` was taken. */
  taken(machine: string, from: string, event: string, to: string): number {
    return this.of(machine).taken.get(from)?.get(event)?.get(to) ?? 0;
  }

  /** Every edge of `machine` taken at least once. */
  edges(machine: string): { from: string; event: string; to: string; taken: number }[] {
    const out: { from: string; event: string; to: string; taken: number }[] = [];
    for (const [from, byEvent] of this.of(machine).taken) for (const [event, byTo] of byEvent) for (const [to, taken] of byTo) out.push({ from, event, to, taken });
    return out;
  }

  of(machine: string): MachineTallyOf {
    return this.machines.get(machine) ?? EMPTY;
  }

  /** Instances of `machine`, and how many are in each state. */
  counts(machine: string): { instances: number; byState: Map<string, number> } {
    const byState = new Map<string, number>();
    let instances = 0;
    for (const ids of this.of(machine).at.values()) {
      instances += ids.size;
      for (const state of ids.values()) byState.set(state, (byState.get(state) ?? 0) + 1);
    }
    return { instances, byState };
  }
}
