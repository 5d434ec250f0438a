/**
 * The embedded cluster's dashboard on a thread of its own: it follows the cluster's log file
 * as the log writer appends to it, folds the records and serves the page, so the cluster's
 * thread does nothing for it. It keeps no records: the views that read them whole read
 * them again from the file (log-window.ts). workerData: { path, cluster, port?, host? }; posts { url } or
 * { error }; on "close" reads the log's last records, stops serving and posts "closed".
 */
import { parentPort, workerData } from "node:worker_threads";
import { LogFollower } from "./log-follow.js";
import { DashboardModel, LIVE_RECORDS } from "./model.js";
import { startDashboard } from "./server.js";
import { DASHBOARD_NICE, lowerThreadPriority } from "./thread-priority.js";

const FOLLOW_MS = 100;

interface Start {
  path: string;
  cluster: string;
  port?: number;
  host?: string;
}

const start = workerData as Start;
const port = parentPort!;

async function main(): Promise<void> {
  lowerThreadPriority(DASHBOARD_NICE);
  const follower = await LogFollower.open(start.path, LIVE_RECORDS);
  if (follower === undefined) throw new Error(`${start.path} is not a binary log`);
  const model = new DashboardModel({ kind: "embedded", location: start.path, cluster: start.cluster, live: true }, follower.created);
  // The records stay in the file: the views that read them whole read them from there.
  const window = follower.window;
  model.readFrom({ kept: () => window.kept(follower.end()), machines: () => window.machines(follower.end()) });
  let reading = Promise.resolve();
  const follow = () =>
    (reading = reading.then(async () => {
      if ((await follower.read((record) => model.add(record))) > 0) model.changed();
    }));
  const timer = setInterval(() => void follow(), FOLLOW_MS);
  const dashboard = await startDashboard(model, { ...(start.port !== undefined ? { port: start.port } : {}), ...(start.host !== undefined ? { host: start.host } : {}) });
  port.on("message", (message) => {
    if (message !== "close") return;
    clearInterval(timer);
    void follow()
      .then(() => dashboard.close())
      .then(() => follower.close())
      .finally(() => port.postMessage("closed"));
  });
  port.postMessage({ url: dashboard.url });
}

main().catch((error: unknown) => port.postMessage({ error: (error as Error)?.message ?? String(error) }));
