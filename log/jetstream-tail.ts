/**
 * Where an actor's log in JetStream ends, for a writer taking it up: the log's last message
 * (jetstream-chain.ts: foreign messages on the subject are not the log), and the subject's
 * last message of any kind, which the writer's next publish must name as the expected last
 * subject sequence. Read headers only (an ordered consumer with `headers_only`), from the
 * start of the subject or from a message known to be the log's.
 */
import type { JetStreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import { orderedLogConsumer } from "./jetstream-elections.js";
import { bodyPreview, LogChain } from "./jetstream-chain.js";
import { actorSubject, logStreamName, MSG_ID_HEADER, PART_HEADER } from "./jetstream-layout.js";
import { pullMessages, storedMessages } from "./jetstream-reader.js";
import type { LogProblem } from "./types.js";

export interface LogTail {
  /** Stream sequence of the log's last message (0: the log is empty). */
  tail: number;
  /** Stream sequence of the subject's last message, the log's or foreign (0: none). */
  subjectLast: number;
  /** Foreign messages on the subject after `from` (each as a `foreign` problem). */
  foreign: LogProblem[];
}

/** Foreign messages whose start is fetched for the report; past that they are described by their headers. */
const PREVIEWS = 20;
const SIZE_HEADER = "Nats-Msg-Size";

/**
 * Reads `actor`'s subject to find its log's tail. `from`: the stream sequence of a message
 * known to be the log's (where reading starts after); by default the whole subject is read.
 */
export async function findLogTail(nc: NatsConnection, jsm: JetStreamManager, cluster: string, actor: string, from = 0): Promise<LogTail> {
  const subject = actorSubject(cluster, actor);
  const stream = logStreamName(cluster);
  const result: LogTail = { tail: from, subjectLast: from, foreign: [] };
  const last = await jsm.streams.getMessage(stream, { last_by_subj: subject });
  if (last === null || last.seq <= from) return result;
  const { deleted } = await storedMessages(jsm, cluster, subject);
  const chain = new LogChain(actor, subject, deleted, { tail: from });
  const consumer = await orderedLogConsumer(nc, stream, subject, { afterSeq: from, headersOnly: true });
  // Headers only: a message is a few hundred bytes, whatever its body.
  const pull = 4 * pullMessages(nc.info?.max_payload);
  const messages = await consumer.consume({ max_messages: pull, threshold_messages: Math.floor(pull / 4) });
  try {
    for await (const m of messages) {
      const headers = m.headers;
      result.subjectLast = m.seq;
      const verdict = chain.classify({
        streamSeq: m.seq,
        msgId: headers?.get(MSG_ID_HEADER) || undefined,
        part: headers?.get(PART_HEADER) || undefined,
        size: Number(headers?.get(SIZE_HEADER) || 0),
      });
      if (!verdict.chain) result.foreign.push(verdict.problem);
      if (m.seq >= last.seq || m.info.pending === 0) break;
    }
  } finally {
    messages.stop();
  }
  result.tail = chain.tail;
  await describeForeign(jsm, stream, result);
  return result;
}

/** The start of each foreign message's body, for its problem (the scan read headers only). */
async function describeForeign(jsm: JetStreamManager, stream: string, result: LogTail): Promise<void> {
  for (const [i, problem] of result.foreign.entries()) {
    if (i >= PREVIEWS) break;
    const stored = await jsm.streams.getMessage(stream, { seq: problem.streamSeq! }).catch(() => null);
    if (stored !== null) problem.message += bodyPreview(stored.data);
  }
}
