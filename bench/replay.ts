/**
 * Replay speed on a large real log:
 *   npx tsx bench/replay.ts [tasks] [log-path] [repetitions]
 * Records (once; an existing log at the path is reused) a LocalCluster run of `client.map`
 * over `tasks` no-op tasks on 4 workers x 2 threads, then replays it and reports
 * transitions replayed and verified per second, against real and CPU time, next to the
 * time reading and checking the log alone takes (the floor for replay's own work).
 */
import { existsSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { LocalCluster } from "../actors/local-cluster.js";
import { replay } from "../replay/replay.js";
import { scanLogFile } from "../replay/replay-scan.js";

const TARGET = 200_000;
const tasks = Number(process.argv[2] ?? 100_000);
const path = process.argv[3] ?? join(tmpdir(), `natsched-replay-bench-${tasks}.natlog`);
const repetitions = Number(process.argv[4] ?? 3);

async function record(): Promise<void> {
  const started = performance.now();
  const cluster = await LocalCluster.start({ workers: 4, threadsPerWorker: 2, functions: { noop: (x: number) => x }, log: { path }, configFile: false });
  const client = cluster.client();
  const futures = client.map("noop", Array.from({ length: tasks }, (_, i) => i));
  await client.gather(futures);
  for (const f of futures) f.release();
  await cluster.close();
  console.log(JSON.stringify({ recorded: path, tasks, seconds: Number(((performance.now() - started) / 1000).toFixed(1)) }));
}

async function timed<T>(run: () => Promise<T>): Promise<{ value: T; real: number; cpu: number }> {
  const cpu = process.cpuUsage();
  const started = performance.now();
  const value = await run();
  const used = process.cpuUsage(cpu);
  return { value, real: (performance.now() - started) / 1000, cpu: (used.user + used.system) / 1e6 };
}

if (!existsSync(path)) await record();
console.log(JSON.stringify({ log: path, megabytes: Math.round(statSync(path).size / 1e6) }));
for (let i = 0; i < repetitions; i++) {
  const read = await timed(() => scanLogFile(path, { problem: () => undefined, record: () => true, transitionLine: () => true }));
  const { value: result, real, cpu } = await timed(() => replay(path));
  const n = result.stats.transitions;
  console.log(
    JSON.stringify({
      ok: result.ok,
      records: result.stats.records,
      transitions: n,
      realSeconds: Number(real.toFixed(2)),
      cpuSeconds: Number(cpu.toFixed(2)),
      perSecondReal: Math.round(n / real),
      perSecondCpu: Math.round(n / cpu),
      ratioToTarget: Number((n / real / TARGET).toFixed(2)),
      readingAloneCpuSeconds: Number(read.cpu.toFixed(2)),
    }),
  );
}
