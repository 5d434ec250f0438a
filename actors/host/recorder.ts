import type { Config } from "../../machines/config.js";
import type { MachineName, Why } from "../../machines/reasons.js";
import type { WorkerInit } from "../../machines/worker/inputs.js";
import type { ClientInit } from "../../machines/client/inputs.js";
import { clientStartInit } from "../../log/client-start.js";
import { schedulerStartInit, workerStartInit } from "../../log/start-init.js";
import { NullLogSink } from "../../log/memory-log.js";
import type { InputRecord, LogSink } from "../../log/types.js";

/**
 * Writes one actor's records to the event log: its start, every input it takes and every
 * transition its machines make, with a per-actor sequence number and no gaps.
 */
export class ActorRecorder {
  private seq: number;
  /** The time of the input being handled: transitions inherit it. */
  private t = 0;
  /** The seq of the latest input record: the stimulus of what the actor does until the next (-1: none yet, or nothing kept). */
  private inputSeq = -1;
  /** Null when nothing is kept: a NullLogSink needs no records built for it. */
  private readonly sink: LogSink | null;

  /**
   * `firstSeq`: where the actor's log continues, when it already has records (a restart writing to JetStream).
   * `build`: the writing build (natsched, commit, node, functions), put in a worker's start
   * record as `build` where the log's header cannot name it (a log shared by many processes).
   */
  constructor(
    readonly actor: string,
    sink: LogSink | null,
    firstSeq = 0,
    private readonly build?: Record<string, unknown>,
  ) {
    this.sink = sink instanceof NullLogSink ? null : sink;
    this.seq = firstSeq;
  }

  get enabled(): boolean {
    return this.sink !== null;
  }

  /** A scheduler's start record: what replay rebuilds its core from (log/start-init.ts reads it back). */
  startScheduler(t: number, cluster: string, config: Config): void {
    this.start(t, "scheduler", schedulerStartInit(cluster, config));
  }

  /** A worker's start record, from the init its core was built with. */
  startWorker(t: number, init: WorkerInit): void {
    const start = workerStartInit(init);
    this.start(t, "worker", this.build === undefined ? start : { ...start, build: this.build });
  }

  /** A client's start record, from the init its core was built with. */
  startClient(t: number, init: ClientInit): void {
    this.start(t, "client", clientStartInit(init));
  }

  private start(t: number, role: string, init: Record<string, unknown>): void {
    this.t = t;
    this.sink?.append({ actor: this.actor, seq: this.seq++, t, kind: "start", role, init });
  }

  input(event: { op: string; t: number }): void {
    this.t = event.t;
    const sink = this.sink;
    if (sink === null) return;
    this.inputSeq = this.seq;
    if (sink.appendInput !== undefined) sink.appendInput(this.actor, this.seq++, event as InputRecord["event"] & { t: number });
    else sink.append({ actor: this.actor, seq: this.seq++, t: event.t, kind: "input", event: event as InputRecord["event"] });
  }

  /**
   * The seq of the input being handled, the stimulus of what the actor does until its next
   * input (transitions, messages); its stimulus id is `actor:seq` (docs/log-format.md,
   * "Causes"). Undefined before the first input, and when no log is kept (no record to name).
   */
  get stimulus(): number | undefined {
    return this.inputSeq < 0 ? undefined : this.inputSeq;
  }

  transition(machine: MachineName, id: string, event: string, from: string, to: string, why?: Why): void {
    const sink = this.sink;
    if (sink === null) return;
    if (sink.appendTransition !== undefined) {
      sink.appendTransition(this.actor, this.seq++, this.t, machine, id, event, from, to, why);
      return;
    }
    sink.append(
      why === undefined
        ? { actor: this.actor, seq: this.seq++, t: this.t, kind: "transition", machine, id, event, from, to }
        : { actor: this.actor, seq: this.seq++, t: this.t, kind: "transition", machine, id, event, from, to, why },
    );
  }

  stop(t: number, reason?: string): void {
    this.sink?.append({ actor: this.actor, seq: this.seq++, t, kind: "stop", ...(reason ? { reason } : {}) });
  }
}
