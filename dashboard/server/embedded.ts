/**
 * The embedded cluster's dashboard: the records its actors write, taken from the log tap
 * every 100 ms (the cluster's own threads never wait on the dashboard), folded into a live
 * model that the server's event stream reports.
 */
import type { EmbeddedDashboard, EmbeddedDashboardOptions } from "../../actors/dashboard-hook.js";
import type { LogTap } from "../../log/log-tap.js";
import { DashboardModel } from "./model.js";
import { startDashboard } from "./server.js";

const TAKE_MS = 100;

export async function startEmbeddedDashboard(tap: LogTap, opts: EmbeddedDashboardOptions): Promise<EmbeddedDashboard> {
  const model = new DashboardModel({ kind: "embedded", location: tap.location, cluster: opts.cluster, live: true }, Date.now());
  const take = () => {
    const records = tap.take();
    if (records.length === 0) return;
    for (const record of records) model.add(record);
    model.changed();
  };
  const timer = setInterval(take, TAKE_MS);
  timer.unref();
  const dashboard = await startDashboard(model, { ...(opts.port !== undefined ? { port: opts.port } : {}), ...(opts.host !== undefined ? { host: opts.host } : {}) });
  return {
    url: dashboard.url,
    close: async () => {
      clearInterval(timer);
      take();
      await dashboard.close();
    },
  };
}
