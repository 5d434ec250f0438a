/**
 * A LogSink writing to JetStream: one stream per cluster, one subject per actor (see
 * jetstream-layout.ts and docs/nats.md).
 *
 * `append` serialises the record at once into its actor's batch (jetstream-messages.ts); a
 * setImmediate seals the batches, so the records of one turn of the event loop travel in one
 * message per actor (group commit), and while a message is in flight new records gather into
 * the next one. Every message carries
 * - `Nats-Msg-Id: <actor>:<seq of its first record>@<link>`, `link` being the stream
 *   sequence of the actor's log message before it: a message re-sent after a lost ack is
 *   stored once (the server answers "duplicate" with the stored sequence), and the actor's
 *   messages form a chain that readers tell from anything else published on the subject
 *   (jetstream-chain.ts);
 * - `Nats-Expected-Last-Subject-Sequence`: the stream sequence of the subject's last message,
 *   so the server refuses it if anyone else wrote to the actor's subject since.
 * A refused message makes the writer look at what was written after its last one: a message
 * of the actor's log it did not write (another writer took the log over) stops the sink
 * (LogConflictError: one writer per actor); foreign messages (not the log's) are reported
 * to `onForeign` and the message goes again, expecting the subject's new last message.
 * The expectation needs the previous message's sequence, which only its ack tells, so each
 * actor has one message in flight; actors write in parallel, and a message holds up to
 * max_payload of records, so a busy actor still writes large batches per round trip. Acks are
 * checked; a timeout or a server that went away means re-sending the same message (same id,
 * same expectation) until it is stored; anything else stops the sink for good (`failure`).
 */
import { jetstream, JetStreamApiError, type JetStreamClient, type JetStreamManager, type MsgRequest } from "@nats-io/jetstream";
import { headers as natsHeaders, type NatsConnection } from "@nats-io/transport-node";
import { ClosedError, LogConflictError, LogCorruptError, NatschedError, TimeoutError } from "../machines/errors.js";
import { decodeRecordLine } from "./codec.js";
import { LogChain } from "./jetstream-chain.js";
import { actorSubject, formatJetStreamLocation, linkedMsgId, logStreamName, MSG_ID_HEADER, PART_HEADER, parseLogMsgId } from "./jetstream-layout.js";
import { abandonMarker, ActorBatcher, parsePart, type LogMessage } from "./jetstream-messages.js";
import { ensureLogStream, logStreamManager, type LogStreamOptions } from "./jetstream-stream.js";
import { findLogTail } from "./jetstream-tail.js";
import type { LogProblem, LogRecord, LogSink } from "./types.js";

export interface JetStreamLogSinkOptions extends LogStreamOptions {
  /** The connection to write on (a process's own, usually). */
  nc: NatsConnection;
  cluster: string;
  /** Close `nc` when the sink closes. Default false. */
  ownsConnection?: boolean;
  /** Milliseconds to wait for an ack before re-sending the message. Default 5000. */
  ackTimeout?: number;
  /** Milliseconds `close` waits for the last acks before giving up. Default 15000. */
  closeTimeout?: number;
  /** Told once when the sink stops writing for good (a second writer, a refused write). */
  onError?: (error: unknown) => void;
  /**
   * Told of each foreign message found on an actor's subject after the writer's own (as a
   * `foreign` problem); the sink skips it and goes on. Those found when claiming an actor's
   * log are in the claim instead.
   */
  onForeign?: (problem: LogProblem) => void;
}

/** Where an actor's log stands in the stream, as its writer found it. */
export interface ActorClaim {
  actor: string;
  /** The seq the actor's next record must have (0 for a new actor). */
  nextSeq: number;
  /** Stream sequence of the subject's last message, the log's or foreign (0: none): what the next write expects. */
  lastStreamSeq: number;
  /** Stream sequence of the log's last message (0: none): what the next message links to. */
  logTail: number;
  /** Foreign messages on the actor's subject (jetstream-chain.ts), skipped. */
  foreign: LogProblem[];
}

/** Where an actor's log is known to stand already (a scheduler's snapshot): claiming reads the subject after it only. */
export interface ClaimFrom {
  /** Stream sequence of a message of the actor's log. */
  logTail: number;
}

