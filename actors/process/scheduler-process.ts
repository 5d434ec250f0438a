/** A scheduler as its own process on NATS: what `natsched scheduler` runs. */
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Service } from "@nats-io/services";
import type { Config } from "../../machines/config.js";
import { BadOptionError, NatschedError } from "../../machines/errors.js";
import { FileLogSink } from "../../replay/file-log.js";
import { NatsTransport } from "../../transport/nats.js";
import type { NatsConnectOptions } from "../../transport/nats-connect.js";
import type { ResendOptions } from "../../transport/nats-resend.js";
import { subjects } from "../../transport/subjects.js";
import { realClock } from "../clock.js";
import { loadConfig } from "../config-loader.js";
import { SchedulerActor } from "../scheduler-actor.js";
import { tasksByState } from "../scheduler-queries.js";
import { registerService } from "./services.js";
import { answers } from "./wait-for.js";

export interface SchedulerProcessOptions {
  nats: NatsConnectOptions;
  cluster: string;
  /** Event log file; false for none. Default: a new file in the temp dir. */
  log?: string | false;
  /** Config file (default: natsched.config.* in the cwd), and settings over it. */
  /** false: no config file at all. */
  configFile?: string | false;
  config?: Partial<Config>;
  /** Register as a NATS service. Default true. */
  service?: boolean;
  resend?: ResendOptions | false;
  onError?: (error: unknown) => void;
}

export class SchedulerProcess {
  private closing: Promise<void> | undefined;

  private constructor(
    readonly cluster: string,
    readonly transport: NatsTransport,
    readonly actor: SchedulerActor,
    readonly log: FileLogSink | null,
    private readonly service: Service | null,
  ) {}

  static async start(opts: SchedulerProcessOptions): Promise<SchedulerProcess> {
    checkClusterName(opts.cluster);
    const config = loadConfig({ overrides: opts.config ?? {}, ...(opts.configFile !== undefined ? { file: opts.configFile } : {}) });
    const s = subjects(opts.cluster);
    const transport = await NatsTransport.connect({
      name: `natsched-scheduler-${opts.cluster}`,
      ...opts.nats,
      ...(opts.resend !== undefined ? { resend: opts.resend } : {}),
      ...(opts.onError ? { onError: opts.onError } : {}),
    });
    let log: FileLogSink | null = null;
    try {
      if (await answers(transport, s.query, { op: "status" }, 500)) {
        throw new NatschedError("BAD_OPTION", `a scheduler for cluster ${opts.cluster} is already running on this NATS server`);
      }
      const path = opts.log ?? join(tmpdir(), `natsched-${opts.cluster}-${Date.now()}.natlog`);
      log = path === false ? null : await FileLogSink.open(path, { meta: { cluster: opts.cluster } });
      const actor = new SchedulerActor({ cluster: opts.cluster, transport, config, clock: realClock, log, ...(opts.onError ? { onError: opts.onError } : {}) });
      actor.start();
      const service =
        opts.service === false
          ? null
          : await registerService(transport.nc, {
              kind: "scheduler",
              cluster: opts.cluster,
              name: "scheduler",
              statusSubject: `natsched.${opts.cluster}.status.scheduler`,
              stats: () => schedulerStats(opts.cluster, actor),
            });
      return new SchedulerProcess(opts.cluster, transport, actor, log, service);
    } catch (error) {
      await log?.close().catch(() => undefined);
      await transport.close();
      throw error;
    }
  }

  get logPath(): string | undefined {
    return this.log?.location;
  }

  /** Stop serving, record the close, flush the log and leave NATS. Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      await this.service?.stop().catch(() => undefined);
      this.actor.close();
      await this.transport.close();
      await this.log?.close();
    })();
    return this.closing;
  }
}

export function schedulerStats(cluster: string, actor: SchedulerActor) {
  const core = actor.core;
  let processing = 0;
  for (const ws of core.running) processing += ws.processing.size;
  return {
    cluster,
    state: core.state,
    tasks: tasksByState(core),
    workers: core.running.length,
    threads: core.totalNthreads,
    processing,
    queued: core.queued.size,
    noWorker: core.unrunnable.size,
    clients: core.clients.size,
  };
}

export function checkClusterName(cluster: string): void {
  if (typeof cluster !== "string" || !/^[A-Za-z0-9_-]+$/.test(cluster)) {
    throw new BadOptionError("cluster", `cluster names use letters, digits, '-' and '_', got ${JSON.stringify(cluster)}`);
  }
}
