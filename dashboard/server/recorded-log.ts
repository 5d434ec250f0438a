/**
 * A recorded log (a file, or a JetStream log at nats://host:port/<cluster>) as a dashboard
 * model. `openRecordedLog` answers once the log's header is read and reads the records in
 * the background, so the dashboard serves (and prints its URL) at once: meanwhile the page
 * shows how far the reading is and the task stream as it grows, or, with the dashboard's
 * cache next to a log file (open-cache.ts), the whole log's summary and task stream at once.
 *
 * With `cache` (natsched dashboard) and no cache yet, a log file is read twice: a first pass
 * folds only the summary and the task stream (what the page draws first, and what the cache
 * holds) and keeps no record, so the whole run is drawn after the cheapest read there is;
 * the second read keeps the records for the scrubber, stories, machines and what-if, as a
 * read with the cache does.
 */
import { setImmediate as turn, setTimeout as sleep } from "node:timers/promises";
import { isJetStreamLocation, openLogAt } from "../../log/jetstream-open.js";
import { indexPathOf } from "../../log/log-index-build.js";
import { LogIndex } from "../../log/log-index.js";
import type { LogReader, VisitOptions } from "../../log/reader.js";
import type { LogProblem, LogRecord } from "../../log/types.js";
import type { NatsConnectOptions } from "../../transport/nats-connect.js";
import { LIVE_INPUT_FIELDS } from "./log-follow.js";
import { DashboardModel } from "./model.js";
import { readOpeningCache, writeOpeningCache } from "./open-cache.js";

export interface RecordedLogOptions {
  connect?: Omit<NatsConnectOptions, "servers">;
  /** Read and write the dashboard's cache next to a log file, made by a first pass when missing (`natsched dashboard` does; default false). */
  cache?: boolean;
  /** The reading starts once this resolves (`natsched dashboard`: once its URL is out); default at once. */
  begin?: Promise<unknown>;
}

export interface RecordedLog {
  model: DashboardModel;
  /** Resolves once every record is in the model, with the problems the reading found. */
  loaded: Promise<readonly LogProblem[]>;
}

/**
 * What FirstFold (with log/cluster-rules.ts) and the task stream read of a transition's why:
 * the worker assigned, a steal's victim and thief, a worker's reason. An ASSIGN's why also
 * carries its rule, saturation and candidates, which the first pass need not build.
 */
const FIRST_PASS_WHY_FIELDS: ReadonlySet<string> = new Set(["worker", "victim", "thief", "reason"]);

/**
 * The first pass builds only what its folds read (FirstFold and the task stream, as the live
 * follower's: LIVE_INPUT_FIELDS, FIRST_PASS_WHY_FIELDS) and keeps no record, so its
 * transitions need no object each.
 */
const FIRST_PASS: VisitOptions = { inputFields: LIVE_INPUT_FIELDS, whyFields: FIRST_PASS_WHY_FIELDS, transientTransitions: true };

/** Reading yields to the server this often (ms), so it answers while a large log is read. */
const SLICE_MS = 20;
/**
 * With the cache, or after a first pass, the page draws the whole stream before the records
 * are read (again): the reading waits for a page to take the stream (or this long without
 * one), so the two do not share the CPU.
 */
const CACHED_WAIT_MS = 2_000;

export async function openRecordedLog(location: string, opts: RecordedLogOptions = {}): Promise<RecordedLog> {
  const reader = await openLogAt(location, opts.connect ?? {});
  const cluster = typeof reader.header.meta?.cluster === "string" ? reader.header.meta.cluster : undefined;
  const model = new DashboardModel({ kind: "log", location, live: false, ...(cluster !== undefined ? { cluster } : {}) }, reader.header.created);
  const file = !isJetStreamLocation(location);
  const opening = file && opts.cache ? await readOpeningCache(location) : undefined;
  const index = file ? await matchingIndex(location) : undefined;
  model.beginLoading(opening?.summary.records ?? index?.records, opening);
  if (index !== undefined) model.useIndex(index);
  const loaded = (async () => {
    await opts.begin;
    if (opening !== undefined) await Promise.race([model.streamServed, sleep(CACHED_WAIT_MS, undefined, { ref: false })]);
    try {
      if (file && opts.cache && opening === undefined) {
        await readAll(reader, (record) => model.addFirst(record), model, FIRST_PASS);
        const first = model.firstPassDone();
        await Promise.race([model.streamServed, sleep(CACHED_WAIT_MS, undefined, { ref: false })]);
        await writeOpeningCache(location, first);
      }
      await readAll(reader, (record) => model.add(record), model);
    } finally {
      // A failed read (a JetStream log's server gone) leaves what was read, not views waiting forever.
      model.loaded();
    }
    return reader.problems;
  })();
  // The caller awaits `loaded`; until it does, a failure must not be an unhandled rejection.
  loaded.catch(() => {});
  return { model, loaded };
}

/** Every record of `reader` to `take`, in log order, yielding to the server every SLICE_MS. */
async function readAll(reader: LogReader, take: (record: LogRecord) => void, model: DashboardModel, options?: VisitOptions): Promise<void> {
  let slice = performance.now();
  for await (const _ of reader.visit?.(take, undefined, options) ?? each(reader.records(), take)) {
    if (performance.now() - slice > SLICE_MS) {
      model.changed();
      await turn();
      slice = performance.now();
    }
  }
}

async function* each(records: AsyncIterable<LogRecord>, take: (record: LogRecord) => void): AsyncIterableIterator<void> {
  for await (const record of records) {
    take(record);
    yield;
  }
}

/** A recorded log read whole into a model. */
export async function recordedLogModel(location: string, connect: Omit<NatsConnectOptions, "servers"> = {}): Promise<{ model: DashboardModel; problems: readonly LogProblem[] }> {
  const { model, loaded } = await openRecordedLog(location, { connect });
  return { model, problems: await loaded };
}

/**
 * The log's index if it has one that matches it: how many records it has, and stories while
 * it is read. Not built when missing: building one is a read of the whole log.
 */
async function matchingIndex(path: string): Promise<LogIndex | undefined> {
  try {
    return await LogIndex.open(path, indexPathOf(path));
  } catch {
    return undefined;
  }
}
