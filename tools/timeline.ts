/**
 * Step through a log forwards and backwards and look at every machine instance at any
 * record: the "inspect at any step" view, built from the log alone (no cores re-run, so it
 * also works on a log that does not replay).
 *
 * Each transition is a per-entity immer update whose patches are kept; seeking applies
 * them, or their inverses going back, so a step costs the size of one entity, never a copy
 * of the whole registry.
 */
import { applyPatches, enablePatches, produceWithPatches, type Patch } from "immer";
import { BadOptionError } from "../machines/errors.js";
import type { LogRecord, TransitionRecord } from "../log/types.js";
import type { LoggedWhy } from "../machines/reasons.js";

enablePatches();

/** One machine instance (a task on the scheduler, a task on a worker, a worker, the scheduler) as of a step. */
export interface EntityView {
  readonly actor: string;
  /** "task", "wtask", "worker" or "scheduler" (TransitionRecord.machine). */
  readonly machine: string;
  readonly id: string;
  readonly state: string;
  /** The event of its last transition, its time and the actor's sequence number of it. */
  readonly event: string;
  readonly t: number;
  readonly seq: number;
  /** Transitions it made up to this step. */
  readonly transitions: number;
  /** The reasons recorded with its last transition, if any. */
  readonly why?: LoggedWhy;
}

interface Step {
  entity: string;
  patches: Patch[];
  inverse: Patch[];
  created: boolean;
}

export class Timeline {
  private readonly entities = new Map<string, EntityView>();
  /** Per record: the entity update it made (null for inputs, starts and stops). */
  private readonly steps: (Step | null)[] = [];
  private pos = 0;

  private constructor(private readonly records: readonly LogRecord[]) {
    for (const record of records) this.steps.push(record.kind === "transition" ? this.apply(record) : null);
    this.pos = records.length;
  }

  /** Records in log order (as a reader returns them); the timeline starts at the end. */
  static fromRecords(records: readonly LogRecord[]): Timeline {
    return new Timeline(records);
  }

  get length(): number {
    return this.records.length;
  }

  /** How many records are applied: 0 is before the first, `length` after the last. */
  get position(): number {
    return this.pos;
  }

  /** The record applied last (undefined at position 0). */
  get current(): LogRecord | undefined {
    return this.records[this.pos - 1];
  }

  record(index: number): LogRecord | undefined {
    return this.records[index];
  }

  /** Move to `position` (clamped to 0..length), applying or undoing the records in between. */
  seek(position: number): this {
    if (!Number.isInteger(position)) throw new BadOptionError("position", `expected a whole number, got ${position}`);
    const target = Math.max(0, Math.min(this.records.length, position));
    while (this.pos < target) this.redo(this.steps[this.pos++]!);
    while (this.pos > target) this.undo(this.steps[--this.pos]!);
    return this;
  }

  step(by = 1): this {
    return this.seek(this.pos + by);
  }

  /** The position just after the last record with `t <= time`. */
  positionAtTime(time: number): number {
    let position = 0;
    for (let i = 0; i < this.records.length; i++) if (this.records[i]!.t <= time) position = i + 1;
    return position;
  }

  /** The position just after `actor`'s record number `seq` (-1 if the log has none). */
  positionOf(actor: string, seq: number): number {
    const index = this.records.findIndex((r) => r.actor === actor && r.seq === seq);
    return index < 0 ? -1 : index + 1;
  }

  entity(actor: string, machine: string, id: string): EntityView | undefined {
    return this.entities.get(entityKey(actor, machine, id));
  }

  /** Every instance known at this step, optionally only those of one actor and machine. */
  list(filter: { actor?: string; machine?: string; id?: string } = {}): EntityView[] {
    const out: EntityView[] = [];
    for (const view of this.entities.values()) {
      if (filter.actor !== undefined && view.actor !== filter.actor) continue;
      if (filter.machine !== undefined && view.machine !== filter.machine) continue;
      if (filter.id !== undefined && view.id !== filter.id) continue;
      out.push(view);
    }
    return out;
  }

  /** How many instances of `machine` on `actor` are in each state at this step. */
  countByState(actor: string, machine: string): Record<string, number> {
    const counts: Record<string, number> = {};
    for (const view of this.entities.values()) {
      if (view.actor === actor && view.machine === machine) counts[view.state] = (counts[view.state] ?? 0) + 1;
    }
    return counts;
  }

  private apply(record: TransitionRecord): Step {
    const key = entityKey(record.actor, record.machine, record.id);
    const before = this.entities.get(key);
    const base: Partial<EntityView> = before ?? {};
    const [after, patches, inverse] = produceWithPatches(base, (draft: Partial<Record<keyof EntityView, unknown>>) => {
      if (before === undefined) {
        draft.actor = record.actor;
        draft.machine = record.machine;
        draft.id = record.id;
        draft.transitions = 0;
      }
      draft.state = record.to;
      draft.event = record.event;
      draft.t = record.t;
      draft.seq = record.seq;
      draft.transitions = (draft.transitions as number) + 1;
      if (record.why !== undefined) draft.why = record.why;
      else delete draft.why;
    });
    this.entities.set(key, after as EntityView);
    return { entity: key, patches, inverse, created: before === undefined };
  }

  private redo(step: Step | null): void {
    if (step === null) return;
    const base = this.entities.get(step.entity) ?? {};
    this.entities.set(step.entity, applyPatches(base, step.patches) as EntityView);
  }

  private undo(step: Step | null): void {
    if (step === null) return;
    if (step.created) {
      this.entities.delete(step.entity);
      return;
    }
    this.entities.set(step.entity, applyPatches(this.entities.get(step.entity)!, step.inverse));
  }
}

function entityKey(actor: string, machine: string, id: string): string {
  return `${actor}\u0000${machine}\u0000${id}`;
}
