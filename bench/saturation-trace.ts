/**
 * Why a queued run goes at the pace it does, from the logs of a run (issue 26):
 *   NATSCHED_BENCH_KEEP_LOGS=1 npm run bench -- --workload W1 --transport nats ...
 *   npx tsx bench/saturation-trace.ts <log.natlog> ...
 * Each log may hold any actors (an embedded cluster's one log holds them all). The scheduler's
 * records: how many root-ish placements each saturation limit decided, and the
 * slots, round trips and durations they used. Each worker's records: how many tasks it held when
 * each compute-task arrived, how many compute-tasks came together (one message), and the
 * time it held nothing between its first task and its last, per run (a run ends at the
 * free-keys that release it). A worker that holds 0 at every arrival and idles most of
 * the time waits for round trips; one that never idles is paced by CPU.
 */
import { readLogSync } from "../log/reader.js";
import type { InputRecord, LogRecord } from "../log/types.js";
import type { SaturationWhy } from "../machines/scheduler/saturation.js";

const quantiles = (xs: number[]): string => {
  if (xs.length === 0) return "-";
  const s = [...xs].sort((a, b) => a - b);
  const at = (p: number): number => s[Math.floor(p * (s.length - 1))]!;
  return `p10 ${at(0.1)} p50 ${at(0.5)} p90 ${at(0.9)}`;
};

const histogram = (counts: Map<number, number>): string =>
  [...counts.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([k, v]) => `${k}:${v}`)
    .join(" ");

function bump(counts: Map<number, number>, key: number): void {
  counts.set(key, (counts.get(key) ?? 0) + 1);
}

function schedulerTrace(records: readonly LogRecord[]): string[] {
  const limits = new Map<string, number>();
  const slots: number[] = [];
  const rtt: number[] = [];
  const duration: number[] = [];
  for (const r of records) {
    if (r.kind !== "transition" || r.event !== "ASSIGN") continue;
    const sat = (r.why as { saturation?: SaturationWhy } | undefined)?.saturation;
    if (sat === undefined) continue;
    limits.set(sat.limit, (limits.get(sat.limit) ?? 0) + 1);
    slots.push(sat.slots);
    if (sat.rtt !== undefined && sat.rtt >= 0) rtt.push(Math.round(sat.rtt * 1e6));
    if (sat.duration !== undefined && sat.duration >= 0) duration.push(Math.round(sat.duration * 1e6));
  }
  if (slots.length === 0) return ["scheduler: no placement with a saturation reason (not adaptive?)"];
  return [
    `scheduler: ${slots.length} placements by limit: ${[...limits.entries()].map(([k, v]) => `${k} ${v}`).join(", ")}`,
    `  slots ${quantiles(slots)}; rtt us ${quantiles(rtt)}; duration us ${quantiles(duration)}`,
  ];
}

function workerTrace(actor: string, records: readonly LogRecord[]): string[] {
  const heldAtArrival = new Map<number, number>();
  const perMessage = new Map<number, number>();
  const runs: string[] = [];
  let held = 0;
  let together = 0;
  let idleSince = -1;
  let idle = 0;
  let first = -1;
  let last = 0;
  let tasks = 0;
  for (const r of records) {
    if (r.kind !== "input") continue;
    const op = (r as InputRecord).event.op;
    if (op === "compute-task") {
      if (held === 0 && idleSince >= 0) idle += r.t - idleSince;
      idleSince = -1;
      if (first < 0) first = r.t;
      bump(heldAtArrival, held);
      held += 1;
      together += 1;
      continue;
    }
    // Compute-tasks of one message are consecutive inputs: anything else ends the run of them.
    if (together > 0) bump(perMessage, together);
    together = 0;
    if (op === "execute-done" || op === "execute-failed") {
      held = Math.max(held - 1, 0);
      tasks += 1;
      last = r.t;
      if (held === 0) idleSince = r.t;
    } else if (op === "free-keys" && first >= 0) {
      const span = last - first;
      runs.push(`${tasks} tasks in ${span.toFixed(3)} s, holding nothing ${idle.toFixed(3)} s (${span > 0 ? Math.round((100 * idle) / span) : 0}%)`);
      first = -1;
      idle = 0;
      idleSince = -1;
      tasks = 0;
    }
  }
  if (together > 0) bump(perMessage, together);
  return [`${actor}:`, ...runs.map((run) => `  run: ${run}`), `  held when a compute-task arrived: ${histogram(heldAtArrival)}`, `  compute-tasks per message: ${histogram(perMessage)}`];
}

const paths = process.argv.slice(2);
if (paths.length === 0) {
  console.error("usage: npx tsx bench/saturation-trace.ts <log.natlog> ...");
  process.exit(2);
}
const byActor = new Map<string, LogRecord[]>();
for (const path of paths) {
  for (const r of readLogSync(path).records) {
    let list = byActor.get(r.actor);
    if (list === undefined) byActor.set(r.actor, (list = []));
    list.push(r);
  }
}
const lines: string[] = [];
for (const [actor, records] of byActor) {
  if (actor === "scheduler") lines.unshift(...schedulerTrace(records));
  else if (actor.startsWith("worker.")) lines.push(...workerTrace(actor, records));
}
console.log(lines.join("\n"));
