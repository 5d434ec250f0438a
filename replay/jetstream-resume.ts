/**
 * A scheduler restarting from its log in JetStream: its core rebuilt by re-running the
 * recorded inputs through the replay engine (which also checks every recorded transition:
 * a log the code does not reproduce is refused, not trusted), from the latest snapshot of
 * its core when there is one (log/core-snapshot.ts, log/jetstream-snapshot.ts), then
 * handed to the new SchedulerActor with its effects re-pointed at the live host.
 *
 * The log can end in the middle of an input: the input and some of its transitions were
 * stored, the rest was in flight when the process died. The rebuilt core made those
 * transitions too; they are returned as `unlogged`, for the host to append before anything
 * else, so the log stays replayable as one run.
 */
import type { NatsConnection } from "@nats-io/transport-node";
import { LogCorruptError } from "../machines/errors.js";
import type { SchedulerToClient, SchedulerToWorker } from "../machines/protocol.js";
import type { SchedulerCore } from "../machines/scheduler/core.js";
import type { SchedulerEffects } from "../machines/scheduler/inputs.js";
import { restoreCore, SnapshotError } from "../log/core-snapshot.js";
import { openJetStreamLog, type JetStreamLogReader } from "../log/jetstream-reader.js";
import type { LoadedSnapshot } from "../log/jetstream-snapshot.js";
import { SchedulerHost, type MessageTarget, type ReplayEffects } from "./replay-cores.js";
import { ReplayEngine } from "./replay-engine.js";
import { scanRecordSource, type ScanHandler } from "./replay-scan.js";
import type { TransitionFacts } from "./replay-types.js";
import type { LogRecord, TransitionRecord } from "../log/types.js";
import type { MachineName, Why } from "../machines/reasons.js";

const ACTOR = "scheduler";

export interface ResumedScheduler {
  core: SchedulerCore;
  /** Re-points the core's effects (sends, transitions) at the live host's. */
  connect(effects: SchedulerEffects): void;
  /** Transitions of the log's last input that its writer did not store, as records to append first. */
  unlogged: TransitionRecord[];
  /** The seq the scheduler's log continues at, after `unlogged`. */
  nextSeq: number;
  /** Records and inputs re-run (after the snapshot, when there was one). */
  records: number;
  inputs: number;
  /** The snapshot the core was restored from: the last record it includes. */
  snapshot?: { recordSeq: number };
}

/**
 * Rebuilds the scheduler of `cluster` from its log, whose records end before `nextSeq`
 * (from the writer's claim): from `snapshot` and the records after it when there is one
 * (log/jetstream-snapshot.ts), else by re-running the whole log. Returns null when there is
 * nothing to resume: no records, or the last scheduler stopped cleanly (its log ends with a
 * stop record). Throws LogCorruptError when the log cannot be trusted: damaged, with gaps, or
 * not reproduced. A snapshot that cannot be used (`onSnapshotProblem` says why) is left
 * aside for the whole log.
 */
export async function resumeScheduler(
  nc: NatsConnection,
  cluster: string,
  nextSeq: number,
  snapshot?: LoadedSnapshot,
  onSnapshotProblem?: (message: string) => void,
): Promise<ResumedScheduler | null> {
  if (nextSeq === 0) return null;
  const reader = await openJetStreamLog({ nc, cluster });
  if (snapshot !== undefined && snapshot.pointer.recordSeq < nextSeq) {
    try {
      return await resumeFromSnapshot(reader, nextSeq, snapshot);
    } catch (error) {
      if (!(error instanceof SnapshotError || error instanceof LogCorruptError)) throw error;
      onSnapshotProblem?.(`the snapshot at record ${snapshot.pointer.recordSeq} cannot be used (${error.message}): re-running the whole log`);
    }
  }
  const relay = new EffectsRelay();
  const engine = new ReplayEngine({ actor: ACTOR, effects: (_actor, run) => relay.attach(run) });
  const tail = new TailWatch(engine, relay);
  await scanRecordSource(reader.records({ actor: ACTOR }), tail);
  return settle(reader, engine, relay, tail, nextSeq, undefined);
}

/** The core restored from `snapshot`, then the log's records after it re-run. */
async function resumeFromSnapshot(reader: JetStreamLogReader, nextSeq: number, snapshot: LoadedSnapshot): Promise<ResumedScheduler | null> {
  const { pointer, bytes } = snapshot;
  const relay = new EffectsRelay();
  const engine = new ReplayEngine({ actor: ACTOR, effects: (_actor, run) => relay.attach(run) });
  engine.adopt(
    ACTOR,
    (fx) => {
      const host = new SchedulerHost({ config: pointer.config }, fx);
      restoreCore(bytes, host.core);
      return host;
    },
    pointer.recordSeq,
  );
  const tail = new TailWatch(engine, relay);
  let first = true;
  for await (const record of reader.recordsAfter(ACTOR, pointer.after)) {
    if (first && record.seq > pointer.recordSeq + 1) {
      throw new LogCorruptError(`the log after stream seq ${pointer.after} starts at record ${record.seq}, after the snapshot's ${pointer.recordSeq}: records missing`);
    }
    first = false;
    if (record.seq > pointer.recordSeq && !tail.record(record)) break;
  }
  return settle(reader, engine, relay, tail, nextSeq, { recordSeq: pointer.recordSeq });
}

