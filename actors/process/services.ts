/**
 * Registers a process as a NATS service (the micro protocol, ADR-32: `$SRV.PING|INFO|STATS`),
 * so `nats micro ls|info|stats` and any service client see natsched's scheduler and workers.
 * It is plain core NATS, so it works on every server version natsched supports (2.9+).
 *
 * Written here rather than taken from `@nats-io/services`: that package pins a prerelease of
 * `@nats-io/nats-core`, and npm ignores a dependency's `overrides`, so an application that
 * installed natsched got two copies of the NATS client. The protocol is three request
 * subjects and three JSON answers.
 */
import { nuid, type Msg, type NatsConnection, type Subscription } from "@nats-io/nats-core";
import { packageVersion } from "../../log/package-version.js";

export interface ServiceSpec {
  kind: "scheduler" | "worker";
  cluster: string;
  /** The worker's name, or "scheduler". */
  name: string;
  /** Subject of the service's one endpoint, which answers with `stats()`. */
  statusSubject: string;
  /** Snapshot of the process's state: the endpoint's answer and its STATS `data`. */
  stats: () => unknown;
}

/** A registered service: `stop()` unsubscribes it. */
export interface Service {
  readonly id: string;
  stop(): Promise<void>;
}

/** The queue group of service endpoints (the protocol's default), so one instance answers a request. */
const QUEUE = "q";
const VERBS = ["PING", "INFO", "STATS"] as const;
type Verb = (typeof VERBS)[number];

export async function registerService(nc: NatsConnection, spec: ServiceSpec): Promise<Service> {
  const name = `natsched-${spec.kind}`;
  const id = nuid.next();
  const identity = {
    name,
    id,
    version: packageVersion(),
    metadata: { cluster: spec.cluster, name: spec.name },
  };
  const description = spec.kind === "scheduler" ? `natsched scheduler of cluster ${spec.cluster}` : `natsched worker ${spec.name} of cluster ${spec.cluster}`;
  const started = new Date().toISOString();
  const endpoint = { name: "status", subject: spec.statusSubject, queue_group: QUEUE, metadata: { cluster: spec.cluster } };
  const counts = { requests: 0, errors: 0, lastError: "", nanos: 0 };

  const answer = (verb: Verb): unknown => {
    switch (verb) {
      case "PING":
        return { type: "io.nats.micro.v1.ping_response", ...identity };
      case "INFO":
        return { type: "io.nats.micro.v1.info_response", ...identity, description, endpoints: [endpoint] };
      case "STATS":
        return {
          type: "io.nats.micro.v1.stats_response",
          ...identity,
          started,
          endpoints: [
            {
              ...endpoint,
              num_requests: counts.requests,
              num_errors: counts.errors,
              last_error: counts.lastError,
              processing_time: counts.nanos,
              average_processing_time: counts.requests === 0 ? 0 : Math.round(counts.nanos / counts.requests),
              data: spec.stats(),
            },
          ],
        };
    }
  };

  const subscriptions: Subscription[] = [];
  for (const verb of VERBS) {
    for (const subject of [`$SRV.${verb}`, `$SRV.${verb}.${name}`, `$SRV.${verb}.${name}.${id}`]) {
      subscriptions.push(
        nc.subscribe(subject, {
          callback: (error, msg) => {
            if (error === null) respond(msg, () => answer(verb));
          },
        }),
      );
    }
  }
  subscriptions.push(
    nc.subscribe(spec.statusSubject, {
      queue: QUEUE,
      callback: (error, msg) => {
        if (error !== null) return;
        const t0 = process.hrtime.bigint();
        counts.requests++;
        try {
          msg.respond(JSON.stringify(spec.stats()));
        } catch (e) {
          counts.errors++;
          counts.lastError = e instanceof Error ? e.message : String(e);
        }
        counts.nanos += Number(process.hrtime.bigint() - t0);
      },
    }),
  );
  // The subscriptions reach the server before the caller announces the process.
  await nc.flush();
  return {
    id,
    async stop() {
      for (const s of subscriptions) s.unsubscribe();
      if (!nc.isClosed()) await nc.flush();
    },
  };
}

/** Answer a request; a failure to answer (the requester left) is not the service's problem. */
function respond(msg: Msg, body: () => unknown): void {
  if (msg.reply === undefined || msg.reply === "") return;
  try {
    msg.respond(JSON.stringify(body()));
  } catch {
    // The connection closed under us: nothing to answer on.
  }
}
