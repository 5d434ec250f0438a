/**
 * The causes of a story's steps (docs/log-format.md, "Causes"). A transition's stimulus is
 * its actor's latest input before it (the per-actor sequence fixes which); an input that is a
 * message names its sender's stimulus in `event.cause` (the sender's seq; log/cause-id.ts). Those inputs rarely name the key (a
 * worker-lost, a client-leave), so they are found in the log by id: one pass over its inputs
 * for the stimuli, and one more, when needed, for scheduler inputs they name as their cause.
 */
import { causeId } from "../log/cause-id.js";
import type { RecordFilter } from "../log/record-filter.js";
import type { InputRecord, LogRecord, TransitionRecord } from "../log/types.js";
import type { StoryLine } from "./story.js";
import { stimulusWords, transitionCause, type KeyHistory } from "./story-cause-words.js";

/** Where the inputs are read from: a log reader, or records in memory (`recordsSource`). */
export interface RecordSource {
  records(filter?: RecordFilter): AsyncIterable<LogRecord>;
}

/** Finds the inputs `addCauses` needs without a pass over the log (through its index: tools/index-inputs.ts). */
export interface InputFinder {
  /** Each transition's stimulus (its actor's latest input before it) and the inputs whose stimulus ids are `ids`, as one pass over the log's inputs finds them. */
  find(transitions: readonly TransitionRecord[], ids: ReadonlySet<string>): Promise<Found>;
}

/** A story line with its cause: the stimulus's id (`actor:seq`) and the cause in words. */
export interface CausedStoryLine extends StoryLine {
  stimulus?: string;
  cause?: string;
}

const INPUTS: RecordFilter = { kinds: ["input"] };

export const stimulusId = (actor: string, seq: number): string => `${actor}:${seq}`;

/** The stimulus id an input's `cause` names (log/cause-id.ts). */
const causeOf = causeId;

export function recordsSource(records: readonly LogRecord[]): RecordSource {
  return {
    async *records(filter?: RecordFilter) {
      for (const r of records) if (filter?.kinds === undefined || filter.kinds.includes(r.kind)) yield r;
    },
  };
}

/**
 * Gives each line of `storyLines(keyRecords, key)` its cause: `stimulus`, and `cause` in words,
 * also put first among the line's reasons so the story shows it. `keyRecords` are the records
 * the lines were made from (in each actor's order); `source` the whole log's.
 */
export async function addCauses(lines: StoryLine[], keyRecords: readonly LogRecord[], key: string, source: RecordSource | InputFinder): Promise<CausedStoryLine[]> {
  const findInputs = (transitions: readonly TransitionRecord[], ids: ReadonlySet<string>): Promise<Found> => ("find" in source ? source.find(transitions, ids) : scanInputs(source, transitions, ids));
  const bySeq = new Map<string, LogRecord>();
  for (const r of keyRecords) bySeq.set(stimulusId(r.actor, r.seq), r);
  const transitions = keyRecords.filter((r): r is TransitionRecord => r.kind === "transition" && r.id === key);
  const wanted = new Set<string>();
  for (const r of keyRecords) if (r.kind === "input") addCause(wanted, r);
  const found = await findInputs(transitions, wanted);
  // The second pass is for what fromScheduler follows and the first did not find: rare, as
  // a worker's stimulus from the scheduler usually names the key, so it was asked for above.
  const next = new Set<string>();
  for (const input of found.byId.values()) {
    const id = causeOf(input);
    if (id !== undefined && id.startsWith("scheduler:") && !found.byId.has(id)) next.add(id);
  }
  if (next.size > 0) for (const [id, input] of (await findInputs([], next)).byId) found.byId.set(id, input);

  const history: KeyHistory = { computed: false };
  const out = lines as CausedStoryLine[];
  for (const line of out) {
    const record = bySeq.get(stimulusId(line.actor, line.seq));
    if (record === undefined) continue;
    if (record.kind === "transition") {
      const stimulusKey = found.stimulusOf.get(stimulusId(record.actor, record.seq));
      const stimulus = stimulusKey === undefined ? undefined : found.byId.get(stimulusKey);
      if (stimulus === undefined) continue;
      const upstream = fromScheduler(stimulus, found.byId);
      line.stimulus = stimulusKey;
      line.cause = `${transitionCause(record, stimulus.event, upstream?.event, history)}  [${chain(stimulus, upstream)}]`;
    } else if (record.kind === "input") {
      const id = causeOf(record);
      const sender = id === undefined ? undefined : found.byId.get(id);
      if (id === undefined) continue;
      line.stimulus = id;
      const from = id.slice(0, id.lastIndexOf(":"));
      line.cause = `sent by ${from} for: ${sender === undefined ? `its input ${id} (not in this log)` : `${stimulusWords(sender.event, key)}  [${id}]`}`;
    }
    line.reasons = [line.cause!, ...(line.reasons ?? [])];
  }
  return out;
}

