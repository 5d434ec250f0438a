/**
 * W1 over NATS: N no-op tasks (`client.map("noop", range(N), { pure: false })`, then gather)
 * on a scheduler process and 2 worker processes x 1 thread, on a nats-server of its own.
 *
 *   node --import tsx tests/support/nats-w1-bench.ts [N=10000] [reps=3]
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connectClient } from "../../index.js";
import { NatsServer } from "./nats-server.js";
import { NatschedProcess } from "./natsched-process.js";

const n = Number(process.argv[2] ?? 10_000);
const reps = Number(process.argv[3] ?? 3);
const dir = mkdtempSync(join(tmpdir(), "natsched-w1-"));
const functions = join(dir, "tasks.mjs");
writeFileSync(functions, "export const noop = (x) => x;\n");
const server = await NatsServer.start();
const common = ["--nats", server.url, "--cluster", "w1"];
const scheduler = NatschedProcess.spawn("scheduler", ["scheduler", ...common, "--no-log"]);
await scheduler.waitFor(/natsched scheduler: cluster/);
const workers = ["a", "b"].map((name) => NatschedProcess.spawn(name, ["worker", ...common, "--name", name, "--nthreads", "1", "--functions", functions]));
await Promise.all(workers.map((w) => w.waitFor(/registered/)));
const client = await connectClient({ servers: server.url, cluster: "w1" });
try {
  const items = Array.from({ length: n }, (_, i) => i);
  const once = async (count: number) => {
    const t0 = performance.now();
    const futures = client.map("noop", items.slice(0, count), { pure: false });
    const results = await client.gather(futures);
    const wall = (performance.now() - t0) / 1000;
    if (results.length !== count || results[count - 1] !== count - 1) throw new Error("W1: wrong results");
    for (const f of futures) f.release();
    return wall;
  };
  await once(Math.min(1000, n));
  for (let r = 0; r < reps; r++) {
    const wall = await once(n);
    console.log(`W1 over NATS: ${n} no-op tasks, 2 worker processes x 1 thread: ${wall.toFixed(3)} s, ${Math.round(n / wall)} tasks/s`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
} finally {
  await client.close();
  await Promise.all([...workers, scheduler].map((p) => p.stop()));
  await server.dispose();
  rmSync(dir, { recursive: true, force: true });
}
