/**
 * Writes a large log with the embedded LocalCluster (file log on): W1-like no-op tasks,
 * 2 workers x 1 thread, in rounds of `--batch` tasks (map, gather, release, wait idle)
 * until the log holds at least `--transitions` transitions. Prints the wall time and the
 * file's size. Not part of the test suite:
 *   npx tsx bench/big-log.ts --transitions 10000000 --out /tmp/big.natlog [--batch 20000]
 */
import { statSync } from "node:fs";
import { parseArgs } from "node:util";
import { LocalCluster } from "../index.js";
import { readLogSync } from "../log/reader.js";
import { FUNCTIONS } from "./functions.js";

const { values } = parseArgs({ options: { transitions: { type: "string", default: "10000000" }, out: { type: "string" }, batch: { type: "string", default: "20000" } } });
if (values.out === undefined) throw new Error("usage: big-log.ts --transitions N --out FILE [--batch N]");
const target = Number(values.transitions);
const batch = Number(values.batch);
if (!(target > 0) || !(batch > 0)) throw new Error("--transitions and --batch take positive numbers");

const started = performance.now();
const cluster = await LocalCluster.start({ workers: 2, threadsPerWorker: 1, functions: FUNCTIONS, log: { path: values.out }, configFile: false });
const client = cluster.client();
let transitions = 0;
let tasks = 0;
let perTask = 0;
for (let round = 0; transitions < target; round++) {
  const items = Array.from({ length: batch }, (_, i) => tasks + i);
  const futures = client.map("noop", items, { pure: false });
  await client.gather(futures);
  for (const f of futures) f.release();
  while (cluster.scheduler.core.tasks.size > 0) {
    await cluster.flush();
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  tasks += batch;
  // The first round measures the transitions a task makes (the log's size says how many were written).
  if (round === 0) {
    await cluster.flush();
    perTask = countTransitionsPerTask(values.out!, batch);
  }
  transitions = tasks * perTask;
  if (round % 10 === 0) console.error(`  ${tasks} tasks, about ${transitions} transitions, ${((performance.now() - started) / 1000).toFixed(0)} s`);
}
await cluster.close();
const seconds = (performance.now() - started) / 1000;
const bytes = statSync(values.out).size;
console.log(JSON.stringify({ out: values.out, tasks, transitionsPerTask: perTask, transitions, seconds: Number(seconds.toFixed(1)), bytes, mib: Math.round(bytes / 2 ** 20) }));

function countTransitionsPerTask(path: string, n: number): number {
  let count = 0;
  for (const record of readLogSync(path).records) if (record.kind === "transition") count++;
  return count / n;
}
