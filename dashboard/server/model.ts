/**
 * What the dashboard knows of one log: its records in log order (all of a recorded log, or
 * those written so far by a live cluster), the cluster now, the cluster at any cut, a key's
 * story and the task stream. Every time it hands out is seconds from the run's start.
 */
import type { LogIndex } from "../../log/log-index.js";
import { concernsKey } from "../../log/record-filter.js";
import { TimeBase } from "../../log/time-base.js";
import type { LogRecord } from "../../log/types.js";
import { LogCut, type CutSpec } from "../../replay/log-cut.js";
import { IndexInputFinder } from "../../tools/index-inputs.js";
import { resolveKey } from "../../tools/keys.js";
import { addCauses, recordsSource } from "../../tools/story-causes.js";
import { storyLines } from "../../tools/story.js";
import { encodeTaskStream, TaskStreamBuilder } from "../../tools/task-stream.js";
import { DashFold } from "./dash-fold.js";
import { FirstFold } from "./first-fold.js";
import type { KeptRecords } from "./log-window.js";
import type { MachineTally } from "./machine-tally.js";
import type { AtAnswer, ClusterAt, SourceInfo, Summary } from "./wire-types.js";

export type { AtAnswer, SourceInfo, Summary } from "./wire-types.js";

/** A way to name a cut: the first `index` records in log order, or a cut as replay --until takes it. */
export type DashCut = { index: number } | { spec: CutSpec };

/**
 * Records a live model keeps for stories: the latest ones, as a cluster may run for days
 * (a story of an older key shows what is left of it and says so).
 */
export const LIVE_RECORDS = 50_000;

/**
 * Where a live model that keeps no records finds them when a view asks: a followed log
 * file (log-window.ts). The latest LIVE_RECORDS or more; the machines of the records since
 * the window's start at the first ask, carried on (`dropped` before them).
 */
export interface RecordWindow {
  kept(): Promise<KeptRecords>;
  machines(): Promise<{ tally: MachineTally; records: number; dropped: number }>;
}

/**
 * Records between the scrubber's checkpoints: a copy of the fold taken when the scrubber's
 * fold first passes each multiple (a copy costs about what folding 50,000 records does, so
 * reading the log takes none), and a move back folds on from the latest one before the cut.
 */
const CHECKPOINT_RECORDS = 1 << 17;

/** What a recorded log's opening view is before the log is read: its summary and task stream from the dashboard's cache (open-cache.ts). */
export interface OpeningView {
  summary: Summary;
  /** The task stream in its wire form, as JSON text (served as it is). */
  streamJson: string;
}

export class DashboardModel {
  /** In log order; a live model drops the oldest beyond LIVE_RECORDS, and one with a window keeps none. */
  private records: LogRecord[] = [];
  private window: RecordWindow | undefined;
  /** The window's records as last read, while no record has come since. */
  private windowRead: { count: number; kept: Promise<KeptRecords> } | undefined;
  /** Records taken in all, and of them dropped. */
  private count = 0;
  private dropped = 0;
  /**
   * The summary's fold of every record taken. Live, FirstFold (the same view, tested byte
   * for byte, at about half the cost a record): the live dashboard's thread shares the
   * machine with the cluster it watches. A recorded log keeps DashFold, which the
   * scrubber's checkpoints clone.
   */
  private readonly fold: { add(record: LogRecord): void; view(): ClusterAt; keys(): Iterable<string> };
  /** A first pass's fold (first-fold.ts: the summary's view and nothing else), until it is done. */
  private first: FirstFold | undefined;
  private builder = new TaskStreamBuilder();
  /** The latest record's time (the records may not be kept: a first pass keeps none). */
  private lastT: number | undefined;
  private time: TimeBase;
  /** The fold of the last `at` by index over `records`, to step forward from without starting over. */
  private stepFold: { records: readonly LogRecord[]; index: number; fold: DashFold } | undefined;
  private readonly listeners = new Set<(now: boolean) => void>();
  /** Folds after every CHECKPOINT_RECORDS records, in order, taken as the scrubber passes them. */
  private readonly checkpoints: DashFold[] = [];
  /** Set while a recorded log is read in the background: how many records it has, if known. */
  private reading: { of?: number } | undefined;
  private doneReading: Promise<void> = Promise.resolve();
  private finishReading: () => void = () => {};
  /** The opening view from the cache, served while the log is read. */
  private opening: OpeningView | undefined;
  /** A recorded log's task stream as JSON text, made once. */
  private streamText: string | undefined;
  private index: LogIndex | undefined;
  private markStreamServed: () => void = () => {};
  /** Resolves when the whole log's task stream is first served from the opening view (a page has drawn it, or is about to). */
  readonly streamServed = new Promise<void>((resolve) => (this.markStreamServed = resolve));

