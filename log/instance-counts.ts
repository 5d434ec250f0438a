import type { TransitionRecord } from "./types.js";

/** One actor's machine: its instances counted by state, states in the order the log first named them. */
export interface InstanceGroup {
  actor: string;
  machine: string;
  counts: Map<string, number>;
}

/** What a snapshot of the counts holds (log/log-index.ts stores it, compressed JSON). */
export interface InstanceCountsData {
  groups: [actor: string, machine: string, counts: [state: string, count: number][]][];
  /** The state of each instance that still moves after the snapshot, by `instanceKey`. */
  live: [instance: string, state: string][];
}

/**
 * How many machine instances (an actor's task, worker, scheduler machines) are in each
 * state after a run of transition records: what `natsched inspect` prints per actor and
 * machine. Counting needs each instance's current state; an instance that makes no more
 * transitions can be `retire`d: it stays counted and its state is let go, which keeps a
 * long log's snapshots to the instances still moving.
 */
export class InstanceCounts {
  private readonly groups = new Map<string, InstanceGroup>();
  private readonly states = new Map<string, string>();

  static from(data: InstanceCountsData): InstanceCounts {
    const counts = new InstanceCounts();
    for (const [actor, machine, states] of data.groups) counts.groups.set(groupKey(actor, machine), { actor, machine, counts: new Map(states) });
    for (const [instance, state] of data.live) counts.states.set(instance, state);
    return counts;
  }

  apply(record: TransitionRecord): string {
    const gk = groupKey(record.actor, record.machine);
    let group = this.groups.get(gk);
    if (group === undefined) this.groups.set(gk, (group = { actor: record.actor, machine: record.machine, counts: new Map() }));
    const instance = instanceKey(record.actor, record.machine, record.id);
    const before = this.states.get(instance);
    if (before !== undefined) group.counts.set(before, group.counts.get(before)! - 1);
    group.counts.set(record.to, (group.counts.get(record.to) ?? 0) + 1);
    this.states.set(instance, record.to);
    return instance;
  }

  /** `instance` makes no more transitions: keep it counted, forget its state. */
  retire(instance: string): void {
    this.states.delete(instance);
  }

  /** The groups, by "actor machine"; counts include states no instance is in any more (0). */
  list(actor?: string): InstanceGroup[] {
    return [...this.groups.values()].filter((g) => actor === undefined || g.actor === actor).sort((a, b) => compare(`${a.actor} ${a.machine}`, `${b.actor} ${b.machine}`));
  }

  get liveInstances(): number {
    return this.states.size;
  }

  data(): InstanceCountsData {
    return {
      groups: [...this.groups.values()].map((g) => [g.actor, g.machine, [...g.counts]]),
      live: [...this.states],
    };
  }
}

export function instanceKey(actor: string, machine: string, id: string): string {
  return `${actor}\u0000${machine}\u0000${id}`;
}

function groupKey(actor: string, machine: string): string {
  return `${actor}\u0000${machine}`;
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
