/**
 * JetStream API calls that wait out a leader election. When a server of a JetStream cluster
 * dies, the others elect new leaders: the meta leader, which answers account info and
 * creates consumers, and a leader for each stream the dead one led, which answers stream
 * info and stores messages; each takes seconds after the kill.
 * Meanwhile those requests time out, or are answered "JetStream system temporarily
 * unavailable" (10008), where a server without JetStream, or a user not allowed the API, is
 * refused at once and for good. So those two are tried again, until a deadline; anything
 * else fails as before. Without this, a scheduler started again
 * while its cluster elected (a host crash takes a scheduler and its nats-server at once)
 * found "no JetStream" and began a new run, and the log tools failed.
 */
import { DeliverPolicy, jetstream, JetStreamApiError, jetstreamManager, type Consumer, type JetStreamManager } from "@nats-io/jetstream";
import { errors as natsErrors, type NatsConnection } from "@nats-io/transport-node";

export interface ElectionWait {
  /** Milliseconds one attempt may take before it is tried again. Default 2000. */
  attemptMs?: number;
  /** Milliseconds after which a call that keeps timing out fails with its timeout. Default 30000. */
  deadlineMs?: number;
}

/** `call(attemptMs)`, tried again while JetStream elects (a timeout, or 10008), until the deadline. */
export async function waitingOutElections<T>(call: (attemptMs: number) => Promise<T>, opts: ElectionWait = {}): Promise<T> {
  const attemptMs = opts.attemptMs ?? 2000;
  const deadline = Date.now() + (opts.deadlineMs ?? 30_000);
  for (;;) {
    try {
      return await call(attemptMs);
    } catch (error) {
      if (!electing(error) || Date.now() + attemptMs > deadline) throw error;
      if (error instanceof JetStreamApiError) await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}

/** A JetStream manager, once the account's JetStream answers (the API's own timeout for later calls). */
export async function jetStreamManagerAfterElections(nc: NatsConnection, opts: ElectionWait = {}): Promise<JetStreamManager> {
  await waitingOutElections((timeout) => jetstreamManager(nc, { timeout }), opts);
  return jetstreamManager(nc, { checkAPI: false });
}

/**
 * The ordered consumer a log reader reads through. While a server is down, nats-server 2.9
 * may place an ephemeral consumer on it (any of the stream's peers, at random), and that
 * creation never gets an answer: each new attempt is placed again. `afterSeq`: start after
 * that stream sequence; `headersOnly`: messages without their bodies.
 */
export function orderedLogConsumer(
  nc: NatsConnection,
  stream: string,
  subject: string,
  opts: ElectionWait & { afterSeq?: number; headersOnly?: boolean } = {},
): Promise<Consumer> {
  const start = opts.afterSeq === undefined || opts.afterSeq <= 0 ? {} : { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: opts.afterSeq + 1 };
  const config = { filter_subjects: subject, ...start, ...(opts.headersOnly ? { headers_only: true } : {}) };
  // A copy per attempt: the client writes the consumer's name into the options it is given,
  // and an attempt under a name already asked for is the same consumer, on the same peer.
  return waitingOutElections((timeout) => jetstream(nc, { timeout }).consumers.get(stream, { ...config }), opts);
}

/** JetStream's answer while its cluster has no leader for the request. */
const CLUSTER_NOT_AVAILABLE = 10008;

function electing(error: unknown): boolean {
  if (error instanceof JetStreamApiError) return error.code === CLUSTER_NOT_AVAILABLE;
  return error instanceof natsErrors.TimeoutError || (error instanceof natsErrors.RequestError && error.cause instanceof natsErrors.TimeoutError);
}
