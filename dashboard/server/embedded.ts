/**
 * The embedded cluster's dashboard. With a binary log file (LocalCluster's default) it runs
 * on a thread of its own that follows the file (embedded-thread.ts): the cluster's thread
 * pays nothing for it. Without one (`log: false`, a sink of the user's, JSON lines) it takes
 * the records from the cluster's log tap every 100 ms on the cluster's thread.
 */
import { Worker } from "node:worker_threads";
import type { DashboardSource, EmbeddedDashboard, EmbeddedDashboardOptions } from "../../actors/dashboard-hook.js";
import type { LogTap } from "../../log/log-tap.js";
import { DashboardModel } from "./model.js";
import { startDashboard } from "./server.js";
import { threadSource } from "../../log/thread-source.js";

const TAKE_MS = 100;

export async function startEmbeddedDashboard(source: DashboardSource, opts: EmbeddedDashboardOptions): Promise<EmbeddedDashboard> {
  return "tap" in source ? tapDashboard(source.tap, opts) : threadDashboard(source.logFile, opts);
}

async function tapDashboard(tap: LogTap, opts: EmbeddedDashboardOptions): Promise<EmbeddedDashboard> {
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

async function threadDashboard(logFile: string, opts: EmbeddedDashboardOptions): Promise<EmbeddedDashboard> {
  const thread = new Worker(threadSource(import.meta.url, "embedded-thread"), { eval: true, name: "natsched dashboard", workerData: { path: logFile, ...opts } });
  thread.unref();
  const started = await new Promise<{ url?: string; error?: string }>((resolve) => {
    thread.once("message", resolve);
    thread.once("error", (error) => resolve({ error: error.message }));
  });
  if (started.url === undefined) {
    await thread.terminate();
    throw new Error(`the dashboard did not start: ${started.error ?? "its thread stopped"}`);
  }
  return {
    url: started.url,
    close: async () => {
      const closed = new Promise<void>((resolve) => {
        thread.once("message", () => resolve());
        thread.once("exit", () => resolve());
      });
      thread.postMessage("close");
      await closed;
      await thread.terminate();
    },
  };
}

