/**
 * Replay's CPU cost on given logs, for comparing two builds on a busy machine (where wall
 * times of R1 swing 2-3x):
 *   node --import tsx bench/replay-cpu.ts <checkout> <repetitions> <log>...
 * Replays each log once untimed, then `repetitions` times on one thread with `replay()` of
 * `<checkout>`/replay/replay.ts, and prints per log the wall rates and the transitions per
 * second of this process's CPU time. Run two checkouts alternately on the same logs (keep
 * R1's with NATSCHED_BENCH_KEEP_LOGS=1) and compare the CPU rates.
 */
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";

type Replay = (log: string, options: { threads: number }) => Promise<{ ok: boolean; stats: { transitions: number } }>;

const [checkout, repsText, ...logs] = process.argv.slice(2);
if (checkout === undefined || logs.length === 0) {
  process.stderr.write("usage: node --import tsx bench/replay-cpu.ts <checkout> <repetitions> <log>...\n");
  process.exit(2);
}
const { replay } = (await import(pathToFileURL(resolve(checkout, "replay/replay.ts")).href)) as { replay: Replay };
const reps = Number(repsText);
for (const log of logs) await replay(log, { threads: 1 });
const out: Record<string, { wall: number[]; cpu: number }> = {};
for (const log of logs) {
  const wall: number[] = [];
  let cpuSeconds = 0;
  let transitions = 0;
  for (let r = 0; r < reps; r++) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    const result = await replay(log, { threads: 1 });
    const seconds = (performance.now() - t0) / 1000;
    const c = process.cpuUsage(c0);
    if (!result.ok) throw new Error(`${log}: replay did not verify the log`);
    wall.push(Math.round(result.stats.transitions / seconds));
    cpuSeconds += (c.user + c.system) / 1e6;
    transitions += result.stats.transitions;
  }
  out[log] = { wall, cpu: Math.round(transitions / cpuSeconds) };
}
console.log(JSON.stringify({ checkout, transitionsPerSecond: out }));
