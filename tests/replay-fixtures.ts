/** Logs of real embedded runs, and ways to damage them, for the replay tests. */
import { readFileSync, writeFileSync } from "node:fs";
import { LocalCluster } from "../actors/local-cluster.js";
import { decodeRecordLine, encodeRecordLine } from "../log/codec.js";
import type { LogFileFormat } from "../log/file-log.js";
import type { LogRecord, LogSink, TransitionRecord } from "../log/types.js";

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export const functions = {
  inc: (x: number) => x + 1,
  slow: async (x: number) => {
    await sleep(2);
    return x;
  },
  boom: () => {
    throw new Error("boom");
  },
};

export interface RunLog {
  /** A task that raised, and one that depends on it. */
  bad: string;
  after: string;
  /** The scattered key, and the task computed from it. */
  scattered: string;
  fromScattered: string;
  killed: string;
}

/**
 * A run with everything replay must get right: tasks with dependencies and transfers, an
 * erred task and its dependent, a worker killed while busy, scattered data, futures
 * released while the cluster still runs, then a clean close.
 */
export async function recordRun(log: { path: string; format?: LogFileFormat } | LogSink): Promise<RunLog> {
  const cluster = await LocalCluster.start({ workers: 3, threadsPerWorker: 2, functions, log, configFile: false });
  const client = cluster.client();
  const xs = client.map<number>("slow", Array.from({ length: 12 }, (_, i) => i));
  const ys = xs.map((x) => client.submit<number>("inc", [x]));
  const bad = client.submit("boom", []);
  const after = client.submit("inc", [bad]);
  await xs[2]!.wait();
  cluster.killWorker("worker-1");
  const values = await client.gather(ys);
  if (values.join() !== Array.from({ length: 12 }, (_, i) => i + 1).join()) throw new Error(`wrong results ${values.join()}`);
  await after.wait().catch(() => undefined);
  const [scattered] = await client.scatter([41], { workers: ["worker-2"] });
  const fromScattered = client.submit<number>("inc", [scattered]);
  if ((await fromScattered.result()) !== 42) throw new Error("scatter went wrong");
  for (const f of xs) f.release();
  await cluster.flush();
  await cluster.close();
  return { bad: bad.key, after: after.key, scattered: scattered!.key, fromScattered: fromScattered.key, killed: "worker-1" };
}

/** The log file's lines: the header and one string per record line, without newlines. */
export function logLines(path: string): string[] {
  const text = readFileSync(path, "utf8");
  if (!text.endsWith("\n")) throw new Error("log does not end with a newline");
  return text.slice(0, -1).split("\n");
}

export function writeLines(path: string, lines: string[]): void {
  writeFileSync(path, lines.join("\n") + "\n");
}

/** The record on a line (after the header), which must be valid. */
export function recordOf(line: string): LogRecord {
  const decoded = decodeRecordLine(line);
  if (!decoded.ok) throw new Error(decoded.message);
  return decoded.record;
}

/** A record line with a correct checksum: what a writer of this record would have written. */
export function lineOf(record: LogRecord): string {
  return encodeRecordLine(record).slice(0, -1);
}

/** Index in `lines` of the first record line satisfying `match`. */
export function findLine(lines: string[], match: (record: LogRecord) => boolean): number {
  const index = lines.findIndex((line, i) => i > 0 && match(recordOf(line)));
  if (index < 0) throw new Error("no such record in the log");
  return index;
}

export const isTransition = (r: LogRecord): r is TransitionRecord => r.kind === "transition";

/** The input of `actor` that `seq` (a transition) belongs to: its last input before it. */
export function causeOf(records: LogRecord[], actor: string, seq: number): LogRecord {
  const before = records.filter((r) => r.actor === actor && r.seq < seq && (r.kind === "input" || r.kind === "start"));
  return before[before.length - 1]!;
}
