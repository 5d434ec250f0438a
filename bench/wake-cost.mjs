/**
 * What one bare wake-up of a Node event loop costs on this machine: a timer that does
 * nothing fires every `ms` milliseconds for 5 s, and the main thread's CPU (from /proc, user
 * + system) is divided by the wake-ups. `busy` runs it while two threads spin, as W7's
 * executor threads hold both cores of a 2-core machine: each wake-up then preempts one.
 * docs/executors.md, "W7". Linux only.
 *
 *   node bench/wake-cost.mjs [idle|busy] [ms=10]
 */
import { readFileSync } from "node:fs";
import { Worker } from "node:worker_threads";

const busy = process.argv[2] === "busy";
const ms = Number(process.argv[3] ?? 10);
const SECONDS = 5;

/** This thread's CPU so far, in clock ticks (10 ms). */
function mainTicks() {
  const stat = readFileSync(`/proc/self/task/${process.pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(") ") + 2).split(" ");
  return Number(fields[11]) + Number(fields[12]);
}

const spinners = busy ? [0, 1].map(() => new Worker(`const end = Date.now() + ${(SECONDS + 1) * 1000}; while (Date.now() < end) {}`, { eval: true })) : [];
await new Promise((resolve) => setTimeout(resolve, 300));
const ticks0 = mainTicks();
let wakes = 0;
const timer = setInterval(() => wakes++, ms);
await new Promise((resolve) => setTimeout(resolve, SECONDS * 1000));
clearInterval(timer);
const cpuMs = (mainTicks() - ticks0) * 10;
console.log(JSON.stringify({ busy, intervalMs: ms, wakes, cpuMs, usPerWake: Math.round((cpuMs * 1000) / wakes) }));
for (const spinner of spinners) await spinner.terminate();
