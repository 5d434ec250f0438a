/**
 * The task stream on the wire: columns of small integers and a table of strings, so a
 * 100,000-bar stream is one JSON document the browser parses in tens of milliseconds and
 * decodes without a string per number. Times are whole microseconds; bar starts are sent
 * sorted, as differences from the bar before. No imports: the page bundles this file.
 */
import type { BarOutcome, StealOutcome, StreamBar, StreamDeath, StreamSteal, StreamTransfer, StreamWorker, TaskStream } from "./task-stream-types.js";

export const TASK_STREAM_WIRE_VERSION = 1;

const OUTCOMES: readonly BarOutcome[] = ["ok", "erred", "cancelled", "lost", "running"];
const STEAL_OUTCOMES: readonly StealOutcome[] = ["confirmed", "rejected", "aborted", "pending"];
const US = 1e6;

export interface TaskStreamWire {
  v: number;
  runStart: number;
  /** Microseconds. */
  end: number;
  workers: StreamWorker[];
  /** Keys, prefixes and worker names are indices into this table (a key may stand in it more than once). */
  strings: string[];
  bars: {
    key: number[];
    prefix: number[];
    worker: number[];
    lane: number[];
    /** Microseconds from the previous bar's start (the first: from the run's start). */
    startDelta: number[];
    duration: number[];
    /** Index into OUTCOMES. */
    outcome: number[];
  };
  /** [key, from, to, start µs, duration µs, bytes (-1: none)] per transfer, flattened. */
  transfers: number[];
  /** [key, victim, thief, t µs, end µs (-1: none), outcome] per steal, flattened. */
  steals: number[];
  deaths: StreamDeath[];
}

class StringTable {
  readonly list: string[] = [];
  private readonly index = new Map<string, number>();
  id(s: string): number {
    let i = this.index.get(s);
    if (i === undefined) {
      i = this.list.push(s) - 1;
      this.index.set(s, i);
    }
    return i;
  }
  /** `s` as an entry of its own: for bar keys, nearly all distinct, whose look-up would cost more than the rare repeat. */
  add(s: string): number {
    return this.list.push(s) - 1;
  }
}

const us = (seconds: number): number => Math.round(seconds * US);

export function encodeTaskStream(stream: TaskStream): TaskStreamWire {
  const strings = new StringTable();
  const sorted = [...stream.bars].sort((a, b) => a.start - b.start);
  const n = sorted.length;
  const bars: TaskStreamWire["bars"] = { key: new Array(n), prefix: new Array(n), worker: new Array(n), lane: new Array(n), startDelta: new Array(n), duration: new Array(n), outcome: new Array(n) };
  let previous = 0;
  for (let i = 0; i < n; i++) {
    const bar = sorted[i]!;
    const start = us(bar.start);
    bars.key[i] = strings.add(bar.key);
    bars.prefix[i] = strings.id(bar.prefix);
    bars.worker[i] = strings.id(bar.worker);
    bars.lane[i] = bar.lane;
    bars.startDelta[i] = start - previous;
    bars.duration[i] = us(bar.end) - start;
    bars.outcome[i] = OUTCOMES.indexOf(bar.outcome);
    previous = start;
  }
  const transfers: number[] = [];
  for (const x of stream.transfers) {
    const start = us(x.start);
    transfers.push(strings.id(x.key), strings.id(x.from), strings.id(x.to), start, us(x.end) - start, x.bytes ?? -1);
  }
  const steals: number[] = [];
  for (const s of stream.steals) {
    steals.push(strings.id(s.key), strings.id(s.victim), strings.id(s.thief), us(s.t), s.end === undefined ? -1 : us(s.end), STEAL_OUTCOMES.indexOf(s.outcome));
  }
  return { v: TASK_STREAM_WIRE_VERSION, runStart: stream.runStart, end: us(stream.end), workers: stream.workers, strings: strings.list, bars, transfers, steals, deaths: stream.deaths };
}

/** The wire form back as a TaskStream; a clear error for anything that is not one. */
export function decodeTaskStream(wire: TaskStreamWire): TaskStream {
  if (typeof wire !== "object" || wire === null || wire.v !== TASK_STREAM_WIRE_VERSION) {
    throw new TypeError(`not a task stream of wire version ${TASK_STREAM_WIRE_VERSION} (got version ${String((wire as { v?: unknown } | null)?.v)})`);
  }
  const { strings, bars: b } = wire;
  const n = b.key.length;
  const bars: StreamBar[] = new Array(n);
  let start = 0;
  for (let i = 0; i < n; i++) {
    start += b.startDelta[i]!;
    bars[i] = {
      key: strings[b.key[i]!]!,
      prefix: strings[b.prefix[i]!]!,
      worker: strings[b.worker[i]!]!,
      lane: b.lane[i]!,
      start: start / US,
      end: (start + b.duration[i]!) / US,
      outcome: OUTCOMES[b.outcome[i]!] ?? "ok",
    };
  }
  const transfers: StreamTransfer[] = [];
  for (let i = 0; i + 5 < wire.transfers.length; i += 6) {
    const [key, from, to, s, d, bytes] = wire.transfers.slice(i, i + 6) as [number, number, number, number, number, number];
    const x: StreamTransfer = { key: strings[key]!, from: strings[from]!, to: strings[to]!, start: s / US, end: (s + d) / US };
    if (bytes >= 0) x.bytes = bytes;
    transfers.push(x);
  }
  const steals: StreamSteal[] = [];
  for (let i = 0; i + 5 < wire.steals.length; i += 6) {
    const [key, victim, thief, t, end, outcome] = wire.steals.slice(i, i + 6) as [number, number, number, number, number, number];
    const s: StreamSteal = { key: strings[key]!, victim: strings[victim]!, thief: strings[thief]!, t: t / US, outcome: STEAL_OUTCOMES[outcome] ?? "pending" };
    if (end >= 0) s.end = end / US;
    steals.push(s);
  }
  return { runStart: wire.runStart, end: wire.end / US, workers: wire.workers, bars, transfers, steals, deaths: wire.deaths };
}