/** The replay's verdict on the log read, and the resumed scheduler if it can be trusted. */
function settle(reader: JetStreamLogReader, engine: ReplayEngine, relay: EffectsRelay, tail: TailWatch, nextSeq: number, snapshot: { recordSeq: number } | undefined): ResumedScheduler | null {
  // The log of a scheduler that did not stop cleanly is open by nature: that is why it restarts.
  engine.finish(false, true);
  const where = `${reader.path} (${ACTOR})`;
  // Foreign messages (not the log's, jetstream-chain.ts) were skipped and reported by the claim.
  const damage = [...reader.problems.filter((p) => p.kind !== "foreign"), ...engine.problems.filter((p) => p.kind !== "truncated")];
  if (damage.length > 0) {
    throw new LogCorruptError(`cannot restart the scheduler from ${where}: ${damage.map((p) => p.message).join("; ")}`);
  }
  const run = engine.runs.get(ACTOR);
  if (run === undefined || run.host === null || run.host.role !== "scheduler") {
    throw new LogCorruptError(`cannot restart the scheduler from ${where}: ${run?.summary.halted?.reason ?? "the log has no scheduler start record"}`);
  }
  const { divergence, halted, stopped, lastSeq } = run.summary;
  if (divergence !== undefined) throw new LogCorruptError(`cannot restart the scheduler from ${where}: replaying it diverged: ${divergence.message}`);
  if (halted !== undefined) throw new LogCorruptError(`cannot restart the scheduler from ${where}: ${halted.reason}`);
  if (stopped) return null;
  if (lastSeq + 1 !== nextSeq) throw new LogCorruptError(`cannot restart the scheduler from ${where}: read up to seq ${lastSeq}, the stream ends at ${nextSeq - 1}`);
  const unlogged = tail.unlogged().map((facts, i) => transitionRecord(facts, nextSeq + i, tail.lastInputT));
  return {
    core: run.host.core,
    connect: (effects) => relay.goLive(effects),
    unlogged,
    nextSeq: nextSeq + unlogged.length,
    records: engine.records,
    inputs: run.summary.inputs,
    ...(snapshot !== undefined ? { snapshot } : {}),
  };
}

/** The rebuilt core's effects: the replay's while it re-runs the log, the live host's after. */
class EffectsRelay implements ReplayEffects {
  private run: ReplayEffects | null = null;
  private live: SchedulerEffects | null = null;
  /** Transitions the core made for the input being re-run. */
  current: TransitionFacts[] = [];

  attach(run: ReplayEffects): ReplayEffects {
    this.run = run;
    return this;
  }

  goLive(effects: SchedulerEffects): void {
    this.live = effects;
    this.run = null;
    this.current = [];
  }

  transition(machine: MachineName, id: string, event: string, from: string, to: string, why?: Why): void {
    if (this.live !== null) {
      this.live.transition(machine, id, event, from, to, why);
      return;
    }
    this.current.push(why === undefined ? { machine, id, event, from, to } : { machine, id, event, from, to, why });
    this.run?.transition(machine, id, event, from, to, why);
  }

  sent(op: string, to?: MessageTarget, message?: SchedulerToWorker | SchedulerToClient): void {
    if (this.live === null) {
      this.run?.sent(op);
      return;
    }
    if (to === undefined || message === undefined) return;
    if ("worker" in to) this.live.toWorker(to.worker, message as SchedulerToWorker);
    else this.live.toClient(to.client, message as SchedulerToClient);
  }
}

/** Hands records to the engine and counts the transitions logged after the latest input. */
class TailWatch implements ScanHandler {
  private logged = 0;
  lastInputT = 0;

  constructor(
    private readonly engine: ReplayEngine,
    private readonly relay: EffectsRelay,
  ) {}

  problem(problem: Parameters<ScanHandler["problem"]>[0]): void {
    this.engine.problem(problem);
  }

  record(record: LogRecord): boolean {
    if (record.kind === "transition") this.logged++;
    else {
      this.relay.current = [];
      this.logged = 0;
      this.lastInputT = record.t;
    }
    return this.engine.record(record);
  }

  transitionLine(...args: Parameters<ScanHandler["transitionLine"]>): boolean {
    this.logged++;
    return this.engine.transitionLine(...args);
  }

  /** What the core did for the last input beyond what the log holds. */
  unlogged(): TransitionFacts[] {
    return this.relay.current.slice(this.logged);
  }
}

function transitionRecord(facts: TransitionFacts, seq: number, t: number): TransitionRecord {
  const record: TransitionRecord = { actor: ACTOR, seq, t, kind: "transition", machine: facts.machine, id: facts.id, event: facts.event, from: facts.from, to: facts.to };
  if (facts.why !== undefined) record.why = facts.why;
  return record;
}
