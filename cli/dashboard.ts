import { BadOptionError } from "../machines/errors.js";
import { recordedLogModel } from "../dashboard/server/recorded-log.js";
import { startDashboard, type Dashboard } from "../dashboard/server/server.js";
import { LOG_NATS_USAGE, NATS_FLAGS, natsOptions } from "./nats-flags.js";
import { parseFlags } from "./parse-flags.js";
import type { Io } from "./run.js";

export const DASHBOARD_USAGE = `usage: natsched dashboard <log | nats://host:port/<cluster>> [--port <n>] [--host <addr>]
  a dashboard in the browser over a recorded log (a file, or a cluster's log in JetStream):
  the task stream, progress per task prefix, the workers, a time scrubber that shows the
  whole cluster at any record, and the story of any task clicked. Read-only.
  --port <n>       port to listen on (default 0: a free one); the URL is printed
  --host <addr>    address to bind (default 127.0.0.1: this machine only)
${LOG_NATS_USAGE}`;

/** `natsched dashboard`: serves until interrupted (Ctrl-C). */
export async function dashboardCommand(args: string[], io: Io, stopped: Promise<unknown> = interrupted()): Promise<number> {
  let parsed;
  let port: number;
  try {
    parsed = parseFlags(args, { ...NATS_FLAGS, port: { type: "string" }, host: { type: "string" } }, true);
    if (parsed.positionals.length !== 1) throw new BadOptionError("arguments", "give one log: a file or nats://host:port/<cluster>");
    port = parsePort(parsed.values.port);
  } catch (error) {
    if (!(error instanceof BadOptionError)) throw error;
    io.err(`natsched dashboard: ${error.message}\n\n${DASHBOARD_USAGE}`);
    return 2;
  }
  const location = parsed.positionals[0]!;
  const { model, problems } = await recordedLogModel(location, natsOptions(parsed.values));
  for (const problem of problems) io.err(`log problem: ${problem.message}`);
  const dashboard: Dashboard = await startDashboard(model, { port, ...(parsed.values.host !== undefined ? { host: parsed.values.host } : {}) });
  io.out(`natsched dashboard: ${dashboard.url} (${model.size} records of ${location}; Ctrl-C stops it)`);
  await stopped;
  await dashboard.close();
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
