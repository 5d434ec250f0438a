import { stat } from "node:fs/promises";
import { getHeapStatistics } from "node:v8";
import { isJetStreamLocation } from "../log/jetstream-open.js";
import { BadOptionError } from "../machines/errors.js";
import { followNatsCluster } from "../dashboard/server/nats-live.js";
import type { DashboardModel } from "../dashboard/server/model.js";
import { openRecordedLog } from "../dashboard/server/recorded-log.js";
import { startDashboard, type Dashboard } from "../dashboard/server/server.js";
import { clusterName, NATS_FLAGS, NATS_FLAGS_USAGE, natsOptions } from "./nats-flags.js";
import { parseFlags } from "./parse-flags.js";
import type { Io } from "./run.js";

export const DASHBOARD_USAGE = `usage: natsched dashboard <log | nats://host:port/<cluster>> [--port <n>] [--host <addr>]
       natsched dashboard --nats <url> --cluster <name> [--port <n>] [--host <addr>]
  a dashboard in the browser: the task stream, progress per task prefix, the workers, and
  the story of any task clicked. Read-only.
  Over a recorded log (a file, or a cluster's log in JetStream), a time scrubber shows the
  whole cluster at any record. With --nats and no log, it follows a live cluster on NATS as
  its actors write their log to JetStream (natsched scheduler/worker --log jetstream).
  --port <n>       port to listen on (default 0: a free one); the URL is printed
  --host <addr>    address to bind (default 127.0.0.1: this machine only)
${NATS_FLAGS_USAGE}`;

/** A log file over this size may not fit the heap once read: said when it opens. */
const LARGE_LOG_BYTES = 1.5 * 2 ** 30;

/** `natsched dashboard`: serves until interrupted (Ctrl-C). */
export async function dashboardCommand(args: string[], io: Io, stopped: Promise<unknown> = interrupted()): Promise<number> {
  let parsed;
  let port: number;
  try {
    parsed = parseFlags(args, { ...NATS_FLAGS, port: { type: "string" }, host: { type: "string" } }, true);
    const live = parsed.positionals.length === 0 && parsed.values.nats !== undefined;
    if (parsed.positionals.length !== 1 && !live) throw new BadOptionError("arguments", "give one log (a file or nats://host:port/<cluster>), or --nats <url> --cluster <name> for a live cluster");
    port = parsePort(parsed.values.port);
  } catch (error) {
    if (!(error instanceof BadOptionError)) throw error;
    io.err(`natsched dashboard: ${error.message}\n\n${DASHBOARD_USAGE}`);
    return 2;
  }
  const location = parsed.positionals[0];
  let model: DashboardModel;
  let stop = async () => {};
  let urlOut = () => {};
  if (location === undefined) {
    const cluster = clusterName(parsed.values);
    const live = await followNatsCluster(cluster, natsOptions(parsed.values));
    model = live.model;
    stop = live.stop;
  } else {
    const { servers: _servers, ...connect } = natsOptions(parsed.values);
    // Served at once: the log is read in the background (the page shows how far), its
    // opening view cached next to a log file so the next open draws it before reading.
    const recorded = await openRecordedLog(location, { connect, cache: true, begin: new Promise<void>((resolve) => (urlOut = resolve)) });
    const size = isJetStreamLocation(location) ? 0 : (await stat(location)).size;
    if (size > LARGE_LOG_BYTES) {
      io.err(`natsched dashboard: ${location} is ${(size / 2 ** 30).toFixed(1)} GiB: the scrubber, stories, machines and what-if need its records in memory (about 1.7 times its size; node's heap takes ${Math.round(getHeapStatistics().heap_size_limit / 2 ** 30)} GiB unless NODE_OPTIONS=--max-old-space-size=<MiB> says more)`);
    }
    model = recorded.model;
    void recorded.loaded.then(
      (problems) => {
        for (const problem of problems) io.err(`log problem: ${problem.message}`);
      },
      (error: unknown) => io.err(`natsched dashboard: reading ${location} failed: ${(error as Error)?.message ?? error}`),
    );
  }
  const dashboard: Dashboard = await startDashboard(model, { port, ...(parsed.values.host !== undefined ? { host: parsed.values.host } : {}) });
  const what = location === undefined ? `live cluster ${model.source.cluster} at ${model.source.location}` : `${location}, read in the background`;
  io.out(`natsched dashboard: ${dashboard.url} (${what}; Ctrl-C stops it)`);
  urlOut();
  await stopped;
  await dashboard.close();
  await stop();
  return 0;
}

function parsePort(text: string | undefined): number {
  if (text === undefined) return 0;
  if (!/^\d+$/.test(text) || Number(text) > 65535) throw new BadOptionError("--port", `a port is 0..65535, got "${text}"`);
  return Number(text);
}

function interrupted(): Promise<unknown> {
  return new Promise((resolve) => {
    process.once("SIGINT", resolve);
    process.once("SIGTERM", resolve);
  });
}