  constructor(
    readonly source: SourceInfo,
    /** The log header's `created` (ms), which says whether `t` is wall-clock time. */
    private readonly createdMs?: number,
    /** Records between the scrubber's checkpoints (tests take fewer). */
    private readonly checkpointRecords = CHECKPOINT_RECORDS,
  ) {
    this.time = TimeBase.of(undefined, createdMs);
    if (source.live) {
      const first = new FirstFold();
      this.fold = { add: (record) => first.add(record), view: () => first.view(), keys: () => first.keyNames() };
    } else this.fold = new DashFold();
  }

  /**
   * A recorded log is being read (by recorded-log.ts): until `loaded`, the summary says how
   * far it is, and the views that need the whole log wait (whenLoaded). `of`: its records,
   * when the index says; `opening`: the cached summary and stream, served meanwhile.
   */
  beginLoading(of?: number, opening?: OpeningView): void {
    this.reading = of !== undefined ? { of } : {};
    this.opening = opening;
    this.doneReading = new Promise((resolve) => (this.finishReading = resolve));
  }

  /** A live model keeps no records from now on: the views that read them ask `window`. */
  readFrom(window: RecordWindow): void {
    this.window = window;
    this.records = [];
  }

  /** A log file's index (log/log-index.ts): stories while the log is still read. */
  useIndex(index: LogIndex): void {
    this.index = index;
  }

  /**
   * A first pass over a log file (recorded-log.ts) takes the records here: folded into the
   * summary and the task stream, none kept. `firstPassDone` then makes what it folded the
   * opening view, as the cache's is, and the records are read again with `add`.
   */
  addFirst(record: LogRecord): void {
    if (this.count++ === 0) this.time = TimeBase.of(record.t, this.createdMs);
    this.lastT = record.t;
    (this.first ??= new FirstFold()).add(record);
    this.builder.add(record);
  }

  /** The first pass has read the whole log: its summary and stream are the opening view (answered) while the records are read again. */
  firstPassDone(): OpeningView {
    const reading = this.reading;
    this.reading = undefined;
    const opening: OpeningView = { summary: this.summary(), streamJson: JSON.stringify(encodeTaskStream(this.builder.snapshot())) };
    this.reading = reading;
    this.opening = opening;
    this.first = undefined;
    // The second read makes the stream again from the records it keeps (served once it is done), so the two always agree.
    this.builder = new TaskStreamBuilder();
    this.count = 0;
    this.lastT = undefined;
    this.changed(true);
    return opening;
  }

  loaded(): void {
    this.reading = undefined;
    this.opening = undefined;
    void this.index?.close();
    this.index = undefined;
    this.finishReading();
    this.changed(true);
  }

  /** Resolves once a recorded log has been read whole (at once for other sources). */
  whenLoaded(): Promise<void> {
    return this.doneReading;
  }

  get loading(): boolean {
    return this.reading !== undefined;
  }

  add(record: LogRecord): void {
    if (this.count++ === 0) this.time = TimeBase.of(record.t, this.createdMs);
    this.lastT = record.t;
    this.fold.add(record);
    this.builder.add(record);
    if (this.window !== undefined) return;
    this.records.push(record);
    if (this.source.live && this.records.length >= 2 * LIVE_RECORDS) {
      this.dropped += this.records.length - LIVE_RECORDS;
      this.records = this.records.slice(-LIVE_RECORDS);
    }
  }

  /** Records taken so far (a live model keeps only the latest). */
  get size(): number {
    return this.count;
  }

  /** The records kept, in log order (a live model: the latest), for views that read them whole (machines, what-if); and how many went before them. */
  kept(): Promise<KeptRecords> {
    if (this.window === undefined) return Promise.resolve({ records: this.records, dropped: this.dropped });
    if (this.windowRead?.count !== this.count) this.windowRead = { count: this.count, kept: this.window.kept() };
    return this.windowRead.kept;
  }

  /** The machines' counts carried on, when the model has a window to read the records from (else the views count the records kept). */
  wholeMachines(): Promise<{ tally: MachineTally; records: number; dropped: number }> | undefined {
    return this.window?.machines();
  }

  /**
   * Tell the listeners (the SSE clients) that records came; they read what they need. `now`:
   * a change a page waits on (the whole stream ready, the log read whole), not to be held
   * for the next periodic update.
   */
  changed(now = false): void {
    // The window's records as last read are not the latest any more: not kept alive for nothing.
    if (this.windowRead !== undefined && this.windowRead.count !== this.count) this.windowRead = undefined;
    if (this.stepFold !== undefined && this.stepFold.records !== this.records) this.stepFold = undefined;
    for (const listener of this.listeners) listener(now);
  }