const WRONG_LAST_SEQUENCE = 10071;
/** Room left in a message for the headers. */
const HEADER_ROOM = 8 * 1024;
const DEFAULT_MAX_PAYLOAD = 1024 * 1024;

interface ActorLog {
  batcher: ActorBatcher;
  /** Sealed messages in order; the head is in flight when `sending`. */
  queue: LogMessage[];
  sending: boolean;
  claim: Promise<ActorClaim> | null;
  claimed: ActorClaim | null;
  /** Expectation for the next message: the subject's last stream sequence. */
  lastStreamSeq: number;
  /** The log's last message, which the next one links to. */
  logTail: number;
  /** Seq of the first record appended by this sink, and of the last. */
  firstAppendedSeq: number | undefined;
  lastAppendedSeq: number | undefined;
}

interface FlushWaiter {
  target: number;
  resolve: () => void;
  reject: (error: unknown) => void;
}

export class JetStreamLogSink implements LogSink {
  /** Connects the sink to the cluster's log stream, creating the stream (and its header) if missing. */
  static async open(opts: JetStreamLogSinkOptions): Promise<JetStreamLogSink> {
    const jsm = await logStreamManager(opts.nc);
    const info = await ensureLogStream(jsm, opts.cluster, opts);
    const maxMsg = info.config.max_msg_size !== undefined && info.config.max_msg_size > 0 ? info.config.max_msg_size : Infinity;
    return new JetStreamLogSink(opts, jsm, maxMsg, info.config.num_replicas ?? 1);
  }

  readonly location: string;
  private readonly js: JetStreamClient;
  private readonly stream: string;
  private readonly actors = new Map<string, ActorLog>();
  private appendCount = 0;
  private durableCount = 0;
  private readonly listeners = new Set<(durable: number) => void>();
  private waiters: FlushWaiter[] = [];
  private tickScheduled = false;
  private failure: { error: unknown } | undefined;
  private closing: Promise<void> | undefined;
  private readonly sealed: LogMessage[] = [];

  private constructor(
    private readonly opts: JetStreamLogSinkOptions,
    private readonly jsm: JetStreamManager,
    private readonly maxMsgSize: number,
    /** Replicas of the log's stream. */
    readonly replicas: number,
  ) {
    this.js = jetstream(opts.nc, { timeout: opts.ackTimeout ?? 5000 });
    this.stream = logStreamName(opts.cluster);
    this.location = formatJetStreamLocation(opts.nc.getServer(), opts.cluster);
  }

  get cluster(): string {
    return this.opts.cluster;
  }

  /** Records appended so far. */
  get appended(): number {
    return this.appendCount;
  }

  /** Records appended so far of which every one, and every one before it, is stored. */
  get durable(): number {
    return this.durableCount;
  }

  /** Why the sink stopped writing, if it did. */
  get failed(): unknown {
    return this.failure?.error;
  }

  /** Calls `listener(durable)` each time `durable` advances; returns the unsubscribe. */
  onDurable(listener: (durable: number) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Takes up `actor`'s log: finds where it stands in the stream (voiding a record its last
   * writer left unfinished) and returns the seq its next record must have. Appending for an
   * actor claims it implicitly; claim first when the writer must know the seq to start at.
   */
  claim(actor: string, from?: ClaimFrom): Promise<ActorClaim> {
    const log = this.actorLog(actor);
    log.claim ??= this.findTail(actor, from?.logTail ?? 0).then(
      (claim) => {
        log.claimed = claim;
        log.lastStreamSeq = claim.lastStreamSeq;
        log.logTail = claim.logTail;
        this.checkFirstSeq(log);
        this.pump(log);
        return claim;
      },
      (error: unknown) => {
        this.fail(error);
        throw error;
      },
    );
    return log.claim;
  }

  append(record: LogRecord): void {
    if (this.closing) throw new ClosedError(`log ${this.location}`);
    if (this.failure) return;
    const log = this.actorLog(record.actor);
    if (log.firstAppendedSeq === undefined) {
      log.firstAppendedSeq = record.seq;
      if (log.claim === null) void this.claim(record.actor).catch(() => undefined);
      else this.checkFirstSeq(log);
      if (this.failure) return;
    }
    log.lastAppendedSeq = record.seq;
    log.batcher.add(record, this.appendCount++, this.sealed);
    this.enqueueSealed();
    if (!this.tickScheduled) {
      this.tickScheduled = true;
      setImmediate(this.onTick);
    }
  }

