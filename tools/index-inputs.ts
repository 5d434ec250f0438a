/**
 * The inputs a story's causes need (tools/story-causes.ts), found through the log's index
 * instead of a pass over every input of the log: a transition's stimulus is its actor's
 * latest input before it, read backwards from the transition's position (the input and its
 * transitions are written together, so it is in the same block or one before); an input
 * named by a cause is looked for in the blocks around the records naming it, else found by
 * its actor and seq (the index's snapshots bracket it). The same inputs as the pass finds.
 */
import { causeId } from "../log/cause-id.js";
import type { LogIndex } from "../log/log-index.js";
import type { InputRecord, LogRecord, TransitionRecord } from "../log/types.js";
import { stimulusId, type Found, type InputFinder } from "./story-causes.js";

/** Blocks each side of a record naming a cause that are searched before the exact, slower lookup. */
const NEAR_BLOCKS = 2;
const CACHED_BLOCKS = 64;

export class IndexInputFinder implements InputFinder {
  private readonly positions = new Map<LogRecord, number>();
  private readonly cache = new Map<number, readonly LogRecord[]>();
  /** The inputs found so far, by stimulus id: a cause is often a transition's stimulus found already. */
  private readonly inputs = new Map<string, InputRecord>();

  /** `known`: records of the log with their positions (the key's, from `index.keyRecords`). */
  constructor(private readonly index: LogIndex, known: readonly { record: LogRecord; position: number }[]) {
    for (const { record, position } of known) {
      if (record.kind === "input") this.remember(record, position);
      else this.positions.set(record, position);
    }
  }

  async find(transitions: readonly TransitionRecord[], ids: ReadonlySet<string>): Promise<Found> {
    const found: Found = { byId: new Map(), stimulusOf: new Map() };
    for (const t of transitions) {
      const position = this.positions.get(t);
      if (position === undefined) throw new Error(`a transition of ${t.actor} #${t.seq} not read through the index`);
      const stimulus = await this.latestInputBefore(t.actor, position);
      if (stimulus === undefined) continue;
      const id = stimulusId(stimulus.actor, stimulus.seq);
      found.byId.set(id, stimulus);
      found.stimulusOf.set(stimulusId(t.actor, t.seq), id);
    }
    const naming = new Map<string, number[]>();
    for (const [record, position] of this.positions) {
      const id = record.kind === "input" ? causeId(record) : undefined;
      if (id !== undefined && ids.has(id)) naming.set(id, [...(naming.get(id) ?? []), position]);
    }
    for (const id of ids) {
      const at = id.lastIndexOf(":");
      const actor = id.slice(0, at);
      const seq = Number(id.slice(at + 1));
      if (at <= 0 || !Number.isSafeInteger(seq)) continue;
      const input = this.inputs.get(id) ?? (await this.near(actor, seq, naming.get(id) ?? [])) ?? (await this.exact(actor, seq));
      if (input !== undefined) found.byId.set(id, input);
    }
    return found;
  }

  /** `actor`'s last input before `position`. */
  private async latestInputBefore(actor: string, position: number): Promise<InputRecord | undefined> {
    for (let b = this.index.blockOf(Math.max(0, position - 1)); b >= 0; b--) {
      const records = await this.block(b);
      const first = this.index.firstPositionOf(b);
      for (let i = Math.min(records.length, position - first) - 1; i >= 0; i--) {
        const r = records[i]!;
        if (r.actor === actor && r.kind === "input") return this.remember(r, first + i);
      }
    }
    return undefined;
  }

  /** `actor`'s input #seq, if it is in the blocks around `positions`. */
  private async near(actor: string, seq: number, positions: number[]): Promise<InputRecord | undefined> {
    for (const position of positions) {
      const middle = this.index.blockOf(position);
      for (let b = Math.max(0, middle - NEAR_BLOCKS); b <= Math.min(this.index.blockCount - 1, middle + NEAR_BLOCKS); b++) {
        const records = await this.block(b);
        const i = records.findIndex((r) => r.actor === actor && r.seq === seq);
        if (i >= 0) return records[i]!.kind === "input" ? this.remember(records[i] as InputRecord, this.index.firstPositionOf(b) + i) : undefined;
      }
    }
    return undefined;
  }

  private async exact(actor: string, seq: number): Promise<InputRecord | undefined> {
    const after = await this.index.positionOf(actor, seq);
    if (after <= 0) return undefined;
    const record = await this.index.recordAt(after - 1);
    return record?.kind === "input" ? this.remember(record, after - 1) : undefined;
  }

  private remember(record: InputRecord, position: number): InputRecord {
    this.positions.set(record, position);
    this.inputs.set(stimulusId(record.actor, record.seq), record);
    return record;
  }

  private async block(b: number): Promise<readonly LogRecord[]> {
    let records = this.cache.get(b);
    if (records === undefined) {
      records = await this.index.blockRecords(b);
      if (this.cache.size >= CACHED_BLOCKS) this.cache.delete(this.cache.keys().next().value!);
      this.cache.set(b, records);
    }
    return records;
  }
}
