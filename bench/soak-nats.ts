/**
 * The SOAK workload's cluster on NATS: a real nats-server, the scheduler and each worker in
 * its own process (bench/soak-node.ts: SchedulerProcess / WorkerProcess, as the `natsched`
 * commands run them), clients in this process, each on its own NATS connection, made with
 * `connectClient` and closed after its round. Counts and heaps come from each process
 * (bench/soak-probe.ts); this process's heap, where the clients lived, is reported as "client".
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, unlinkSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { connectClient } from "../index.js";
import { NatsServer, stopProcess } from "./harness.js";
import { randomHex, sleep } from "./lib.js";
import type { SoakClusterOptions, SoakCluster } from "./soak-embedded.js";
import { probeSubject, SOAK_NODE_READY, type ProbeAnswer, type SoakNodeOptions } from "./soak-probe.js";
import { heapAfterGcMB } from "./soak-tables.js";
import type { SoakSnapshot } from "./soak-verdict.js";

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, "..");

function startNode(o: SoakNodeOptions): Promise<ChildProcess> {
  const child = spawn(process.execPath, ["--expose-gc", "--import", "tsx", join(HERE, "soak-node.ts"), JSON.stringify(o)], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
  const what = o.role === "scheduler" ? "soak scheduler" : `soak worker ${o.name}`;
  let out = "";
  let err = "";
  child.stderr!.on("data", (d: Buffer) => {
    err += d.toString();
    if (err.length > 20_000) err = err.slice(-10_000);
  });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${what} not ready after 60 s: ${(out + err).slice(-400)}`));
    }, 60_000);
    child.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      if (out.includes(SOAK_NODE_READY)) {
        clearTimeout(timer);
        resolve(child);
      }
    });
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited ${code ?? signal}: ${(out + err).slice(-400)}`));
    });
  });
}

export async function startNatsSoak(o: SoakClusterOptions): Promise<SoakCluster> {
  const server = await NatsServer.start();
  const cluster = `soak-${randomHex(4)}`;
  const names = Array.from({ length: o.workers }, (_, i) => `worker-${i}`);
  const logs = o.log === false ? [] : [o.log + ".scheduler", ...names.map((n) => `${o.log}.${n}`)];
  const children: ChildProcess[] = [];
  let probe: NatsConnection | null = null;
  try {
    children.push(await startNode({ role: "scheduler", url: server.url, cluster, log: o.log === false ? false : logs[0]! }));
    for (const [i, name] of names.entries()) {
      children.push(await startNode({ role: "worker", url: server.url, cluster, name, nthreads: o.threadsPerWorker, log: o.log === false ? false : logs[i + 1]! }));
    }
    probe = await connect({ servers: server.url, name: "soak-probe" });
  } catch (error) {
    await Promise.all(children.map((c) => stopProcess(c)));
    await probe?.close();
    await server.stop();
    throw error;
  }
  const nc = probe;
  const ask = async (name: string, gc: boolean): Promise<ProbeAnswer> => {
    const reply = await nc.request(probeSubject(cluster, name), JSON.stringify(gc ? { gc: true } : {}), { timeout: 30_000 });
    return reply.json<ProbeAnswer>();
  };
  const askAll = async (gc: boolean): Promise<Record<string, ProbeAnswer>> => {
    const out: Record<string, ProbeAnswer> = {};
    // One at a time: a forced GC in one process should not share the two cores with another's.
    for (const name of ["scheduler", ...names]) out[name] = await ask(name, gc);
    return out;
  };
  // What must stand still between two looks for the cluster to count as idle.
  const gist = (a: Record<string, ProbeAnswer>): string => JSON.stringify(Object.values(a).map(({ counts: c }) => [c.records, c.stored, c.clients, c.busy]));
  return {
    client: () => connectClient({ servers: server.url, cluster }),
    async waitIdle(timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      let last: Record<string, ProbeAnswer> | null = null;
      for (;;) {
        const now = await askAll(false);
        const s = now.scheduler!.counts;
        const quiet = s.records === 0 && s.clients === 0 && names.every((n) => now[n]!.counts.busy === 0);
        // Idle, and nothing moved since the last look (free-keys on their way to the workers).
        if (quiet && last !== null && gist(last) === gist(now)) return true;
        if (Date.now() > deadline) return false;
        last = now;
        await sleep(100);
      }
    },
    async counts() {
      const answers = await askAll(false);
      return Object.fromEntries(Object.entries(answers).map(([name, a]) => [name, a.counts]));
    },
    async snapshot(idle) {
      const answers = await askAll(true);
      const heapMB: Record<string, number> = {};
      const actors: SoakSnapshot["actors"] = {};
      for (const [name, a] of Object.entries(answers)) {
        actors[name] = a.counts;
        heapMB[name] = a.heapMB!;
      }
      heapMB.client = heapAfterGcMB();
      return { actors, heapMB, idle };
    },
    async close() {
      await nc.close();
      // Workers first, so none is left waiting for a scheduler that is gone.
      await Promise.all(children.slice(1).map((c) => stopProcess(c)));
      await stopProcess(children[0]!);
      await server.stop();
      if (process.env.NATSCHED_BENCH_KEEP_LOGS === "1") for (const p of logs) console.error(`    kept log: ${p}`);
      else for (const p of logs) if (existsSync(p)) unlinkSync(p);
    },
  };
}
