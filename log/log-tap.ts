/**
 * A log sink that also keeps what is written for a reader in the same process (the embedded
 * cluster's dashboard): every record goes on to the sink it wraps (none: `inner` null), and
 * into a list the reader takes now and then. Appending stays cheap: no copy of a record the
 * writer built, one small object for a fast-path transition or input.
 */
import type { LoggedWhy, MachineName } from "../machines/reasons.js";
import type { InputRecord, LogRecord, LogSink, TransitionRecord } from "./types.js";

export class LogTap implements LogSink {
  private pending: LogRecord[] = [];

  constructor(readonly inner: LogSink | null) {}

  get location(): string {
    return this.inner?.location ?? "(no log file)";
  }

  append(record: LogRecord): void {
    this.inner?.append(record);
    this.pending.push(record);
  }

  appendTransition(actor: string, seq: number, t: number, machine: MachineName, id: string, event: string, from: string, to: string, why?: LoggedWhy): void {
    const inner = this.inner;
    const record: TransitionRecord = why === undefined ? { actor, seq, t, kind: "transition", machine, id, event, from, to } : { actor, seq, t, kind: "transition", machine, id, event, from, to, why };
    if (inner?.appendTransition) inner.appendTransition(actor, seq, t, machine, id, event, from, to, why);
    else inner?.append(record);
    this.pending.push(record);
  }

  appendInput(actor: string, seq: number, event: InputRecord["event"] & { t: number }): void {
    const inner = this.inner;
    const record: InputRecord = { actor, seq, t: event.t, kind: "input", event };
    if (inner?.appendInput) inner.appendInput(actor, seq, event);
    else inner?.append(record);
    this.pending.push(record);
  }

  /** The records written since the last call, in the order they were written. */
  take(): LogRecord[] {
    const taken = this.pending;
    this.pending = [];
    return taken;
  }

  flush(): Promise<void> {
    return this.inner?.flush() ?? Promise.resolve();
  }

  close(): Promise<void> {
    return this.inner?.close() ?? Promise.resolve();
  }
}
