/**
 * A dashboard serving a recorded log file for the describe block that calls this: started
 * before its tests, closed after them. `base` is its URL without the trailing slash.
 */
import { afterAll, beforeAll } from "vitest";
import { recordedLogModel } from "../../dashboard/server/recorded-log.js";
import { startDashboard, type Dashboard } from "../../dashboard/server/server.js";

export function servedLog(path: string): { readonly base: string } {
  let dashboard: Dashboard | undefined;
  let base = "";
  beforeAll(async () => {
    dashboard = await startDashboard((await recordedLogModel(path)).model);
    base = dashboard.url.replace(/\/$/, "");
  }, 60_000);
  afterAll(() => dashboard?.close());
  return {
    get base() {
      return base;
    },
  };
}
