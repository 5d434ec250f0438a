/**
 * A scheduler or worker process for SOAK on NATS: the same SchedulerProcess / WorkerProcess
 * that `natsched scheduler` and `natsched worker` run, plus an answer on
 * `natsched-bench.<cluster>.soak.<name>` with the process's counts (bench/soak-tables.ts)
 * and, when asked, its heap after a full GC. The status endpoint (natsched.<c>.status.*)
 * reports task counts but neither the other tables nor a heap after GC, which only a process
 * started with --expose-gc can force; the benchmark asks here instead of adding a forced GC
 * to a production endpoint.
 *
 *   node --expose-gc --import tsx bench/soak-node.ts '<json: { role, url, cluster, name?, log? }>'
 *
 * Prints SOAK_NODE_READY once serving; SIGTERM closes it.
 */
import { SchedulerProcess } from "../actors/process/scheduler-process.js";
import { WorkerProcess } from "../actors/process/worker-process.js";
import { FUNCTIONS } from "./functions.js";
import { probeSubject, SOAK_NODE_READY, type ProbeAnswer, type SoakNodeOptions } from "./soak-probe.js";
import { heapAfterGcMB, schedulerCounts, workerCounts, type ActorCounts } from "./soak-tables.js";

async function main(): Promise<void> {
  const o = JSON.parse(process.argv[2] ?? "null") as SoakNodeOptions;
  const onError = (error: unknown): void => console.error(`soak ${o.role}${o.name ? ` ${o.name}` : ""}:`, (error as Error)?.message ?? error);
  let counts: () => ActorCounts;
  let close: () => Promise<void>;
  let nc;
  if (o.role === "scheduler") {
    const p = await SchedulerProcess.start({ nats: { servers: o.url }, cluster: o.cluster, log: o.log, configFile: false, onError });
    counts = () => schedulerCounts(p.actor);
    close = () => p.close();
    nc = p.transport.nc;
  } else {
    const p = await WorkerProcess.start({
      nats: { servers: o.url },
      cluster: o.cluster,
      name: o.name!,
      nthreads: o.nthreads ?? 1,
      functions: FUNCTIONS,
      ...(o.log !== false ? { log: o.log } : {}),
      configFile: false,
      schedulerTimeout: 30_000,
      onError,
    });
    counts = () => workerCounts(p.actor);
    close = () => p.close();
    nc = p.transport.nc;
  }
  nc.subscribe(probeSubject(o.cluster, o.role === "scheduler" ? "scheduler" : o.name!), {
    callback: (error, msg) => {
      if (error !== null) return;
      const request = msg.data.length > 0 ? (msg.json() as { gc?: boolean }) : {};
      const answer: ProbeAnswer = { counts: counts(), ...(request.gc ? { heapMB: heapAfterGcMB() } : {}) };
      msg.respond(JSON.stringify(answer));
    },
  });
  await nc.flush();
  process.on("SIGTERM", () => {
    void close()
      .catch(onError)
      .finally(() => process.exit(0));
  });
  process.stdout.write(SOAK_NODE_READY + "\n");
}

await main();
