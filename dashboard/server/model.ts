/**
 * What the dashboard knows of one log: its records in log order (all of a recorded log, or
 * those written so far by a live cluster), the cluster now, the cluster at any cut, a key's
 * story and the task stream. Every time it hands out is seconds from the run's start.
 */
import { concernsKey } from "../../log/record-filter.js";
import { TimeBase } from "../../log/time-base.js";
import type { LogRecord } from "../../log/types.js";
import { LogCut, type CutSpec } from "../../replay/log-cut.js";
import { resolveKey } from "../../tools/keys.js";
import { addCauses, recordsSource } from "../../tools/story-causes.js";
import { storyLines } from "../../tools/story.js";
import { encodeTaskStream, TaskStreamBuilder } from "../../tools/task-stream.js";
import { DashFold } from "./dash-fold.js";
import type { AtAnswer, ClusterAt, SourceInfo, Summary } from "./wire-types.js";

export type { AtAnswer, SourceInfo, Summary } from "./wire-types.js";

/** A way to name a cut: the first `index` records in log order, or a cut as replay --until takes it. */
export type DashCut = { index: number } | { spec: CutSpec };

/**
 * Records a live model keeps for stories: the latest ones, as a cluster may run for days
 * (a story of an older key shows what is left of it and says so).
 */
const LIVE_RECORDS = 50_000;

export class DashboardModel {
  /** In log order; a live model drops the oldest beyond LIVE_RECORDS. */
  private records: LogRecord[] = [];
  /** Records taken in all, and of them dropped. */
  private count = 0;
  private dropped = 0;
  private readonly fold = new DashFold();
  private readonly builder = new TaskStreamBuilder();
  /** A recorded log's task stream, encoded once. */
  private encoded: unknown;
  private time: TimeBase;
  /** The fold of the last `at` by index, to step forward from without starting over. */
  private stepFold: { index: number; fold: DashFold } | undefined;
  private readonly listeners = new Set<() => void>();

  constructor(
    readonly source: SourceInfo,
    /** The log header's `created` (ms), which says whether `t` is wall-clock time. */
    private readonly createdMs?: number,
  ) {
    this.time = TimeBase.of(undefined, createdMs);
  }

  add(record: LogRecord): void {
    if (this.count++ === 0) this.time = TimeBase.of(record.t, this.createdMs);
    this.records.push(record);
    this.fold.add(record);
    this.builder.add(record);
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
  kept(): { records: readonly LogRecord[]; dropped: number } {
    return { records: this.records, dropped: this.dropped };
  }

  /** Tell the listeners (the SSE clients) that records came; they read what they need. */
  changed(): void {
    for (const listener of this.listeners) listener();
  }

  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  get start(): number {
    return this.time.start;
  }

  summary(): Summary {
    const last = this.records[this.records.length - 1];
    const summary: Summary = { source: this.source, start: this.time.start, end: last ? this.time.since(last.t) : 0, records: this.count, now: this.since(this.fold.view()) };
    if (this.time.iso !== undefined) summary.startIso = this.time.iso;
    return summary;
  }

  /** The whole task stream so far, in its wire form. */
  stream(): unknown {
    if (this.source.live) return encodeTaskStream(this.builder.snapshot());
    return (this.encoded ??= encodeTaskStream(this.builder.snapshot()));
  }

  /** The bars, transfers and steals completed since the last call (live only), encoded. */
  drainStream(): unknown {
    // A delta has a stream's fields: it travels in the stream's compact wire form.
    return encodeTaskStream(this.builder.drain());
  }

  at(cut: DashCut): AtAnswer {
    if ("index" in cut) return this.atIndex(cut.index);
    const logCut = new LogCut(cut.spec);
    const fold = new DashFold();
    let index = 0;
    let taken = 0;
    for (const record of this.records) {
      const verdict = logCut.admit(record);
      if (verdict === "end") break;
      index++;
      if (verdict === "skip") continue;
      taken = index;
      fold.add(record);
    }
    return this.answer(fold, logCut.describe(), taken);
  }

  private atIndex(wanted: number): AtAnswer {
    const index = Math.max(0, Math.min(this.records.length, Math.floor(wanted)));
    let step = this.stepFold;
    if (step === undefined || step.index > index) step = { index: 0, fold: new DashFold() };
    for (let i = step.index; i < index; i++) step.fold.add(this.records[i]!);
    step.index = index;
    this.stepFold = step;
    return this.answer(step.fold, `after record ${index} of ${this.records.length}`, index);
  }

  private answer(fold: DashFold, cut: string, index: number): AtAnswer {
    const last = index > 0 ? this.records[index - 1] : undefined;
    return { ...this.since(fold.view()), cut, index, t: last ? this.time.since(last.t) : 0 };
  }

  /** A key's story (or that of the one key starting with `given`), with reasons and causes; times from the start. */
  async story(given: string): Promise<{ key: string; lines: unknown[]; partial?: string }> {
    let key = given;
    let own = this.records.filter((r) => concernsKey(r, key));
    if (own.length === 0) {
      key = resolveKey(this.fold.keys(), given, this.source.location);
      own = this.records.filter((r) => concernsKey(r, key));
    }
    const lines = await addCauses(storyLines(own, key), own, key, recordsSource(this.records));
    const story: { key: string; lines: unknown[]; partial?: string } = { key, lines: lines.map((line) => ({ ...line, t: this.time.since(line.t) })) };
    if (this.dropped > 0) story.partial = `the dashboard keeps the latest ${this.records.length} records: what came before (${this.dropped} records) is in the log (natsched story)`;
    return story;
  }

  /** A view's times from the run's start. */
  private since(view: ClusterAt): ClusterAt {
    if (view.last) view.last = { ...view.last, t: this.time.since(view.last.t) };
    return view;
  }
}
