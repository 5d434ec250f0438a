/**
 * The ordered consumer a log reader reads through, created again while its creation times
 * out. On a JetStream cluster that lost a server, nats-server 2.9 answers no consumer
 * creation until the others have elected a new meta leader (several seconds after the old
 * one died), and afterwards places an ephemeral consumer on any of the stream's peers, the
 * dead one included, whose creation then never gets an answer: each new attempt is placed
 * again, at random. Without this, reading a log (a scheduler resuming from it, the log
 * tools) failed about one time in three while a server of the cluster was down.
 */
import { jetstream, type Consumer } from "@nats-io/jetstream";
import { errors as natsErrors, type NatsConnection } from "@nats-io/transport-node";

export interface ConsumerRetryOptions {
  /** Milliseconds one creation may take before it is tried again. Default 2000. */
  attemptMs?: number;
  /** Milliseconds after which a creation that keeps timing out fails. Default 30000. */
  deadlineMs?: number;
}

export async function orderedLogConsumer(nc: NatsConnection, stream: string, subject: string, opts: ConsumerRetryOptions = {}): Promise<Consumer> {
  const attemptMs = opts.attemptMs ?? 2000;
  const deadline = Date.now() + (opts.deadlineMs ?? 30_000);
  for (;;) {
    try {
      return await jetstream(nc, { timeout: attemptMs }).consumers.get(stream, { filter_subjects: subject });
    } catch (error) {
      if (!timedOut(error) || Date.now() + attemptMs > deadline) throw error;
    }
  }
}

function timedOut(error: unknown): boolean {
  return error instanceof natsErrors.TimeoutError || (error instanceof natsErrors.RequestError && error.cause instanceof natsErrors.TimeoutError);
}
