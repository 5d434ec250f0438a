/**
 * Times `natsched export --around` the middle of a log (its middle record's time, or with
 * --key a task key from its middle) through the log's index, the slice's share of the log,
 * and a replay of the slice:
 *   npx tsx bench/slice.ts /tmp/big.natlog [--key]
 */
import { statSync } from "node:fs";
import { LogIndex } from "../log/log-index.js";
import { replay } from "../replay/replay.js";
import { exportSlice } from "../tools/export.js";

const path = process.argv[2];
if (path === undefined) throw new Error("usage: slice.ts <log> [--key]");
const byKey = process.argv.includes("--key");
const index = await LogIndex.open(path);
const middle = await index.blockRecords(Math.floor(index.blockCount / 2));
await index.close();
const task = middle.find((r) => r.kind === "transition" && r.machine === "task");
const around = byKey && task?.kind === "transition" ? task.id : String(middle[0]!.t);
const out = `${path}.slice.natlog`;
let t0 = performance.now();
const report = await exportSlice(path, around, out, { note: (message) => console.error(message) });
const exportSeconds = (performance.now() - t0) / 1000;
const bytes = statSync(out).size;
t0 = performance.now();
const replayed = await replay(out);
console.log(
  JSON.stringify({
    around,
    exportSeconds: Number(exportSeconds.toFixed(1)),
    start: report.start,
    fromSnapshot: report.fromSnapshot,
    records: report.records,
    recordShare: Number((report.records / report.totalRecords).toFixed(4)),
    bytes,
    byteShare: Number((bytes / statSync(path).size).toFixed(4)),
    replayOk: replayed.ok,
    replayProblems: replayed.problems.length,
    replayedTransitions: replayed.stats.transitions,
    replaySeconds: Number(((performance.now() - t0) / 1000).toFixed(1)),
  }),
);
