/**
 * Registers a process as a NATS service (the micro protocol: `$SRV.PING|INFO|STATS`), so
 * `nats micro ls|info|stats` and any service client see natsched's scheduler and workers.
 * It is plain core NATS, so it works on every server version natsched supports (2.9+).
 */
import type { NatsConnection } from "@nats-io/transport-node";
import { Svcm, type Service } from "@nats-io/services";
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

export async function registerService(nc: NatsConnection, spec: ServiceSpec): Promise<Service> {
  const service = await new Svcm(nc).add({
    name: `natsched-${spec.kind}`,
    version: packageVersion(),
    description: spec.kind === "scheduler" ? `natsched scheduler of cluster ${spec.cluster}` : `natsched worker ${spec.name} of cluster ${spec.cluster}`,
    metadata: { cluster: spec.cluster, name: spec.name },
    statsHandler: () => Promise.resolve(spec.stats()),
  });
  service.addEndpoint("status", {
    subject: spec.statusSubject,
    metadata: { cluster: spec.cluster },
    handler: (error, msg) => {
      if (error === null) msg.respond(JSON.stringify(spec.stats()));
    },
  });
  return service;
}
