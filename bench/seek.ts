/**
 * Times `natsched inspect` (the per-worker view) of the middle of a log and `natsched story` of a few keys through
 * the log's index (built beforehand: natsched log index <log>), in this process, and prints
 * the heap used. Run with the heap the target names:
 *   node --max-old-space-size=256 --import tsx bench/seek.ts /tmp/big.natlog
 */
import { getHeapStatistics } from "node:v8";
import { runCli } from "../cli/run.js";
import { LogIndex } from "../log/log-index.js";

const path = process.argv[2];
if (path === undefined) throw new Error("usage: seek.ts <log>");
const index = await LogIndex.open(path);
const middle = Math.floor(index.records / 2);
// Keys from three places in the log: its first quarter, its middle, its last quarter.
const keys: string[] = [];
for (const at of [0.25, 0.5, 0.75]) {
  const record = (await index.blockRecords(Math.floor(index.blockCount * at))).find((r) => r.kind === "transition" && r.machine === "task");
  if (record?.kind === "transition") keys.push(record.id);
}
// Cuts name records (actor:seq, the cut replay --until takes) or times, not positions: the middle record, its time, and the
// slowest, the record just before a snapshot (the most records to fold forward from the one before).
const cutAt = async (position: number): Promise<string> => {
  const record = (await index.recordAt(position))!;
  return `${record.actor}:${record.seq}`;
};
const middleCut = await cutAt(middle);
const middleTime = `+${((await index.recordAt(middle))!.t - (index.firstT ?? 0)).toFixed(6)}`;
const worstCut = await cutAt((index.snapshotPositions.find((p) => p > middle) ?? index.records) - 1);
await index.close();
const quiet = { out: () => {}, err: (text: string) => console.error(text) };
const time = async (what: string, argv: string[]): Promise<void> => {
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  const code = await runCli(argv, quiet);
  const cpu = process.cpuUsage(cpu0);
  // CPU seconds too: on a shared machine the wall time says as much about the others' load.
  console.log(JSON.stringify({ what, exit: code, seconds: Number(((performance.now() - t0) / 1000).toFixed(3)), cpuSeconds: Number(((cpu.user + cpu.system) / 1e6).toFixed(3)), heapUsedMiB: Math.round(getHeapStatistics().used_heap_size / 2 ** 20) }));
};
await time(`inspect --at ${middleCut} (the middle record)`, ["inspect", path, "--at", middleCut]);
await time(`inspect --at ${middleTime} (its time)`, ["inspect", path, "--at", middleTime]);
await time(`inspect --at ${middleCut} --key ${keys[1]}`, ["inspect", path, "--at", middleCut, "--key", keys[1]!]);
await time(`inspect --at ${worstCut} (just before a snapshot)`, ["inspect", path, "--at", worstCut]);
for (const key of keys) await time(`story ${key}`, ["story", path, key]);
console.log(JSON.stringify({ heapLimitMiB: Math.round(getHeapStatistics().heap_size_limit / 2 ** 20) }));
