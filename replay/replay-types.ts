/**
 * What `replay` takes and returns. See docs/replay.md.
 */
import type { InputRecord, LogProblem, LogProblemKind, LogRecord } from "../log/types.js";
import type { ClusterStateView } from "./state-view.js";
import type { BuildDifference } from "./build-differences.js";
import type { LoggedWhy, MachineName } from "../machines/reasons.js";

/** A log to replay: a file path, or records (a MemoryLogSink's, or streamed from elsewhere). */
export type ReplaySource = string | readonly LogRecord[] | Iterable<LogRecord> | AsyncIterable<LogRecord>;

export type UntilKind = "seq" | "time" | "elapsed";

export interface ReplayOptions {
  /**
   * Stop here and return the cluster state at this point:
   * - "seq": the `actor`'s (default "scheduler") record with this seq has taken effect; an
   *   input takes effect together with all its transitions. The other actors are cut at
   *   that record's position in the log.
   * - "time": every actor's records with `t` <= until (an input and its transitions
   *   share its `t`).
   * - "elapsed": "time", counted in seconds from the first record of the log.
   * Without `untilKind`, an integer is a seq and anything else a time. The same cut as
   * `inspect --at` (log-cut.ts).
   */
  until?: number;
  untilKind?: UntilKind;
  /** The actor of a "seq" cut, when not `actor` (default: `actor`, else the scheduler). */
  untilActor?: string;
  /** Replay only this actor ("scheduler", "worker.<name>"); the rest of the log is still checked. */
  actor?: string;
  /**
   * Compute the state diff of a divergence by re-reading the log up to it (default true).
   * Sources that can be read only once (iterators) never get one.
   */
  diffState?: boolean;
  /**
   * Threads to replay a log file on (its actors split between them; see
   * replay-parallel.ts). Default: one for a log under 8 MB or when the cores are busy (load
   * average above their number less a half), else one per core (at most 4).
   * Only a whole file read to its end is split: with `until` or `actor`, one thread.
   */
  threads?: number;
  /**
   * Accept an open log: actors with a start record and no stop record after it (a log still
   * being written) are not reported as "open" problems. Default false for a file or records;
   * `replayAt` defaults it to true for a JetStream log (a live cluster's log is open).
   */
  openOk?: boolean;
  /**
   * The replayer's task functions, as code hashes (name -> hash: `hashFunctions` of a
   * functions option): functions whose hash differs from the log header's are listed in
   * `buildDifferences`. Replay never runs them.
   */
  functions?: Readonly<Record<string, string>>;
}

/** A machine transition, as recorded or as reproduced. */
export interface TransitionFacts {
  machine: MachineName;
  id: string;
  event: string;
  from: string;
  to: string;
  why?: LoggedWhy;
}

/** One path of a snapshot that differs: absent on one side shows as undefined. */
export interface StateChange {
  path: string;
  before: unknown;
  after: unknown;
}

/** A machine instance before and after the diverging input, as the replay computed it. */
export interface InstanceDiff {
  machine: string;
  id: string;
  before: unknown;
  after: unknown;
  changes: StateChange[];
}

export interface Divergence {
  actor: string;
  /**
   * The seq of the input whose handling diverged; for `cause: "start"`, of the start record
   * (the log has transitions before any input); for "stop", of the stop record (the log has
   * transitions after it).
   */
  seq: number;
  cause: "input" | "start" | "stop";
  /** The input event, as recorded (null when the cause is a start or stop record). */
  input: InputRecord["event"] | null;
  /** Which of the input's transitions diverged, counting from 0. */
  index: number;
  /** The recorded transition at that place (with its seq), or null if the log has none there. */
  recorded: (TransitionFacts & { seq: number }) | null;
  /** What the machines did instead, or null if they made no further transition. */
  reproduced: TransitionFacts | null;
  /** Set when the core threw while handling the input (the replay reproduced the throw). */
  error?: string;
  /** The instances named by the two transitions, before and after the input in the replay. */
  state?: InstanceDiff[];
  /** Why no state diff is given, when it is not. */
  stateNote?: string;
  message: string;
}

export interface ActorReplay {
  role: string;
  /** Inputs re-fed to the actor's core. */
  inputs: number;
  /** Recorded transitions reproduced exactly. */
  transitions: number;
  /** The actor's last record that was replayed. */
  lastSeq: number;
  /** A stop record was replayed: the actor had left (killed, removed or closed). */
  stopped: boolean;
  /** Messages the replayed core sent, by op (for workers, also "execute" and "gather"). */
  sent: Record<string, number>;
  divergence?: Divergence;
  /** Why replay of this actor stopped early: a gap in its records, no start record... */
  halted?: { seq: number; reason: string };
  /** Inputs during which the core threw an exception (the live actor survived the same). */
  threw?: { seq: number; op: string; message: string }[];
}

export type ReplayProblemKind = LogProblemKind | "truncated" | "open";

/**
 * A problem in the log. "truncated": an actor's records end in the middle of an input's
 * transitions (the writer stopped: a crash, or a log still being written). "open": an
 * actor's latest start record has no stop record after it (the writer stopped without
 * closing the log: a crash, a kill, or a log still being written; see ReplayOptions.openOk).
 */
export interface ReplayProblem extends Omit<LogProblem, "kind"> {
  kind: ReplayProblemKind;
  seq?: number;
}

export interface ReplayResult {
  /** Complete, and every replayed actor reproduced its recorded transitions exactly. */
  ok: boolean;
  /** The log (as far as it was read) has no problem: nothing missing, damaged or cut short. */
  complete: boolean;
  actors: Record<string, ActorReplay>;
  problems: ReplayProblem[];
  /** The cluster as the replayed cores left it: at `until`, or at the end of the log. */
  state: ClusterStateView;
  stats: ReplayStats;
  /**
   * How the build replaying differs from the one that wrote the log (its header's meta):
   * natsched version, commit, node major, task functions (when `functions` was given).
   * A warning only: `ok` does not depend on it. Absent when the log has no header (records).
   */
  buildDifferences?: BuildDifference[];
}

export interface ReplayStats {
  records: number;
  inputs: number;
  transitions: number;
  seconds: number;
  /** Where reading stopped: the end of the log, or the cut of `until` (seq) or the first divergence. */
  readTo: "end" | "until";
  /** Threads the actors were replayed on (see ReplayOptions.threads). */
  threads: number;
}

export type { LogRecord };