  /**
   * Where `actor`'s log stands in this sink: the seq of the last record appended (undefined:
   * none yet), and the stream sequence of its last message stored (all of whose records were
   * appended before now).
   */
  position(actor: string): { lastAppended: number | undefined; storedTail: number } {
    const log = this.actors.get(actor);
    return { lastAppended: log?.lastAppendedSeq, storedTail: log?.logTail ?? 0 };
  }

  /** Resolves once everything appended so far is stored; rejects if the sink failed. */
  flush(): Promise<void> {
    this.sealAll();
    if (this.failure) return Promise.reject(this.failure.error);
    const target = this.appendCount;
    this.advanceDurable();
    if (this.durableCount >= target) return Promise.resolve();
    return new Promise((resolve, reject) => this.waiters.push({ target, resolve, reject }));
  }

  /** Flushes (waiting up to closeTimeout) and stops; later appends throw ClosedError. */
  close(): Promise<void> {
    this.closing ??= this.finish();
    return this.closing;
  }

  private async finish(): Promise<void> {
    const timeoutMs = this.opts.closeTimeout ?? 15_000;
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      await Promise.race([
        this.flush(),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new TimeoutError(`log ${this.location}: ${this.appendCount - this.durableCount} record(s) not stored after ${timeoutMs} ms`)), timeoutMs);
        }),
      ]);
    } finally {
      clearTimeout(timer);
      this.failure ??= { error: new ClosedError(`log ${this.location}`) };
      if (this.opts.ownsConnection) await this.opts.nc.close().catch(() => undefined);
    }
  }

  /** An actor's records must continue its log where the stream has it: no seq written twice. */
  private checkFirstSeq(log: ActorLog): void {
    const claim = log.claimed;
    if (claim === null || log.firstAppendedSeq === undefined || log.firstAppendedSeq === claim.nextSeq) return;
    this.fail(
      new LogConflictError(
        claim.actor,
        `the stream holds its records up to seq ${claim.nextSeq - 1}, and this writer started at seq ${log.firstAppendedSeq}: a writer continues at seq ${claim.nextSeq}`,
      ),
    );
  }

  private actorLog(actor: string): ActorLog {
    let log = this.actors.get(actor);
    if (log === undefined) {
      log = {
        batcher: new ActorBatcher(this.opts.cluster, actor, this.maxBody()),
        queue: [],
        sending: false,
        claim: null,
        claimed: null,
        lastStreamSeq: 0,
        logTail: 0,
        firstAppendedSeq: undefined,
        lastAppendedSeq: undefined,
      };
      actorSubject(this.opts.cluster, actor);
      this.actors.set(actor, log);
    }
    return log;
  }

  private maxBody(): number {
    return Math.min(this.opts.nc.info?.max_payload ?? DEFAULT_MAX_PAYLOAD, this.maxMsgSize) - HEADER_ROOM;
  }

  /**
   * End of a turn: an actor with nothing in flight sends what gathered; the others keep
   * gathering until their ack comes back (group commit: one message per round trip).
   */
  private readonly onTick = (): void => {
    this.tickScheduled = false;
    this.sealAll(true);
  };

  private sealAll(onlyIdle = false): void {
    const maxBody = this.maxBody();
    for (const log of this.actors.values()) {
      if (onlyIdle && (log.sending || log.queue.length > 0)) continue;
      log.batcher.seal(this.sealed);
      log.batcher.limit(maxBody);
    }
    this.enqueueSealed();
  }

  private enqueueSealed(): void {
    if (this.sealed.length === 0) return;
    for (const message of this.sealed) {
      const log = this.actors.get(message.actor)!;
      log.queue.push(message);
      this.pump(log);
    }
    this.sealed.length = 0;
  }

  private pump(log: ActorLog): void {
    if (log.sending || this.failure || log.claimed === null || log.queue.length === 0) return;
    log.sending = true;
    void this.send(log, log.queue[0]!);
  }

  /** Sends `message` until it is stored (or the sink fails), then the next one. */
  private async send(log: ActorLog, message: LogMessage): Promise<void> {
    // The link stays what it is across attempts (foreign messages are not the log): the same id, de-duplicated.
    const msgId = linkedMsgId(message.msgId, log.logTail);
    for (let attempt = 1; !this.failure; attempt++) {
      let stored: number | undefined;
      let again = false;
      try {
        const ack = await this.js.publish(message.subject, message.body, {
          msgID: msgId,
          expect: { lastSubjectSequence: log.lastStreamSeq },
          ...(message.part !== undefined ? { headers: partHeaders(message.part) } : {}),
        });
        if (ack.duplicate && attempt === 1) {
          throw new LogConflictError(message.actor, `another writer already stored the message ${msgId} (stream seq ${ack.seq}): this writer stops`);
        }
        stored = ack.seq;
      } catch (error) {
        if (error instanceof LogConflictError) {
          this.fail(error);
          break;
        }
        const outcome = await this.afterFailedPublish(error, log, message, msgId).catch((e: unknown) => ({ fatal: e }));
        if ("fatal" in outcome) {
          this.fail(outcome.fatal);
          break;
        }
        stored = outcome.stored;
        again = outcome.again === true;
      }
      if (stored !== undefined) {
        log.logTail = stored;
        if (stored > log.lastStreamSeq) log.lastStreamSeq = stored;
        log.queue.shift();
        log.sending = false;
        if (log.queue.length === 0) {
          log.batcher.seal(this.sealed);
          this.enqueueSealed();
        }
        this.advanceDurable();
        this.pump(log);
        return;
      }
      if (!again) await new Promise((resolve) => setTimeout(resolve, Math.min(100 * 2 ** (attempt - 1), 2000)));
    }
    log.sending = false;
  }

  /**
   * A publish that did not come back acknowledged: stored after all (a lost ack), refused
   * because something was written to the subject since the writer's last message (foreign
   * messages are skipped and it goes `again`; the log's next message by another writer is
   * fatal), to be re-sent after a pause (a timeout), or fatal.
   */
  private async afterFailedPublish(
    error: unknown,
    log: ActorLog,
    message: LogMessage,
    msgId: string,
  ): Promise<{ stored: number | undefined; again?: boolean } | { fatal: unknown }> {
    if (error instanceof JetStreamApiError) {
      if (error.code !== WRONG_LAST_SEQUENCE) return { fatal: new NatschedError("PROTOCOL", `log ${this.location}: JetStream refused a write of ${message.actor}: ${error.message}`, { cause: error }) };
      return this.writtenSince(log, message, msgId);
    }
    if (this.opts.nc.isClosed()) return { fatal: new ClosedError(`NATS connection of log ${this.location}`) };
    return { stored: undefined };
  }

  /**
   * What was written to the actor's subject after the writer's expectation: this message
   * itself (an earlier attempt whose ack was lost), foreign messages (reported, skipped), or
   * a message of the actor's log by another writer (fatal: one writer per actor).
   */
  private async writtenSince(log: ActorLog, message: LogMessage, msgId: string): Promise<{ stored: number | undefined; again: true } | { fatal: unknown }> {
    const chain = new LogChain(message.actor, message.subject, undefined, { tail: log.logTail });
    let stored: number | undefined;
    let seen = false;
    for (let cursor = log.lastStreamSeq + 1; ; ) {
      const m = await this.jsm.streams.getMessage(this.stream, nextBySubject(message.subject, cursor));
      if (m === null) break;
      seen = true;
      cursor = m.seq + 1;
      log.lastStreamSeq = m.seq;
      const id = m.header?.get(MSG_ID_HEADER) || undefined;
      if (stored === undefined && id === msgId) {
        stored = m.seq;
        chain.tail = m.seq;
        continue;
      }
      const verdict = chain.classify({ streamSeq: m.seq, msgId: id, part: m.header?.get(PART_HEADER) || undefined, size: m.data.length, body: m.data });
      if (verdict.chain) {
        return { fatal: new LogConflictError(message.actor, `another writer appended to ${message.subject} (stream seq ${m.seq}, message id ${JSON.stringify(id)}): this writer stops`) };
      }
      this.opts.onForeign?.(verdict.problem);
    }
    if (!seen) {
      const last = await this.jsm.streams.getMessage(this.stream, { last_by_subj: message.subject });
      log.lastStreamSeq = last?.seq ?? 0;
    }
    return { stored, again: true };
  }

  private advanceDurable(): void {
    let durable = this.appendCount;
    for (const log of this.actors.values()) {
      const queued = log.queue[0]?.firstIndex;
      if (queued !== undefined && queued < durable) durable = queued;
      const pending = log.batcher.pendingFrom;
      if (pending !== undefined && pending < durable) durable = pending;
    }
    if (durable <= this.durableCount) return;
    this.durableCount = durable;
    if (this.waiters.length > 0) {
      const waiting: FlushWaiter[] = [];
      for (const waiter of this.waiters) (waiter.target <= durable ? waiter.resolve() : waiting.push(waiter));
      this.waiters = waiting;
    }
    for (const listener of this.listeners) listener(durable);
  }

  private fail(error: unknown): void {
    if (this.failure) return;
    this.failure = { error };
    for (const waiter of this.waiters) waiter.reject(error);
    this.waiters = [];
    this.opts.onError?.(error);
  }

  /**
   * Where `actor`'s log stands: its next seq, its last message, the subject's last message
   * (jetstream-tail.ts). A record its last writer left unfinished (some of its parts stored)
   * is voided first with an abandon marker.
   */
  private async findTail(actor: string, from: number): Promise<ActorClaim> {
    const found = await findLogTail(this.opts.nc, this.jsm, this.opts.cluster, actor, from);
    const claim = (nextSeq: number, logTail = found.tail, lastStreamSeq = found.subjectLast): ActorClaim => ({ actor, nextSeq, lastStreamSeq, logTail, foreign: found.foreign });
    if (found.tail === 0) return claim(0);
    const last = await this.jsm.streams.getMessage(this.stream, { seq: found.tail });
    if (last === null) throw new LogCorruptError(`${this.location}: cannot continue the log of ${actor}: its last message (stream seq ${found.tail}) is gone`);
    const partValue = last.header?.get(PART_HEADER);
    if (partValue) {
      const seq = parseLogMsgId(last.header?.get(MSG_ID_HEADER))?.seq;
      const part = parsePart(partValue);
      if (seq === undefined || part.kind === "bad") throw new LogCorruptError(`${this.location}: cannot continue the log of ${actor}: its last message (stream seq ${last.seq}) is not a record part`);
      if (part.kind === "abandon") return claim(seq);
      if (part.index === part.count - 1) return claim(seq + 1);
      const marker = abandonMarker(this.opts.cluster, actor, seq, 0);
      const ack = await this.js.publish(marker.subject, marker.body, {
        msgID: linkedMsgId(marker.msgId, found.tail),
        expect: { lastSubjectSequence: found.subjectLast },
        headers: partHeaders(marker.part!),
      });
      return claim(seq, ack.seq, ack.seq);
    }
    const body = Buffer.from(last.data);
    const end = body.length - 1;
    const start = body.lastIndexOf(0x0a, end - 1) + 1;
    const decoded = body[end] === 0x0a ? decodeRecordLine(body.subarray(start, end)) : undefined;
    if (decoded === undefined || !decoded.ok) {
      throw new LogCorruptError(`${this.location}: cannot continue the log of ${actor}: its last message (stream seq ${last.seq}) does not end with a valid record`);
    }
    return claim(decoded.record.seq + 1);
  }
}

/**
 * The subject's first message at or after stream sequence `seq`. `$JS.API.STREAM.MSG.GET`
 * takes `next_by_subj` since nats-server 2.9 (the client's type lists it for direct gets only).
 */
function nextBySubject(subject: string, seq: number): MsgRequest {
  return { next_by_subj: subject, seq } as unknown as MsgRequest;
}

function partHeaders(value: string) {
  const h = natsHeaders();
  h.set(PART_HEADER, value);
  return h;
}
