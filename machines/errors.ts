/**
 * Typed errors. Every error natsched throws or rejects with is a NatschedError with a
 * stable `code`, so callers can branch without parsing messages.
 */
export type ErrorCode =
  | "CONFIG"
  | "GRAPH"
  | "CYCLE"
  | "UNKNOWN_DEPENDENCY"
  | "UNKNOWN_FUNCTION"
  | "BAD_OPTION"
  | "CLOSED"
  | "TASK_FAILED"
  | "CANCELLED"
  | "TIMEOUT"
  | "LOG_CORRUPT"
  | "LOG_CONFLICT"
  | "LOG_INDEX"
  | "LOG_FOREIGN"
  | "PAYLOAD_TOO_LARGE"
  | "PROTOCOL"
  | "NO_WORKERS"
  | "SCHEDULER_RESTARTED"
  | "KEY_EXISTS"
  | "NO_SUCH_KEY"
  | "AMBIGUOUS_KEY"
  | "FORBIDDEN";

export class NatschedError extends Error {
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

/** A config value is invalid; `key` names it (e.g. "workerSaturation"). */
export class ConfigError extends NatschedError {
  constructor(readonly key: string, message: string) {
    super("CONFIG", `config ${key}: ${message}`);
  }
}

/** A submitted graph is malformed (bad task spec, duplicate definition, ...). */
export class GraphError extends NatschedError {
  constructor(message: string, code: "GRAPH" | "CYCLE" | "UNKNOWN_DEPENDENCY" = "GRAPH", readonly keys: string[] = []) {
    super(code, message);
  }
}

export class CycleError extends GraphError {
  constructor(readonly cycle: string[]) {
    super(`cycle in graph: ${cycle.join(" -> ")}`, "CYCLE", cycle);
  }
}

export class UnknownDependencyError extends GraphError {
  constructor(readonly key: string, readonly dependency: string) {
    super(`task ${key} depends on unknown key ${dependency}`, "UNKNOWN_DEPENDENCY", [key, dependency]);
  }
}

export class UnknownFunctionError extends NatschedError {
  constructor(readonly func: string, readonly key?: string) {
    super("UNKNOWN_FUNCTION", `unknown function "${func}"${key ? ` (task ${key})` : ""}: register it in the functions of every worker`);
  }
}

export class BadOptionError extends NatschedError {
  constructor(readonly option: string, message: string) {
    super("BAD_OPTION", `option ${option}: ${message}`);
  }
}

export class ClosedError extends NatschedError {
  constructor(what: string) {
    super("CLOSED", `${what} is closed`);
  }
}

/** A task raised. `message` is the original error's message; `key` names the task. */
export class TaskFailedError extends NatschedError {
  /** The failed function's stack on its worker, bounded (20 frames, 4 KB); absent when the worker sent none. */
  remoteStack?: string;
  constructor(readonly key: string, readonly originalMessage: string, readonly originalName = "Error", readonly failedKey = key) {
    super(
      "TASK_FAILED",
      failedKey === key
        ? `task ${key} failed: ${originalMessage}`
        : `task ${key} failed because its dependency ${failedKey} failed: ${originalMessage}`,
    );
  }
}

export class CancelledError extends NatschedError {
  constructor(readonly key: string, reason = "released") {
    super("CANCELLED", `task ${key} was cancelled (${reason})`);
  }
}

export class TimeoutError extends NatschedError {
  constructor(what: string) {
    super("TIMEOUT", `timed out: ${what}`);
  }
}

export class LogCorruptError extends NatschedError {
  constructor(message: string, readonly line?: number) {
    super("LOG_CORRUPT", line === undefined ? message : `line ${line}: ${message}`);
  }
}

/**
 * A log's index (log/log-index.ts) cannot be used: `stale` (it was built for another state
 * of the log: the log grew, was cut or rewritten), `corrupt` (its bytes do not check), or
 * `unindexable` (the log has records a reader drops, so positions would not be exact).
 */
export class LogIndexError extends NatschedError {
  constructor(readonly reason: "stale" | "corrupt" | "unindexable", message: string) {
    super("LOG_INDEX", message);
  }
}

/** Another writer appended to an actor's log in JetStream: each actor's log has exactly one writer. */
export class LogConflictError extends NatschedError {
  constructor(readonly actor: string, message: string) {
    super("LOG_CONFLICT", `log of ${actor}: ${message}`);
  }
}

/**
 * A message on an actor's log subject in JetStream that none of the log's writers published
 * (log/jetstream-chain.ts). A report, not a failure: the message is skipped, and the log
 * and its writer go on.
 */
export class LogForeignMessageError extends NatschedError {
  constructor(
    readonly actor: string,
    readonly streamSeq: number,
    message: string,
  ) {
    super("LOG_FOREIGN", `log of ${actor}: ${message}`);
  }
}

export class PayloadTooLargeError extends NatschedError {
  constructor(readonly size: number, readonly limit: number, what = "payload") {
    super("PAYLOAD_TOO_LARGE", `${what} of ${size} bytes exceeds the limit of ${limit} bytes`);
  }
}

export class ProtocolError extends NatschedError {
  constructor(message: string) {
    super("PROTOCOL", message);
  }
}

/**
 * Scatter creates data under new keys and never overwrites: a worker refuses a put-data
 * naming a key it already has, and the scheduler an update-data naming a key it already has
 * (unless that key is in memory on every worker named, when the client just shares it).
 * `keys` names the keys that exist; nothing of the request was applied.
 */
export class KeyExistsError extends NatschedError {
  constructor(
    readonly keys: string[],
    where = "scatter",
  ) {
    super("KEY_EXISTS", `${where}: ${describeKeys(keys)} already; scatter creates data under new keys and never overwrites it (choose other keys, or release these and wait until they are gone)`);
  }
}

function describeKeys(keys: readonly string[]): string {
  const shown = keys.slice(0, 5).map((k) => JSON.stringify(k)).join(", ");
  const more = keys.length > 5 ? ` and ${keys.length - 5} more` : "";
  return keys.length === 1 ? `key ${shown} exists` : `keys ${shown}${more} exist`;
}

/**
 * Something no sender in its role may do: a worker op on a client's subject (or a client op on
 * a worker's), an op naming another worker or client than the subject it came on, a report
 * from a worker incarnation the scheduler does not have, or a NATS server refusing a
 * publish for the connection's permissions. Nothing it asked for happened.
 */
export class ForbiddenError extends NatschedError {
  constructor(message: string) {
    super("FORBIDDEN", message);
  }
}

/**
 * The scheduler the client talked to started again without its state (a new run: no event
 * log in JetStream to resume from), and this future cannot be brought back: its data was
 * scattered by the client (or depends on such data), and the old run's copy is gone.
 * Futures the client can resubmit (tasks it submitted itself) are resubmitted instead.
 */
export class SchedulerRestartedError extends NatschedError {
  constructor(
    readonly key: string,
    readonly cluster: string,
    /** The scattered key that was lost: `key` itself, or a dependency of it. */
    readonly lostKey = key,
  ) {
    super(
      "SCHEDULER_RESTARTED",
      `the scheduler of cluster ${JSON.stringify(cluster)} restarted without its state (a new run, no log to resume from); ` +
        (lostKey === key
          ? `${key} was data scattered by this client, lost with the old run: scatter it again`
          : `${key} depends on ${lostKey}, data scattered by this client and lost with the old run: scatter it again and resubmit`),
    );
  }
}
