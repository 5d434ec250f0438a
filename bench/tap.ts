/**
 * A LogSink that watches the records going by and forwards them to the real log (if any).
 * The benchmarks read placement and data movement from it instead of reaching into actors:
 * - worker inputs `gather-done`: bytes a worker received from a peer (worker-to-worker
 *   transfers; the client's gathers and scatters are not worker inputs of that kind);
 * - worker inputs `execute-done`: which worker ran which task.
 * With no inner sink it discards the records after looking at them (the recorders still
 * build them, so a tap costs a little even with the log off; W3-W5 only).
 */
import type { LogRecord, LogSink } from "../log/types.js";

export class TapSink implements LogSink {
  readonly location: string;
  /** Bytes received by worker-to-worker transfers, per receiving actor. */
  readonly gatheredBytes = new Map<string, number>();
  transfers = 0;
  /** Executions finished, per worker actor, counting only keys that `countKey` accepts. */
  readonly executed = new Map<string, number>();
  records = 0;
  /** Run times (ms) of the first counted tasks the scheduler heard of: its first duration samples. */
  readonly firstDurationsMs: number[] = [];

  constructor(
    private readonly inner: LogSink | null,
    private readonly countKey: (key: string) => boolean = () => true,
  ) {
    this.location = inner?.location ?? "tap";
  }

  append(record: LogRecord): void {
    this.records++;
    if (record.kind === "input") {
      const ev = record.event as { op: string; key?: string; received?: { key: string; nbytes: number }[] };
      if (ev.op === "gather-done" && ev.received) {
        let bytes = 0;
        for (const r of ev.received) bytes += r.nbytes;
        this.transfers += ev.received.length;
        this.gatheredBytes.set(record.actor, (this.gatheredBytes.get(record.actor) ?? 0) + bytes);
      } else if (ev.op === "execute-done" && ev.key !== undefined && this.countKey(ev.key)) {
        this.executed.set(record.actor, (this.executed.get(record.actor) ?? 0) + 1);
      } else if (ev.op === "task-finished" && record.actor === "scheduler" && this.firstDurationsMs.length < 3 && ev.key !== undefined && this.countKey(ev.key)) {
        const e = ev as unknown as { start: number; stop: number };
        this.firstDurationsMs.push(Number(((e.stop - e.start) * 1000).toFixed(1)));
      }
    }
    this.inner?.append(record);
  }

  get bytesMoved(): number {
    let total = 0;
    for (const b of this.gatheredBytes.values()) total += b;
    return total;
  }

  flush(): Promise<void> {
    return this.inner?.flush() ?? Promise.resolve();
  }

  close(): Promise<void> {
    return this.inner?.close() ?? Promise.resolve();
  }
}
