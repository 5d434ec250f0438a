/**
 * Event-log records. One record per input an actor takes and per transition a machine
 * makes. Per-actor `seq` numbers start at 0 and have no gaps. `t` is the time the actor
 * saw (seconds; wall clock in the embedded and NATS hosts, virtual in the simulator).
 */
import type { LoggedWhy, MachineName } from "../machines/reasons.js";

/** Version 1: a JSON line per record. Version 2: records in binary frames (the file log's default). */
export const LOG_FORMAT_VERSION = 1;
export const LOG_FORMAT_FRAMES = 2;
/** The versions this code reads. */
export const LOG_FORMAT_VERSIONS: readonly number[] = [LOG_FORMAT_VERSION, LOG_FORMAT_FRAMES];

export type RecordKind =
  /** An actor started: carries what replay needs to rebuild it (config, identity). */
  | "start"
  /** A stimulus the actor took: re-fed by replay. */
  | "input"
  /** A state machine transition the actor made: checked by replay. */
  | "transition"
  /** An actor stopped. */
  | "stop";

export interface BaseRecord {
  /** Actor name: "scheduler", "worker.<name>", "client.<id>". */
  actor: string;
  seq: number;
  t: number;
  kind: RecordKind;
}

export interface StartRecord extends BaseRecord {
  kind: "start";
  /** Actor type ("scheduler" | "worker" | ...) and whatever it needs to be rebuilt. */
  role: string;
  init: Record<string, unknown>;
}

export interface InputRecord extends BaseRecord {
  kind: "input";
  /** The stimulus exactly as the actor's core received it. */
  event: { op: string; [k: string]: unknown };
}

export interface TransitionRecord extends BaseRecord {
  kind: "transition";
  /**
   * Which machine: "task" (scheduler's task), "wtask" (worker-side task), "worker", "scheduler".
   * Not checked when read back: a name no core writes is kept as it is and matches no reason.
   */
  machine: MachineName;
  /** The machine instance: a task key, a worker name. */
  id: string;
  /** The machine event that caused it. */
  event: string;
  from: string;
  to: string;
  /** The decision's reasons (placement candidates, objective values, steal costs...): read them with readReason. */
  why?: LoggedWhy;
}

export interface StopRecord extends BaseRecord {
  kind: "stop";
  reason?: string;
}

export type LogRecord = StartRecord | InputRecord | TransitionRecord | StopRecord;

/** Where records go. Implementations batch; `append` must be cheap and never throw on I/O. */
export interface LogSink {
  append(record: LogRecord): void;
  /**
   * Optional fast path for the most common record: the same as appending
   * { actor, seq, t, kind: "transition", machine, id, event, from, to, why? } (without
   * `why` when it is undefined), without building the object.
   */
  appendTransition?(actor: string, seq: number, t: number, machine: MachineName, id: string, event: string, from: string, to: string, why?: LoggedWhy): void;
  /** Optional fast path: the same as appending { actor, seq, t: event.t, kind: "input", event }. */
  appendInput?(actor: string, seq: number, event: InputRecord["event"] & { t: number }): void;
  /** Write everything appended so far. */
  flush(): Promise<void>;
  close(): Promise<void>;
  /** Where the log lives, for messages ("run.natlog", "nats://host:4222/<cluster>"). */
  readonly location: string;
}

/**
 * "foreign": a message on an actor's subject in JetStream that no writer of that actor's log
 * published (jetstream-chain.ts); it is skipped whole and takes nothing from the log.
 */
export type LogProblemKind = "torn" | "checksum" | "gap" | "duplicate" | "malformed" | "version" | "foreign";

export interface LogProblem {
  kind: LogProblemKind;
  /** 1-based line number in the file, when the sink is a file (version 1). */
  line?: number;
  /** Byte offset in the file of the frame concerned (version 2). */
  offset?: number;
  /** The stream sequence of the message concerned (a log in JetStream). */
  streamSeq?: number;
  actor?: string;
  /** For gaps: the sequence expected and the one found. */
  expected?: number;
  found?: number;
  message: string;
}
