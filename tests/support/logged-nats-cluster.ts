/**
 * A real nats-server (no JetStream), a scheduler and one worker of 2 threads as `natsched
 * scheduler` / `natsched worker` run them, each logging to a file in a temp dir: the setup of
 * the NATS tests whose logs must replay after the run (cancel, retries).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SchedulerProcess } from "../../actors/process/scheduler-process.js";
import { WorkerProcess } from "../../actors/process/worker-process.js";
import type { TaskFunctions } from "../../actors/functions.js";
import { NatsServer } from "./nats-server.js";

export interface LoggedNatsCluster {
  server: NatsServer;
  scheduler: SchedulerProcess;
  worker: WorkerProcess;
  schedulerLog: string;
  workerLog: string;
  /** What `connectClient` takes to join the cluster. */
  clientOptions: { servers: string; env: Record<string, string>; cluster: string; requestTimeout: number };
  /** Worker, scheduler (each once, whatever a test closed already), then the server; the logs' temp dir goes too. */
  close(): Promise<void>;
}

export async function startLoggedNatsCluster(cluster: string, functions: TaskFunctions): Promise<LoggedNatsCluster> {
  const dir = mkdtempSync(join(tmpdir(), `natsched-${cluster}-`));
  const schedulerLog = join(dir, "scheduler.natlog");
  const workerLog = join(dir, "worker.natlog");
  const server = await NatsServer.start({ jetstream: false });
  const nats = { servers: server.url, env: {} };
  const scheduler = await SchedulerProcess.start({ nats, cluster, log: schedulerLog, configFile: false, service: false });
  const worker = await WorkerProcess.start({ nats, cluster, name: "w1", nthreads: 2, functions, log: workerLog, configFile: false, service: false });
  return {
    server,
    scheduler,
    worker,
    schedulerLog,
    workerLog,
    clientOptions: { servers: server.url, env: {}, cluster, requestTimeout: 5000 },
    async close() {
      await worker.close();
      await scheduler.close();
      await server.dispose();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