  onChange(listener: (now: boolean) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  get start(): number {
    return this.time.start;
  }

  summary(): Summary {
    if (this.opening !== undefined) return { ...this.opening.summary, source: this.source, loading: { read: this.count, of: this.opening.summary.records, streamReady: true } };
    const summary: Summary = { source: this.source, start: this.time.start, end: this.lastT !== undefined ? this.time.since(this.lastT) : 0, records: this.count, now: this.since((this.first ?? this.fold).view()) };
    if (this.time.iso !== undefined) summary.startIso = this.time.iso;
    if (this.reading !== undefined) summary.loading = { read: this.count, ...(this.reading.of !== undefined ? { of: this.reading.of } : {}), streamReady: false };
    return summary;
  }

  /** The whole task stream so far in its wire form, as JSON text: a recorded log's is made once (or comes from the cache while the log is read). */
  streamJson(): string {
    if (this.opening !== undefined) {
      this.markStreamServed();
      return this.opening.streamJson;
    }
    if (this.source.live || this.reading !== undefined) return JSON.stringify(encodeTaskStream(this.builder.snapshot()));
    return (this.streamText ??= JSON.stringify(encodeTaskStream(this.builder.snapshot())));
  }

  /** The bars, transfers and steals completed since the last call, encoded; none while a cached stream stands for the log's. */
  drainStream(): unknown {
    if (this.opening !== undefined) return undefined;
    // A delta has a stream's fields: it travels in the stream's compact wire form.
    return encodeTaskStream(this.builder.drain());
  }

  async at(cut: DashCut): Promise<AtAnswer> {
    const { records } = await this.kept();
    if ("index" in cut) return this.atIndex(records, cut.index);
    const logCut = new LogCut(cut.spec);
    const fold = new DashFold();
    let index = 0;
    let taken = 0;
    for (const record of records) {
      const verdict = logCut.admit(record);
      if (verdict === "end") break;
      index++;
      if (verdict === "skip") continue;
      taken = index;
      fold.add(record);
    }
    return this.answer(records, fold, logCut.describe(), taken);
  }

  private atIndex(records: readonly LogRecord[], wanted: number): AtAnswer {
    const index = Math.max(0, Math.min(records.length, Math.floor(wanted)));
    let step = this.stepFold;
    if (step === undefined || step.records !== records || step.index > index || this.checkpointBefore(index) > step.index) {
      // Back (or far forward), or other records (a live model's latest): from the latest checkpoint at or before the cut.
      const at = this.checkpointBefore(index);
      step = at === 0 ? { records, index: 0, fold: new DashFold() } : { records, index: at, fold: this.checkpoints[at / this.checkpointRecords - 1]!.clone() };
    }
    for (let i = step.index; i < index; i++) {
      step.fold.add(records[i]!);
      // A live model's records shift as the oldest go: its positions are not stable, no checkpoints.
      if (!this.source.live && (i + 1) % this.checkpointRecords === 0 && this.checkpoints.length === (i + 1) / this.checkpointRecords - 1) this.checkpoints.push(step.fold.clone());
    }
    step.index = index;
    this.stepFold = step;
    return this.answer(records, step.fold, `after record ${index} of ${records.length}`, index);
  }

  /** The position of the latest checkpoint at or before `index` (0: the start). */
  private checkpointBefore(index: number): number {
    return Math.min(Math.floor(index / this.checkpointRecords), this.checkpoints.length) * this.checkpointRecords;
  }

  private answer(records: readonly LogRecord[], fold: DashFold, cut: string, index: number): AtAnswer {
    const last = index > 0 ? records[index - 1] : undefined;
    return { ...this.since(fold.view()), cut, index, t: last ? this.time.since(last.t) : 0 };
  }

  /** A key's story (or that of the one key starting with `given`), with reasons and causes; times from the start. */
  async story(given: string): Promise<{ key: string; lines: unknown[]; partial?: string }> {
    if (this.reading !== undefined && this.index !== undefined) {
      // Still reading: a key named whole is found through the log's index, as `natsched story` finds it.
      const found = await this.index.keyRecords(given);
      if (found.length > 0) {
        const own = found.map((f) => f.record);
        const lines = await addCauses(storyLines(own, given), own, given, new IndexInputFinder(this.index, found));
        const time = this.count > 0 ? this.time : TimeBase.of(this.opening?.summary.start, this.createdMs);
        return { key: given, lines: lines.map((line) => ({ ...line, t: time.since(line.t) })) };
      }
    }
    // A key's start is resolved among the keys of the whole log.
    await this.whenLoaded();
    const { records, dropped } = await this.kept();
    let key = given;
    let own = records.filter((r) => concernsKey(r, key));
    if (own.length === 0) {
      key = resolveKey(this.fold.keys(), given, this.source.location);
      own = records.filter((r) => concernsKey(r, key));
    }
    const lines = await addCauses(storyLines(own, key), own, key, recordsSource(records));
    const story: { key: string; lines: unknown[]; partial?: string } = { key, lines: lines.map((line) => ({ ...line, t: this.time.since(line.t) })) };
    if (dropped > 0) story.partial = `the dashboard keeps the latest ${records.length} records: what came before (${dropped} records) is in the log (natsched story)`;
    return story;
  }

  /** A view's times from the run's start. */
  private since(view: ClusterAt): ClusterAt {
    if (view.last) view.last = { ...view.last, t: this.time.since(view.last.t) };
    return view;
  }
}