function addCause(ids: Set<string>, input: InputRecord): void {
  const id = causeOf(input);
  if (id !== undefined) ids.add(id);
}

/** The scheduler's input that made it send `input` (a worker's compute-task, free-keys, ...): followed one hop. */
function fromScheduler(input: InputRecord, byId: ReadonlyMap<string, InputRecord>): InputRecord | undefined {
  const id = causeOf(input);
  if (id === undefined || !id.startsWith("scheduler:")) return undefined;
  return byId.get(id);
}

function chain(stimulus: InputRecord, upstream: InputRecord | undefined): string {
  const own = stimulusId(stimulus.actor, stimulus.seq);
  return upstream === undefined ? own : `${own} <- ${stimulusId(upstream.actor, upstream.seq)}`;
}

export interface Found {
  /** Inputs by stimulus id. */
  byId: Map<string, InputRecord>;
  /** A transition's id -> its stimulus's id. */
  stimulusOf: Map<string, string>;
}

/**
 * One pass over the log's inputs: for each transition, its actor's latest input before it;
 * and the inputs named in `ids`. Each actor's records come in its sequence order.
 */
async function scanInputs(source: RecordSource, transitions: readonly TransitionRecord[], ids: ReadonlySet<string>): Promise<Found> {
  const pending = new Map<string, number[]>();
  for (const t of transitions) {
    let seqs = pending.get(t.actor);
    if (seqs === undefined) pending.set(t.actor, (seqs = []));
    seqs.push(t.seq);
  }
  for (const seqs of pending.values()) seqs.sort((a, b) => a - b);
  const cursor = new Map<string, number>();
  const latest = new Map<string, InputRecord>();
  const found: Found = { byId: new Map(), stimulusOf: new Map() };
  const settle = (actor: string, seqs: number[], upTo: number): void => {
    let i = cursor.get(actor) ?? 0;
    const last = latest.get(actor);
    for (; i < seqs.length && seqs[i]! < upTo; i++) {
      if (last === undefined) continue;
      const id = stimulusId(actor, last.seq);
      found.byId.set(id, last);
      found.stimulusOf.set(stimulusId(actor, seqs[i]!), id);
    }
    cursor.set(actor, i);
  };
  const named = byActor(ids);
  for await (const r of source.records(INPUTS)) {
    if (r.kind !== "input") continue;
    if (named.get(r.actor)?.has(r.seq)) found.byId.set(stimulusId(r.actor, r.seq), r);
    const seqs = pending.get(r.actor);
    if (seqs === undefined) continue;
    settle(r.actor, seqs, r.seq);
    latest.set(r.actor, r);
  }
  for (const [actor, seqs] of pending) settle(actor, seqs, Infinity);
  return found;
}

/** Stimulus ids as actor -> seqs (an id is `actor:seq`; the actor may hold ':' itself). */
function byActor(ids: ReadonlySet<string>): Map<string, Set<number>> {
  const out = new Map<string, Set<number>>();
  for (const id of ids) {
    const at = id.lastIndexOf(":");
    const seq = Number(id.slice(at + 1));
    if (at <= 0 || !Number.isSafeInteger(seq)) continue;
    const actor = id.slice(0, at);
    let seqs = out.get(actor);
    if (seqs === undefined) out.set(actor, (seqs = new Set()));
    seqs.add(seq);
  }
  return out;
}
